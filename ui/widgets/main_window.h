// The main window of mnv2-profiler: the input and run-settings panel on the left; tabs for the topology,
// timings, output diffs, run comparison, network graph, roofline, sweep, accuracy and the Kernel lab; menus for files,
// exports and runs; a status bar with the model and GPU environment. It only shows what the engine produced: all engine
// work goes through the RunController's worker thread.
#pragma once

#include <QMainWindow>
#include <QMap>
#include <QPointer>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/report_access.h"
#include "run_types.h"

class QDockWidget;
class QLabel;
class QMenu;
class QTabWidget;

namespace mnv2::ui {

class AccuracyPage;
class ComparisonPage;
class DeepDivePage;
class DiffsPage;
class GraphPage;
class RooflinePage;
class SweepPage;
class InputPanel;
class TargetsDialog;
class TargetsModel;
class KernelLabPage;
class LayerSelection;
class LayerTableModel;
class ReportCatalog;
class RunController;
class RunSettingsPanel;
class RunsPanel;
class TimingsPage;
class TimelinePage;
class TopologyPage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  struct Options {
    bool scripted = false;    // errors go to stderr only (no message boxes)
    bool useSettings = true;  // read and write QSettings (folders, run settings, window layout)
    ImageDecoder decoder = ImageDecoder::Auto;
  };
  // Profile/compare (the shown runs), and the other studies' files where the app has their data: the sweep's
  // (bench CSV and mnv2.bench/1), the last evaluation's (CSV and mnv2.eval/1), the roofline's (its points and
  // mnv2.roofline/1). The engine writes every one, as the CLI's commands do.
  enum class ExportFormat { Csv, Json, Trace, SweepCsv, SweepJson, EvalCsv, EvalJson, RooflineCsv, RooflineJson };

  explicit MainWindow(const Options& options, QWidget* parent = nullptr);
  MainWindow() : MainWindow(Options{}) {}
  ~MainWindow() override;

  // Probes backends and devices, then loads the model (empty path: the CLI's lookup).
  void start(const QString& modelPath);
  void openImage(const QString& path);
  // A report or a saved session: its runs join the run history (a session's names, notes and baseline too).
  bool openReport(const QString& path);
  // Every run of the history, with names, notes and the baseline, as one report file (mnv2::Session).
  bool saveSession(const QString& path);
  void startRun(bool compare);
  void cancelRun();
  void computeDiff(const QString& backend, const QString& reference);
  // The Sweep page's fields as a sweep job; false (with the reason reported) when they are not valid.
  bool startSweep();
  // The Accuracy page's fields as an evaluation job; false (with the reason reported) when they are not valid.
  bool startEval();
  bool exportEvalCsv(const QString& path);  // the Accuracy page's last result, written atomically
  bool exportTo(ExportFormat format, const QString& path);
  bool canExport(ExportFormat format) const;  // the data for it is there
  // "topology", "timings", "timeline", "diffs", "comparison", "graph", "roofline", "sweep", "accuracy", "lab"
  bool selectTab(const QString& name);

  bool hasModel() const { return m_model.has_value(); }
  const std::vector<BackendStatus>& backends() const { return m_backends; }
  const std::vector<ReportPtr>& shownReports() const { return m_shown; }
  RunController* controller() const { return m_controller; }
  RunSettingsPanel* runSettings() const { return m_settings; }
  InputPanel* inputPanel() const { return m_input; }
  LayerTableModel* layerModel() const { return m_layers; }
  LayerSelection* selection() const { return m_selection; }
  ReportCatalog* catalog() const { return m_catalog; }
  RunsPanel* runsPanel() const { return m_runs; }
  // The remote targets of the targets file (the Run-on chooser's, and the Targets dialog's).
  TargetsModel* targets() const { return m_targets; }
  // Tools > Targets (made on first use); shown when `show`.
  TargetsDialog* targetsDialog(bool show = false);
  // What a probe of the target found this session; nullptr when it was not probed (or not answered).
  const mnv2::remote::ProbeResult* targetProbe(const QString& name) const;
  QAction* targetsAction() const { return m_targetsAction; }
  QDockWidget* runsDock() const { return m_runsDock; }
  TopologyPage* topologyPage() const { return m_topology; }
  TimingsPage* timingsPage() const { return m_timings; }
  TimelinePage* timelinePage() const { return m_timeline; }
  DiffsPage* diffsPage() const { return m_diffs; }
  ComparisonPage* comparisonPage() const { return m_comparison; }
  DeepDivePage* deepDivePage() const { return m_deepDive; }
  void deepDive();  // the selected layer of the shown runs (the Run comparison's two when it is in front)
  GraphPage* graphPage() const { return m_graph; }
  RooflinePage* rooflinePage() const { return m_roofline; }
  SweepPage* sweepPage() const { return m_sweep; }
  AccuracyPage* accuracyPage() const { return m_accuracy; }
  KernelLabPage* kernelLabPage() const { return m_lab; }
  QAction* labAction(const QString& name) const;  // "compile", "check", "run", "save" (tests)
  QLabel* banner() const { return m_banner; }
  // Over the tabs while a shown run's figures are unreliable or noted (reliabilityText of each such run).
  QLabel* reliabilityBanner() const { return m_reliability; }
  QString statusText() const;  // the permanent status bar fields, joined
  // The CUDA architectures the GPU code carries, as the status bar shows them ("sm_75/80/.../120 + PTX 120").
  static QString compactArchitectures();
  // Help > About: the version, the project's licence, every third-party library with its licence, the docs.
  static QString aboutText();

