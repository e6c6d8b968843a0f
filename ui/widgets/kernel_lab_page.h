// The Kernel lab page (issue 18): the user's own CUDA kernel for one slot of the network (depthwise,
// pointwise, stem, pool, classifier), written in an editor with CUDA highlighting, then compiled, checked
// against the CPU reference and timed against ours and cuDNN by `mnv2 lab` in a separate process (the app
// never loads user code). It shows the compiler's diagnostics inline, the per-layer chart (yours vs ours vs
// cuDNN) and check table, the end-to-end figures, the live output, and a history of the kernel's versions
// with their status and time, so that the optimisation story stays visible.
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "lab_process.h"
#include "mnv2/model.h"
#include "models/lab_result_model.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTemporaryDir;
class QToolButton;

namespace mnv2::ui {

class CodeEditor;

class KernelLabPage : public QWidget {
  Q_OBJECT
 public:
  explicit KernelLabPage(QWidget* parent = nullptr);
  ~KernelLabPage() override;

  // The loaded model's layers: the layer chooser offers the slot's layers from them.
  void setTopology(std::vector<mnv2::Layer> topology);
  // The app's model file (empty for the built-in topology): `mnv2 lab --model` gets it.
  void setModelPath(const QString& path) { m_modelPath = path; }
  void setDevice(int device) { m_device = device; }  // the run settings' GPU
  // "" when the lab's jobs run here; else why not (a remote target is chosen to run on): Compile, Check and Run
  // are disabled with the reason as tool-tip, and a job asked for anyway is refused with it.
  void setRemoteRefusal(const QString& reason);
  // Ask before discarding unsaved edits (message boxes); off in the scripted mode and the tests.
  void setConfirmations(bool ask) { m_confirm = ask; }

  // The three jobs; false (with the reason in the status line) when one cannot start: a job is running, the
  // slot is refused, the editor is empty, the layer list is malformed.
  bool compile();
  bool check();
  bool run();
  void cancel();
  bool newFromTemplate();  // `mnv2 lab --template SLOT`: replaces the editor's text (asks first if edited)

  bool openFile(const QString& path);
  bool save();                       // to the file shown; without one, asks where (saveAsInteractive)
  bool saveAs(const QString& path);  // writes atomically; the page then shows that file
  void openInteractive();
  void saveAsInteractive();

  bool selectSlot(const QString& slot);  // false for an unknown or refused slot
  QString slot() const;
  bool setPrecision(const QString& precision);  // fp32 or fp16
  void setLayers(const QString& layers);        // "2,7"; empty: every layer of the slot
  void setBatch(int batch);
  bool setArch(const QString& arch);  // "sm_90", or empty for the GPU's own; false for one not offered
  // Shows a version's result (chart, table, diagnostics); restoreVersion also puts its source in the editor.
  bool showVersion(int row);
  bool restoreVersion(int row);
  // The result tab in front: "chart", "check", "history"; and the bottom one: "output", "diagnostics",
  // "commands". False for an unknown name.
  bool showView(const QString& name);

  bool isRunning() const;
  bool isModified() const;
  QString filePath() const { return m_path; }
  QString statusText() const;
  const std::optional<LabResult>& shownResult() const { return m_shown; }

  CodeEditor* editor() const { return m_editor; }
  QListWidget* diagnosticsList() const { return m_diagnostics; }
  QTableView* checkTable() const { return m_checkTable; }
  QCustomPlot* chart() const { return m_chart; }
  QCustomPlot* historyChart() const { return m_historyChart; }
  QTableView* historyTable() const { return m_historyTable; }
  LabHistoryModel* history() const { return m_history; }
  LabLayerTableModel* checkModel() const { return m_checkModel; }
  QPlainTextEdit* outputView() const { return m_output; }
  QLabel* endToEndLabel() const { return m_endToEnd; }
  QComboBox* slotCombo() const { return m_slot; }

 Q_SIGNALS:
  void runningChanged(bool running);
  void modifiedChanged(bool modified);
  // A job ended: `ok` when it gave what it was for (a result of any status, or a template), false when
  // there was none (no CLI, a refused request, a malformed result, cancelled).
  void finished(bool ok);

 private:
  bool startJob(LabProcess::Action action);
  void onFinished(const LabProcess::Outcome& outcome);
  void showResult(const std::optional<LabResult>& result, const QString& compiledFile);
  void rebuildChart();
  void rebuildHistoryChart();
  void setStatus(const QString& text, const QColor& color);
  void setBusy(bool busy);
  void updateFileLabel();
  void rebuildLayerMenu();
  bool confirmDiscard(const QString& what);
  void loadSource(const QString& source, const QString& path);

  LabProcess* m_process = nullptr;
  std::unique_ptr<QTemporaryDir> m_scratch;  // where an edited source is written for `mnv2 lab --kernel`
  std::vector<mnv2::Layer> m_topology;
  QString m_path;  // the file the editor shows; empty: untitled
  QString m_modelPath;
  int m_device = 0;
  bool m_confirm = true;
  QString m_remoteRefusal;
  QStringList m_jobTips;  // Compile, Check and Run's own tool-tips
  LabProcess::Action m_action = LabProcess::Action::Run;
  QString m_jobSource;  // the source the running job compiles
  QString m_jobFile;    // the file it was written to
  std::optional<LabResult> m_shown;
  QString m_shownFile;

  QComboBox* m_slot = nullptr;
  QPushButton* m_template = nullptr;
  QComboBox* m_precision = nullptr;
  QSpinBox* m_batch = nullptr;
  QComboBox* m_arch = nullptr;
  QLineEdit* m_layers = nullptr;
  QToolButton* m_layerMenu = nullptr;
  QPushButton* m_open = nullptr;
  QPushButton* m_save = nullptr;
  QLabel* m_file = nullptr;
  QPushButton* m_compile = nullptr;
  QPushButton* m_check = nullptr;
  QPushButton* m_run = nullptr;
  QPushButton* m_cancel = nullptr;
  QLabel* m_status = nullptr;
  CodeEditor* m_editor = nullptr;
  QTabWidget* m_results = nullptr;
  QCustomPlot* m_chart = nullptr;
  QLabel* m_endToEnd = nullptr;
  QTableView* m_checkTable = nullptr;
  LabLayerTableModel* m_checkModel = nullptr;
  QTableView* m_historyTable = nullptr;
  LabHistoryModel* m_history = nullptr;
  QCustomPlot* m_historyChart = nullptr;
  QPushButton* m_restore = nullptr;
  QTabWidget* m_bottom = nullptr;
  QPlainTextEdit* m_output = nullptr;
  QListWidget* m_diagnostics = nullptr;
  QPlainTextEdit* m_commands = nullptr;
};

}  // namespace mnv2::ui
