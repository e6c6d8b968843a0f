// The diffs tab: per-layer output error of one backend against a reference, as a rel-L2 chart on a log
// scale and a table (max abs, rel L2, cosine); the first layer over the threshold is highlighted and the
// top-5 agreement is stated. Diffs come from compare runs, from opened reports, or are computed here for
// two chosen backends.
#pragma once

#include <QWidget>
#include <vector>

#include "models/report_access.h"
#include "run_types.h"

class QComboBox;
class QCustomPlot;
class QCPGraph;
class QLabel;
class QPushButton;
class QTableView;

namespace mnv2::ui {

class DiffTableModel;
class LayerSelection;

class DiffsPage : public QWidget {
  Q_OBJECT
 public:
  explicit DiffsPage(LayerSelection* selection, QWidget* parent = nullptr);

  struct Source {
    QString label;
    QString origin;  // "run" for the current run, "computed", or a report file path
    DiffPtr diff;
    std::vector<mnv2::Layer> topology;
    int numClasses = 0;
    mnv2::Precision precision = mnv2::Precision::fp32;           // what the backend under test ran
    mnv2::Precision referencePrecision = mnv2::Precision::fp32;  // what the reference ran
  };
  // Replaces the sources of one origin; shows the first new one when `show`.
  void setSources(const QString& origin, std::vector<Source> sources, bool show);
  void setBackends(const std::vector<BackendStatus>& backends);
  void setComputing(bool computing);
  // "" when this page's jobs run here; else why they do not (a remote target is chosen to run on): the page's job
  // button is disabled with the reason as its tool-tip.
  void setRemoteRefusal(const QString& reason);

  DiffPtr currentDiff() const;
  int sourceCount() const { return static_cast<int>(m_sources.size()); }
  DiffTableModel* model() const { return m_model; }
  QCustomPlot* plot() const { return m_plot; }
  QString summaryText() const;

 Q_SIGNALS:
  void computeRequested(const QString& backend, const QString& reference);  // in the run settings' precision
  void currentDiffChanged(mnv2::ui::DiffPtr diff);

 private:
  void showSource(int index);
  void rebuildPlot();
  void highlight(int layer);

  LayerSelection* m_selection;
  std::vector<Source> m_sources;
  QComboBox* m_source;
  QComboBox* m_backend;
  QComboBox* m_reference;
  QPushButton* m_compute;
  QString m_computeTip;  // the button's own tool-tip, shown again when the refusal goes
  QString m_remoteRefusal;
  bool m_computing = false;
  QLabel* m_summary;
  QCustomPlot* m_plot;
  QCPGraph* m_graph = nullptr;
  QCPGraph* m_marker = nullptr;
  DiffTableModel* m_model;
  QTableView* m_view;
};

}  // namespace mnv2::ui
