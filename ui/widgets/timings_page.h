// The timings tab: per-layer median times as bars (grouped bars, one colour per run, when several runs
// are shown), log-scale toggle, zoom and pan, statistics and kernel names on hover, click to select a
// layer; below, the totals per layer kind or per block as a chart and a table.
#pragma once

#include <QWidget>
#include <vector>

#include "models/report_access.h"
#include "models/run_identity.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPBars;
class QCPBarsGroup;
class QLabel;
class QMouseEvent;
class QTableView;

namespace mnv2::ui {

class LayerSelection;
class TotalsModel;

class TimingsPage : public QWidget {
  Q_OBJECT
 public:
  explicit TimingsPage(LayerSelection* selection, QWidget* parent = nullptr);

  // Shows these runs side by side (every report must have the same topology as the first), each under its
  // identity (one per report: name and colour); without identities, under its label and backend's colour.
  void setReports(std::vector<ReportPtr> reports, const QString& title, std::vector<RunIdentity> identities = {});
  const std::vector<ReportPtr>& reports() const { return m_reports; }
  // The title as given (rich text, lines split by <br>); the page shows its first lines and the whole in a tool-tip.
  const QString& title() const { return m_fullTitle; }

  void setLogScale(bool log);
  bool logScale() const;
  void resetView();

  QCustomPlot* plot() const { return m_plot; }
  QCustomPlot* totalsPlot() const { return m_totalsPlot; }
  TotalsModel* totalsModel() const { return m_totals; }
  int seriesCount() const { return static_cast<int>(m_bars.size()); }
  int barCount() const;  // bars over all series
  // The layer whose bar (of any series) is under a widget position of the plot; -1 if none.
  int layerAt(const QPoint& pos, int* series = nullptr) const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setTitle(const QString& title);
  void rebuildPlot();
  void rebuildTotals();
  // The legend in as many columns as the plot's width holds and as many rows as a sixth of its height (at most
  // three); the runs past those are counted in a last entry (the title's tool-tip names every one).
  void layoutLegend();
  void highlight(int layer);
  void onMouseMove(QMouseEvent* event);

  LayerSelection* m_selection;
  std::vector<ReportPtr> m_reports;
  std::vector<RunIdentity> m_identities;  // one per report
  std::vector<QCPBars*> m_bars;
  QCPBarsGroup* m_group = nullptr;
  QLabel* m_title;
  QString m_fullTitle;
  QCheckBox* m_log;
  QCustomPlot* m_plot;
  QComboBox* m_grouping;
  QCustomPlot* m_totalsPlot;
  TotalsModel* m_totals;
  QTableView* m_totalsView;
};

}  // namespace mnv2::ui
