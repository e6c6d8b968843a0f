// The timeline tab: one shown run's timeline iteration at its own timestamps, as the engine lays it out
// (mnv2/timeline.h): a lane per track (GPU stream, host, worker thread) with the layer spans and, nested in
// them, the kernels and copies; and the median summary lane. Hover for name, start, duration and launch
// dimensions; the wheel zooms and a drag pans the time axis only.
#pragma once

#include <QStringList>
#include <QWidget>
#include <vector>

#include "mnv2/timeline.h"
#include "models/report_access.h"
#include "models/run_identity.h"

class QComboBox;
class QCPItemText;
class QCustomPlot;
class QLabel;
class QMouseEvent;

namespace mnv2::ui {

class TimelinePage : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePage(QWidget* parent = nullptr);

  // The runs the combo offers; the first is shown.
  // Each run under its identity (one per report: name and colour) when given, else its label and settings.
  void setReports(std::vector<ReportPtr> reports, const std::vector<RunIdentity>& identities = {});
  void showRun(int index);
  void resetView();

  QCustomPlot* plot() const { return m_plot; }
  QComboBox* runCombo() const { return m_run; }
  int laneCount() const { return static_cast<int>(m_layout.tracks.size()); }
  int barCount() const { return static_cast<int>(m_bars.size()); }
  // Layer names drawn on the bars wide enough to hold them at the current zoom.
  QStringList visibleLabels() const;
  QString message() const;  // what the page says about the shown run (no timeline, which iteration)
  // The tool tip text of the bar under a widget position of the plot; empty if none.
  QString toolTipAt(const QPoint& pos) const;

 private:
  struct ShownBar {
    int lane = 0;
    const mnv2::TimelineBar* bar = nullptr;  // into m_layout
  };
  struct Label {
    QCPItemText* text = nullptr;
    const mnv2::TimelineBar* bar = nullptr;
  };
  void rebuild();
  void updateLabels();
  void onMouseMove(QMouseEvent* event);

  std::vector<ReportPtr> m_reports;
  int m_index = -1;
  mnv2::TimelineLayout m_layout;
  std::vector<ShownBar> m_bars;
  std::vector<Label> m_labels;
  double m_unitNs = 1e3;  // nanoseconds per unit of the time axis (µs or ms)
  QComboBox* m_run;
  QLabel* m_message;
  QCustomPlot* m_plot;
};

}  // namespace mnv2::ui
