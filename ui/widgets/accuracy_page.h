// The Accuracy tab: top-1 / top-5 over a labelled image set (a folder with one sub-folder per class, or a
// list file of "FILENAME LABEL" lines and its images folder) with a chosen backend, precision, batch and
// loader threads; progress with images/s and Cancel; the figures, the misclassified files and the skipped
// ones; CSV export. The window sends the job to the run controller's worker (engine evaluate()).
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "models/eval_result_model.h"
#include "run_types.h"

class QLabel;
class QSettings;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace mnv2::ui {

class BackendCombo;
class PrecisionCombo;

class AccuracyPage : public QWidget {
  Q_OBJECT
 public:
  explicit AccuracyPage(QWidget* parent = nullptr);

  void setBackends(const std::vector<BackendStatus>& backends);
  // The fields (scripted mode, tests). select/setPrecision: false when not available / not run by the backend.
  void setSet(const QString& set, const QString& imagesDir = {});
  bool selectBackend(const QString& name);
  bool setPrecision(mnv2::Precision precision);
  void setBatch(int batch);
  void setLoaderThreads(int threads);  // 0: the engine's default, min(4, hardware threads)

  // The fields as a job (decoder left as Auto for the window to set), or the reason they are not one.
  std::optional<EvalRequest> request(QString* error = nullptr) const;

  void setRunning(bool running);  // any run of the controller: one job at a time
  // "" when this page's jobs run here; else why they do not (a remote target is chosen to run on): the page's job
  // button is disabled with the reason as its tool-tip.
  void setRemoteRefusal(const QString& reason);
  QString remoteRefusal() const { return m_remoteRefusal; }
  void evalStarted(const QString& what);
  void setProgress(const RunProgress& progress);
  void setOutcome(const EvalOutcome& outcome);
  void setError(const QString& message);
  void setCancelled();

  void loadSettings(const QSettings& settings);  // the set, images folder, batch and loader threads
  void saveSettings(QSettings& settings) const;

  EvalRecordPtr record() const { return m_record; }
  QString summaryText() const;
  QString statusText() const;
  EvalResultModel* misclassifiedModel() const { return m_misses; }
  EvalResultModel* skippedModel() const { return m_skips; }

 Q_SIGNALS:
  void runRequested();
  void cancelRequested();
  void imageRequested(const QString& path);  // a misclassified row's image, to open in the input panel
  void exportRequested();

 private:
  void updateEnabled();
  void showRecord();

  QLineEdit* m_set = nullptr;
  QLineEdit* m_images = nullptr;
  QPushButton* m_browseImages = nullptr;
  BackendCombo* m_backend = nullptr;
  PrecisionCombo* m_precision = nullptr;
  QSpinBox* m_batch = nullptr;
  QSpinBox* m_threads = nullptr;
  QPushButton* m_run = nullptr;
  QPushButton* m_cancel = nullptr;
  QPushButton* m_export = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  QLabel* m_summary = nullptr;
  QLabel* m_missTitle = nullptr;
  QLabel* m_skipTitle = nullptr;
  EvalResultModel* m_misses = nullptr;
  EvalResultModel* m_skips = nullptr;
  QTableView* m_missView = nullptr;
  QTableView* m_skipView = nullptr;
  EvalRecordPtr m_record;
  bool m_running = false;
  QString m_remoteRefusal;
};

}  // namespace mnv2::ui
