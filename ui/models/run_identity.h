// How a run is told apart wherever it is shown (legends, charts, table columns, pickers): one name and one
// colour, given by the run history for the run's life there.
#pragma once

#include <QColor>
#include <QString>

namespace mnv2::ui {

struct RunIdentity {
  QString name;   // "run 3 · cpu fp32 · b2 · 160×160": the run history's name, then what the run was
  QColor colour;  // the run's own, the same on every page
};

}  // namespace mnv2::ui