 Q_SIGNALS:
  void environmentReady();
  void modelReady(bool ok);
  void imageReady(bool ok);
  void runFinished(bool ok);   // a profile, diff or sweep job ended: false when it failed or was cancelled
  void evalFinished(bool ok);  // an accuracy evaluation ended: false when it failed or was cancelled
  void errorReported(const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  // What an export must not replace: the loaded model file (mnv2::write_output_file's inputs).
  std::vector<std::pair<std::string, std::string>> exportInputs() const;
  void buildMenus();
  void buildStatusBar();
  void connectController();
  void reportError(const QString& what, const QString& message);
  void classifyCurrent(const QString& path);
  // `origin`: where the runs come from, as the status bar and the Topology page name it ("current run",
  // "report FILE", "runs run 1, run 3").
  void showReports(const std::vector<ReportPtr>& reports, const QString& title, const QString& origin);
  void showShown();  // the runs checked in the Runs panel
  void clearShown();
  // The banner over the pages: the shown runs whose figures are not to be trusted (hidden when none is).
  void showReliability(const std::vector<ReportPtr>& shown);
  void saveSessionInteractive();
  void onEnvironment(const EnvironmentInfo& info);
  void showGpu();
  void onModel(const ModelInfo& info);
  void onClassified(const ClassifyResult& result);
  void onProfiled(const ProfileResult& result);
  void onDiffed(const DiffResult& result);
  void onEvaluated(const EvalOutcome& outcome);
  void updateTopologySummary();
  void updateActions();
  // Where runs go (the run settings' Run on): the backends and GPUs the panel offers (this machine's, or the
  // target's as its probe said), and the jobs that run here only, refused with the reason while a target is chosen.
  void applyRunTarget();
  // Why `what` does not run while a remote target is chosen, or "" on this machine.
  QString remoteRefusal(const QString& what) const;
  void updateLabActions();  // the Kernel lab's shortcuts (Ctrl+S saves the kernel there, the session elsewhere)
  void addRecent(const QString& key, const QString& path);
  void rebuildRecentMenu();
  void exportInteractive(ExportFormat format);
  void loadSettings();
  void saveSettings();
  QString lastFolder(const QString& key) const;
  void setLastFolder(const QString& key, const QString& file);

  Options m_options;
  RunController* m_controller = nullptr;
  ReportCatalog* m_catalog = nullptr;
  LayerSelection* m_selection = nullptr;
  LayerTableModel* m_layers = nullptr;

  InputPanel* m_input = nullptr;
  RunSettingsPanel* m_settings = nullptr;
  QLabel* m_banner = nullptr;
  QLabel* m_reliability = nullptr;
  QTabWidget* m_tabs = nullptr;
  TopologyPage* m_topology = nullptr;
  TimingsPage* m_timings = nullptr;
  TimelinePage* m_timeline = nullptr;
  DiffsPage* m_diffs = nullptr;
  ComparisonPage* m_comparison = nullptr;
  GraphPage* m_graph = nullptr;
  RooflinePage* m_roofline = nullptr;
  DeepDivePage* m_deepDive = nullptr;
  SweepPage* m_sweep = nullptr;
  AccuracyPage* m_accuracy = nullptr;
  KernelLabPage* m_lab = nullptr;
  QMenu* m_labMenu = nullptr;
  QList<QAction*> m_labActions;  // active while the Kernel lab page is in front

  QLabel* m_statusModel = nullptr;
  QLabel* m_statusGpu = nullptr;
  QLabel* m_statusDriver = nullptr;
  QLabel* m_statusCuda = nullptr;
  QLabel* m_statusCudnn = nullptr;
  QLabel* m_statusShown = nullptr;  // the shown runs' origin, device and cuDNN (not this machine's)
  QMenu* m_recentImages = nullptr;
  QMenu* m_recentReports = nullptr;
  QList<QAction*> m_exportActions;
  QAction* m_runAction = nullptr;
  QAction* m_compareAction = nullptr;
  QAction* m_cancelAction = nullptr;
  QAction* m_saveSessionAction = nullptr;
  QAction* m_targetsAction = nullptr;
  TargetsModel* m_targets = nullptr;
  TargetsDialog* m_targetsDialog = nullptr;
  QMap<QString, mnv2::remote::ProbeResult> m_targetProbes;  // by target name: the last answer of each
  QString m_appliedTarget;                                  // the Run-on choice applyRunTarget() last applied
  JobId m_choiceProbe = 0;  // the probe started by choosing a target (0: none in flight)
  RunsPanel* m_runs = nullptr;
  QDockWidget* m_runsDock = nullptr;

  std::vector<BackendStatus> m_backends;
  mnv2::CudaEnvironment m_cuda;  // the machine's GPUs, as the worker found them
  std::optional<ModelInfo> m_model;
  std::optional<ClassifyResult> m_image;
  std::vector<ReportPtr> m_currentRun;
  std::optional<mnv2::Precision> m_requested;  // the precision the newest Run asked for
  std::vector<ReportPtr> m_shown;
  QString m_shownTitle;
  QString m_shownOrigin;  // "current run" or "report FILE"
  int m_diffCount = 0;
  JobId m_evalJob = 0;  // the last evaluation sent to the controller (its progress goes to the Accuracy page)
};

}  // namespace mnv2::ui
