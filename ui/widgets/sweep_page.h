// The Sweep page: end-to-end latency and throughput over lists of batch sizes and input sizes, per
// backend, as QCustomPlot line charts (the engine's run_sweep, as `mnv2 bench` runs it).
#pragma once

#include <QString>
#include <QWidget>
#include <optional>
#include <utility>
#include <vector>

#include "mnv2/sweep.h"
#include "run_types.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QPointF;

namespace mnv2::ui {

class PrecisionCombo;

class SweepPage : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPage(QWidget* parent = nullptr);

  // The fields as a sweep, or the reason they are not one (shown under the fields).
  std::optional<mnv2::SweepConfig> config(QString* error = nullptr) const;
  void setFields(const QString& backends, const QString& sizes, const QString& batches);
  // The probed backends: the precision choice offers the modes every listed backend runs.
  void setBackends(const std::vector<BackendStatus>& backends);
  bool setPrecision(mnv2::Precision precision);  // false when a listed backend does not run it
  // A sweep's results: they replace the previous sweep's (saved results stay).
  void setResults(std::vector<mnv2::BenchResult> results);
  // Results read from a saved mnv2.bench/1 file (File > Open report: ours, or the PyTorch anchor's), shown
  // beside the sweep's in the table and the charts (one line per backend and precision, as any result), until
  // clearSavedResults(). `source` names the file in the status line; the same source again replaces its results.
  void addSavedResults(std::vector<mnv2::BenchResult> results, const QString& source);
  void clearSavedResults();
  int savedCount() const;
  // Everything shown: the sweep's results, then the saved ones (what the sweep exports write).
  const std::vector<mnv2::BenchResult>& results() const { return m_results; }
  void setRunning(bool running);
  // "" when this page's jobs run here; else why they do not (a remote target is chosen to run on): the page's job
  // button is disabled with the reason as its tool-tip.
  void setRemoteRefusal(const QString& reason);
  QString remoteRefusal() const { return m_remoteRefusal; }
  // X axis: batch size (a line per backend and input size) or input pixels (a line per backend and batch).
  void setXAxis(bool inputSize);
  int lineCount() const;
  QCustomPlot* latencyPlot() const { return m_latency; }
  QCustomPlot* throughputPlot() const { return m_throughput; }
  QTableWidget* table() const { return m_table; }  // every point's figures
  // The tool-tip for the point of `plot` nearest `pos` (widget pixels, within 8 px), empty when none.
  QString toolTipAt(QCustomPlot* plot, const QPointF& pos) const;
  QString emptyText(QCustomPlot* plot) const;  // the message shown instead of axes before a sweep

 Q_SIGNALS:
  void sweepRequested(const mnv2::SweepConfig& config);
  void exportRequested();  // the page's Export button: the window writes the sweep CSV

 private:
  void rebuild();
  void updatePrecisions();
  std::vector<BackendStatus> m_known;

  void showResults();
  std::vector<mnv2::BenchResult> m_fresh;                                   // the last sweep's
  std::vector<std::pair<QString, std::vector<mnv2::BenchResult>>> m_saved;  // per file, in the order opened
  std::vector<mnv2::BenchResult> m_results;                                 // m_fresh then m_saved
  QLineEdit* m_backends = nullptr;
  QLineEdit* m_sizes = nullptr;
  QLineEdit* m_batches = nullptr;
  PrecisionCombo* m_precision = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_iters = nullptr;
  QComboBox* m_xAxis = nullptr;
  QPushButton* m_run = nullptr;
  QPushButton* m_export = nullptr;
  QString m_remoteRefusal;
  bool m_running = false;
  QTableWidget* m_table = nullptr;
  std::vector<std::vector<const mnv2::BenchResult*>> m_linePoints;  // per graph, its points in x order
  QLabel* m_status = nullptr;
  QCustomPlot* m_latency = nullptr;
  QCustomPlot* m_throughput = nullptr;
};

}  // namespace mnv2::ui
