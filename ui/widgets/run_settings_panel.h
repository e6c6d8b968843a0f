// Run settings: where the run happens (this machine or a remote target of the targets file), backend (unavailable
// ones disabled, the reason as tool-tip), precision (the modes the backend runs), timing source, input, batch,
// warm-up and iteration counts; Run / Compare / Cancel and the progress bar.
#pragma once

#include <QSize>
#include <QStringList>
#include <QWidget>
#include <map>
#include <optional>
#include <vector>

#include "mnv2/options.h"
#include "mnv2/remote.h"
#include "mnv2/timing.h"
#include "run_types.h"

class QComboBox;
class QLineEdit;
class QLabel;
class QLabel;
class QProgressBar;
class QPushButton;
class QSettings;
class QSpinBox;

namespace mnv2::ui {

class BackendCombo;
class PrecisionCombo;
class RunOnCombo;

class RunSettingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunSettingsPanel(QWidget* parent = nullptr);

  // Where Profile and Compare run: "" for this machine, else the name of a target of the targets file. It is where a
  // run happens, not one of its options: saved on its own (run/target), never in a report's options.
  QString runTarget() const;
  // Chooses `name` ("" = this machine); a name the targets file does not hold (yet) stays, marked, so that a run
  // says what is wrong rather than the panel running elsewhere.
  void setRunTarget(const QString& name);
  // The targets the chooser offers after "This machine"; `error`: why the targets file could not be read.
  void setTargets(const std::vector<mnv2::remote::Target>& targets, const QString& error);
  QComboBox* runOnCombo() const;

  void setBackends(const std::vector<BackendStatus>& backends);
  QString backend() const;                  // the selected (available) backend
  bool selectBackend(const QString& name);  // false when unknown or unavailable
  QStringList availableBackends() const;    // cpu-ref, cpu first: the reference of diffs
  // What Compare runs in the chosen precision: the engine's rule (mnv2::select_compare) over the available
  // backends, with the backends' own answers; empty backends when none is available.
  mnv2::CompareSelection compareSelection() const;
  bool isBackendAvailable(const QString& name) const;
  const BackendStatus* backendStatus(const QString& name) const;  // as probed; nullptr when unknown
  mnv2::Precision precision() const;
  // false (and unchanged) when the selected backend does not run it; asked before the backends are
  // known, it is applied when they arrive if the backend runs it.
  bool setPrecision(mnv2::Precision precision);
  mnv2::TimerKind timer() const;
  void setTimer(mnv2::TimerKind timer);
  // The cuda backend's options (variant, fusion, graph, forced GEMM tile): every run, diff, sweep, evaluation
  // and classification passes them on; other backends ignore them. The environment's MNV2_CUDA_* overrides win
  // over saved settings (app/common/environment.h).
  mnv2::CudaOptions cudaOptions() const;
  void setCudaOptions(const mnv2::CudaOptions& options);
  // The cudnn backend's options (variant fused/naive, CUDA graph, layout), passed on like the cuda ones.
  mnv2::CudnnOptions cudnnOptions() const;
  void setCudnnOptions(const mnv2::CudnnOptions& options);
  // Every run option the panel sets, with where its value came from: a value the user changed in the panel is
  // a flag; else the environment's, a saved setting's or the default, by the one precedence rule
  // (flag > environment > saved > default). The model option is not the panel's: default here.
  mnv2::OptionValues options() const;
  // Sets every option the panel shows from `values`, keeping their sources (a saved run's settings, a report's
  // options to run again); the input size when it is given.
  void setOptions(const mnv2::OptionValues& values);
  // The cpu backends' thread count (PrepareConfig::cpu_threads): 0 = their default.
  int cpuThreads() const;
  // The GPU the GPU backends run on (option "device": the CUDA ordinal), chosen among the machine's GPUs.
  int device() const;
  void setDevices(const std::vector<mnv2::GpuDevice>& devices);
  int batch() const;
  int warmup() const;
  int iterations() const;
  void setCounts(int batch, int warmup, int iterations);
  bool useImage() const;    // the opened image, else a random tensor of inputSize()
  QSize inputSize() const;  // height x width for random input
  // "" when no image is open; `size`: the image's tensor (after the model's preprocessing), shown in place of the
  // random tensor's size while the image is the input.
  void setImageName(const QString& name, QSize size = {});
  void setModelInputSize(int height, int width);

  void setRunning(bool running);
  void setProgress(const RunProgress& progress);
  void setFinished(bool ok);  // full when the job finished, empty when it failed or was cancelled
  void setStatus(const QString& text);
  QProgressBar* progressBar() const { return m_progress; }
  // Run / Compare / Cancel, the progress bar and the status line: in this panel until a window places them
  // elsewhere (the main window keeps them below the scrolling settings).
  QWidget* runControls() const { return m_controls; }

  void loadSettings(const QSettings& settings);
  void saveSettings(QSettings& settings) const;

 Q_SIGNALS:
  void runClicked();
  void compareClicked();
  void cancelClicked();
  void backendChanged(const QString& backend);
  void deviceChanged();
  void runTargetChanged(const QString& target);  // "" = this machine
  void targetsWanted();                          // the Run-on chooser is about to open: re-read the targets file
  void manageTargetsClicked();                   // the "Targets…" button beside the chooser

 private:
  void updateEnabled();

  RunOnCombo* m_runOn = nullptr;
  QPushButton* m_targets = nullptr;
  BackendCombo* m_backend = nullptr;
  PrecisionCombo* m_precision = nullptr;
  QLabel* m_precisionNote = nullptr;
  QComboBox* m_timer = nullptr;
  // The GPU backends' timer as chosen; the combo shows "host clock" (greyed) while a cpu backend is selected.
  mnv2::TimerKind m_gpuTimer = mnv2::TimerKind::cuda_event;
  // The cuda and cudnn backends' options, one widget per option of the engine's table (mnv2/options.h): a
  // combo box of its choices, or a line edit; named after the option ("cuda-fusion" -> cudaFusionCombo).
  std::map<std::string, QWidget*> m_backendOptions;
  QString optionText(const std::string& name) const;
  void setOptionText(const std::string& name, const QString& value);
  // Every option's value as resolved when the panel was made or settings were loaded, with its source
  // (environment over saved over default); options() reports a value the user changed since as a flag.
  mnv2::OptionValues m_resolved;
  int m_modelHeight = 224, m_modelWidth = 224;  // the model's input size (setModelInputSize)
  QComboBox* m_input = nullptr;
  QSpinBox* m_height = nullptr;
  QSpinBox* m_width = nullptr;
  QLabel* m_times = nullptr;      // the "×" between them
  QLabel* m_imageSize = nullptr;  // in their place while the image is the input
  QSize m_imageInputSize;
  QSpinBox* m_batch = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_iters = nullptr;
  QSpinBox* m_cpuThreads = nullptr;
  QPushButton* m_run = nullptr;
  QPushButton* m_compare = nullptr;
  QPushButton* m_cancel = nullptr;
  QWidget* m_controls = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_status = nullptr;
  bool m_running = false;
  std::optional<mnv2::Precision> m_wantedPrecision;  // from settings or the command line
};

}  // namespace mnv2::ui
