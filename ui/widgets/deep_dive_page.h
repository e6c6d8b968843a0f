// The Deep dive page: Nsight Compute on the selected layer's step, for one run or a comparison's two side by side
// (DeepDiveModel), run by DeepDiveJob with ncu's lines as progress and a Cancel. The page shows only what the
// engine's deep-dive study produced, and a dive that could not run says why in one line.
#pragma once

#include <QWidget>
#include <vector>

#include "deep_dive_job.h"
#include "models/deep_dive_model.h"

class QLabel;
class QPushButton;
class QTableView;

namespace mnv2::ui {

class LayerSelection;
class ReportCatalog;

class DeepDivePage : public QWidget {
  Q_OBJECT
 public:
  DeepDivePage(ReportCatalog* catalog, LayerSelection* selection, QWidget* parent = nullptr);

  // Dives into the selected layer of these runs (rows of the catalog; at most two are taken), one after the other.
  // `ncu`: the Nsight Compute program. False, with message() saying why, when nothing can start.
  bool diveInto(const std::vector<int>& rows, const QString& ncu = QStringLiteral("ncu"));
  void cancel();
  bool isRunning() const { return m_job->isRunning(); }

  DeepDiveModel* model() const { return m_model; }
  QTableView* view() const { return m_view; }
  QString message() const;   // the line above the table: what runs, or why nothing does
  QString progress() const;  // ncu's last line

 Q_SIGNALS:
  void diveFinished();

 private:
  void updateButtons();

  ReportCatalog* m_catalog;
  LayerSelection* m_selection;
  DeepDiveJob* m_job;
  DeepDiveModel* m_model;
  QTableView* m_view;
  QLabel* m_message;
  QLabel* m_progress;
  QPushButton* m_start;
  QPushButton* m_cancel;
};

}  // namespace mnv2::ui
