// The Roofline page: every profiled step of the shown run on a log-log roofline (arithmetic intensity
// against achieved GFLOP/s) under the device's measured ceilings, coloured by layer kind; the memory each
// layer needs and the backend held; and the Nsight Compute command for the selected layer.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "mnv2/roofline.h"
#include "models/report_access.h"
#include "models/run_identity.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QMouseEvent;
class QPushButton;
class QTableWidget;

namespace mnv2::ui {

class LayerSelection;

class RooflinePage : public QWidget {
  Q_OBJECT
 public:
  explicit RooflinePage(LayerSelection* selection, QWidget* parent = nullptr);

  void setReport(ReportPtr report) { setReports({std::move(report)}); }
  // The shown runs; a list above the chart picks one (the first at first).
  // The runs the picker offers, each under its name (RunIdentity, one per report; else its label).
  void setReports(std::vector<ReportPtr> reports, std::vector<RunIdentity> identities = {});
  bool selectRun(int index);
  // Ceilings measured for the report's device; nullopt: points only, with the reason shown.
  void setCeilings(std::optional<mnv2::Ceilings> ceilings, const QString& note = {});
  // Whether the next run should measure (or read cached) ceilings.
  bool measureCeilings() const;  // asked for, and not refused (below)
  void setMeasureCeilings(bool on);
  // "" when ceilings are measured here; else why not (a remote target is chosen to run on): the check box is
  // disabled with the reason as its tool-tip, and measureCeilings() is false.
  void setRemoteRefusal(const QString& reason);

  QString ncuCommand() const;  // for the selected layer; empty when there is none
  int pointCount() const { return static_cast<int>(m_points.size()); }
  // The run shown, its points and the ceilings drawn (nullopt when none are of its device): what the roofline
  // export writes.
  ReportPtr report() const { return m_report; }
  const std::vector<mnv2::RooflinePoint>& points() const { return m_points; }
  std::optional<mnv2::Ceilings> shownCeilings() const { return m_roofShown ? m_ceilings : std::nullopt; }

 private:
  void rebuild();
  void showLayer(int layer);
  void onMouseMove(QMouseEvent* event);

  LayerSelection* m_selection;
  std::vector<ReportPtr> m_reports;
  ReportPtr m_report;
  QComboBox* m_runs = nullptr;
  std::optional<mnv2::Ceilings> m_ceilings;
  bool m_roofShown = false;  // the ceilings are of the shown run's device
  QString m_ceilingsNote;
  std::vector<mnv2::RooflinePoint> m_points;
  QCustomPlot* m_plot = nullptr;
  QLabel* m_summary = nullptr;
  QCheckBox* m_measure = nullptr;
  QString m_measureTip;  // the check box's own tool-tip
  QString m_remoteRefusal;
  QTableWidget* m_memory = nullptr;
  QLabel* m_memoryHeld = nullptr;
  QLineEdit* m_ncu = nullptr;
  QPushButton* m_copy = nullptr;
};

}  // namespace mnv2::ui
