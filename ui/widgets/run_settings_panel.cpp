// The run settings panel (see run_settings_panel.h).
#include "widgets/run_settings_panel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <functional>
#include <string>
#include <utility>

#include "common/environment.h"
#include "common/remote_targets.h"
#include "mnv2/backend.h"
#include "mnv2/sweep.h"
#include "models/report_access.h"
#include "widgets/backend_picker.h"

namespace mnv2::ui {

namespace {

// The settings key of an option: "options/NAME"; older versions saved some under "run/..." (read as well).
QString settingsKey(const std::string& name) { return QStringLiteral("options/") + QString::fromStdString(name); }

QSpinBox* spin(QWidget* parent, int lo, int hi, int value, const QString& objectName) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setValue(value);
  s->setObjectName(objectName);
  return s;
}

// A count box that refuses a typed number above its maximum rather than cutting it: QSpinBox drops the digit
// that would pass the maximum (5000000 typed became 500000) without a word. Here the digits stay while typing,
// Return or leaving the box keeps the previous value, and `refused` is told what was typed.
class CountSpinBox : public QSpinBox {
 public:
  CountSpinBox(QWidget* parent, std::function<void(const QString&)> refused)
      : QSpinBox(parent), m_refused(std::move(refused)) {
    // The value changes when the typing is done: the previous count is the one kept, not its first digits.
    setKeyboardTracking(false);
  }

  QValidator::State validate(QString& text, int& pos) const override {
    const QValidator::State state = QSpinBox::validate(text, pos);
    return state == QValidator::Invalid && above(text) ? QValidator::Intermediate : state;
  }
  void fixup(QString& input) const override {
    if (above(input) && m_refused) m_refused(input.trimmed());
    QSpinBox::fixup(input);
  }

 private:
  bool above(const QString& text) const {
    bool ok = false;
    const qlonglong n = text.trimmed().toLongLong(&ok);
    return ok && n > maximum();
  }
  std::function<void(const QString&)> m_refused;
};

// A count box for an integer option of the engine's table: its range, its default, its help (the CLI's).
QSpinBox* optionSpin(QWidget* parent, const char* name, const QString& objectName,
                     std::function<void(const QString&)> refused) {
  const OptionSpec& spec = *mnv2::find_option(name);
  auto* s = new CountSpinBox(parent, std::move(refused));
  s->setRange(static_cast<int>(spec.min), static_cast<int>(spec.max));
  s->setValue(std::stoi(spec.default_value));
  s->setObjectName(objectName);
  s->setToolTip(QString::fromStdString(spec.help));
  return s;
}

}  // namespace

// The Run-on chooser: asks for the targets to be re-read just before its list opens, so that a target added with
// `mnv2 targets add` a moment ago is there.
class RunOnCombo : public QComboBox {
 public:
  explicit RunOnCombo(RunSettingsPanel* panel) : QComboBox(panel), m_panel(panel) {}
  void showPopup() override {
    Q_EMIT m_panel->targetsWanted();
    QComboBox::showPopup();
  }

 private:
  RunSettingsPanel* m_panel;
};

RunSettingsPanel::RunSettingsPanel(QWidget* parent) : QWidget(parent) {
  m_runOn = new RunOnCombo(this);
  m_runOn->setObjectName(QStringLiteral("runOnCombo"));
  m_runOn->addItem(QStringLiteral("This machine"), QString());
  m_runOn->setItemData(0, QStringLiteral("Profile and Compare run here"), Qt::ToolTipRole);
  m_targets = new QPushButton(QStringLiteral("Targets…"), this);
  m_targets->setObjectName(QStringLiteral("targetsButton"));
  m_targets->setToolTip(QStringLiteral("The remote targets: add, remove, probe, connect (Tools > Targets)"));
  m_backend = new BackendCombo(this);
  m_backend->setObjectName(QStringLiteral("backendCombo"));
  m_precision = new PrecisionCombo(this);
  m_precision->setObjectName(QStringLiteral("precisionCombo"));
  m_precisionNote = new QLabel(this);
  m_precisionNote->setObjectName(QStringLiteral("precisionNote"));
  m_precisionNote->setWordWrap(true);
  m_precisionNote->setStyleSheet(QStringLiteral("color: #555;"));
  m_precisionNote->hide();
  m_timer = new QComboBox(this);
  m_timer->setObjectName(QStringLiteral("timerCombo"));
  m_timer->addItem(QStringLiteral("cudaEvent"), static_cast<int>(mnv2::TimerKind::cuda_event));
  m_timer->addItem(QStringLiteral("CUPTI kernels"), static_cast<int>(mnv2::TimerKind::cupti_kernel));
  // What the cpu backends time with; shown (greyed) for them, never chosen for a GPU backend.
  m_timer->addItem(QStringLiteral("host clock"), static_cast<int>(mnv2::TimerKind::host_clock));
  if (auto* timers = qobject_cast<QStandardItemModel*>(m_timer->model())) timers->item(2)->setEnabled(false);
  connect(m_timer, &QComboBox::currentIndexChanged, this, [this] {
    const auto kind = static_cast<mnv2::TimerKind>(m_timer->currentData().toInt());
    if (kind != mnv2::TimerKind::host_clock) m_gpuTimer = kind;
  });
  // The backends' options from the engine's table: choices, help and defaults in one place.
  for (const OptionSpec& spec : option_table()) {
    if (!spec.per_run || (spec.name.rfind("cuda-", 0) != 0 && spec.name.rfind("cudnn-", 0) != 0)) continue;
    QString object;
    bool upper = false;
    for (char ch : spec.name) {
      if (ch == '-') {
        upper = true;
        continue;
      }
      object += upper ? QChar(ch).toUpper() : QChar(ch);
      upper = false;
    }
    QWidget* widget = nullptr;
    if (spec.type == OptionType::choice) {
      auto* combo = new QComboBox(this);
      for (const std::string& c : spec.choices) combo->addItem(QString::fromStdString(c), QString::fromStdString(c));
      combo->setObjectName(object + QStringLiteral("Combo"));
      widget = combo;
    } else {
      auto* edit = new QLineEdit(this);
      edit->setPlaceholderText(QStringLiteral("default"));
      edit->setObjectName(object + QStringLiteral("Edit"));
      widget = edit;
    }
    widget->setToolTip(QString::fromStdString(spec.help) +
                       (spec.env.empty() ? QString() : QStringLiteral(" ($%1)").arg(QString::fromStdString(spec.env))));
    m_backendOptions[spec.name] = widget;
  }
  // The GPU: one entry a visible GPU once the machine is known (setDevices); a saved ordinal this machine does not
  // show stays, marked, so that the run says which GPUs there are rather than the panel dropping it.
  const OptionSpec& deviceSpec = *mnv2::find_option("device");
  auto* device = new QComboBox(this);
  device->setObjectName(QStringLiteral("deviceCombo"));
  device->addItem(QString::fromStdString(deviceSpec.default_value), QString::fromStdString(deviceSpec.default_value));
  device->setToolTip(QString::fromStdString(deviceSpec.help));
  connect(device, &QComboBox::currentIndexChanged, this, [this] { Q_EMIT deviceChanged(); });
  m_backendOptions[deviceSpec.name] = device;
  // Start values: the table's defaults under the environment's overrides; loadSettings() adds the saved ones
  // beneath the environment's (flag > environment > saved > default).
  m_resolved = OptionValues();
  try {
    frontend::offer_environment(m_resolved);
  } catch (const std::exception&) {  // a bad variable: the front end's start reports it; defaults here
  }
  for (const auto& [name, widget] : m_backendOptions)
    setOptionText(name, QString::fromStdString(m_resolved.value(name)));
  m_input = new QComboBox(this);
  m_input->setObjectName(QStringLiteral("inputCombo"));
  m_input->addItem(QStringLiteral("opened image"));
  m_input->addItem(QStringLiteral("random tensor (seed 1)"));
  m_height = spin(this, 32, 4096, 224, QStringLiteral("heightSpin"));
  m_width = spin(this, 32, 4096, 224, QStringLiteral("widthSpin"));
  m_batch = spin(this, 1, 4096, 1, QStringLiteral("batchSpin"));
  // A typed count above the maximum is refused in the status line, the previous count kept.
  auto refusal = [this](const QString& what, QSpinBox* const* box) {
    return [this, what, box](const QString& typed) {
      if (m_status)
        m_status->setText(QStringLiteral("%1: %2 is more than the most allowed (%3); kept %4")
                              .arg(what, typed)
                              .arg((*box)->maximum())
                              .arg((*box)->value()));
    };
  };
  m_warmup = optionSpin(this, "warmup", QStringLiteral("warmupSpin"), refusal(QStringLiteral("Warm-up"), &m_warmup));
  m_iters = optionSpin(this, "iters", QStringLiteral("itersSpin"), refusal(QStringLiteral("Iterations"), &m_iters));
  m_batch->setToolTip(QStringLiteral("Images per forward pass; the opened image is repeated over the batch"));
  m_cpuThreads = spin(this, 0, 4096, 0, QStringLiteral("cpuThreadsSpin"));
  m_cpuThreads->setSpecialValueText(QStringLiteral("default"));
  m_cpuThreads->setValue(static_cast<int>(m_resolved.integer("threads")));  // $MNV2_CPU_THREADS where set
  setCounts(static_cast<int>(m_resolved.integer("batch")), static_cast<int>(m_resolved.integer("warmup")),
            static_cast<int>(m_resolved.integer("iters")));
  m_cpuThreads->setToolTip(QStringLiteral(
      "Host threads of the cpu backends; default: one per core ($MNV2_CPU_THREADS overrides). Pin it for "
      "benchmarks; on a busy machine fewer threads than free cores keep the tail short."));

  auto* sizeRow = new QHBoxLayout;
  m_times = new QLabel(QStringLiteral("×"), this);
  m_imageSize = new QLabel(this);
  m_imageSize->setObjectName(QStringLiteral("imageSizeLabel"));
  m_imageSize->setToolTip(QStringLiteral("An image is resized and cropped as the model's preprocessing says"));
  m_imageSize->hide();
  sizeRow->addWidget(m_height);
  sizeRow->addWidget(m_times);
  sizeRow->addWidget(m_width);
  sizeRow->addWidget(m_imageSize);

  m_run = new QPushButton(QStringLiteral("Run"), this);
  m_run->setObjectName(QStringLiteral("runButton"));
  m_run->setToolTip(QStringLiteral("Profile the selected backend (F5)"));
  m_compare = new QPushButton(QStringLiteral("Compare"), this);
  m_compare->setObjectName(QStringLiteral("compareButton"));
  m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
  m_cancel->setObjectName(QStringLiteral("cancelButton"));
  // Run, Compare, Cancel, the progress bar and the status: one widget that the main window keeps outside the
  // settings' scroll area, so that they stay in view on a short screen.
  m_controls = new QWidget(this);
  m_controls->setObjectName(QStringLiteral("runControls"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_run);
  buttons->addWidget(m_compare);
  buttons->addWidget(m_cancel);

  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("progressBar"));
  m_progress->setRange(0, 1000);
  m_progress->setValue(0);
  m_progress->setTextVisible(false);
  m_status = new QLabel(QStringLiteral("idle"), this);
  m_status->setObjectName(QStringLiteral("runStatus"));
  m_status->setWordWrap(true);

  auto* runOnRow = new QHBoxLayout;
  runOnRow->addWidget(m_runOn, 1);
  runOnRow->addWidget(m_targets);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Run on"), runOnRow);
  form->addRow(QStringLiteral("Backend"), m_backend);
  form->addRow(QStringLiteral("Precision"), m_precision);
  form->addRow(m_precisionNote);
  form->addRow(QStringLiteral("Timing"), m_timer);
  form->addRow(QStringLiteral("Input"), m_input);
  form->addRow(QStringLiteral("Input size"), sizeRow);
  form->addRow(QStringLiteral("Batch"), m_batch);
  form->addRow(QStringLiteral("Warm-up"), m_warmup);
  form->addRow(QStringLiteral("Iterations"), m_iters);
  form->addRow(QStringLiteral("CPU threads"), m_cpuThreads);
  for (const OptionSpec& spec : option_table())
    if (auto it = m_backendOptions.find(spec.name); it != m_backendOptions.end())
      form->addRow(QString::fromStdString(spec.name), it->second);
  // Tab walks the fields as the form reads, top to bottom, then Run, Compare and Cancel (issue 35: the backend
  // options, made before the fields above them, came between Precision and Input).
  QWidget* previous = nullptr;
  auto chain = [&previous](QWidget* w) {
    if (previous) setTabOrder(previous, w);
    previous = w;
  };
  for (int row = 0; row < form->rowCount(); ++row) {
    QLayoutItem* field = form->itemAt(row, QFormLayout::FieldRole);
    if (!field) field = form->itemAt(row, QFormLayout::SpanningRole);
    if (!field) continue;
    if (QWidget* w = field->widget()) chain(w);
    if (QLayout* l = field->layout())
      for (int i = 0; i < l->count(); ++i)
        if (QWidget* w = l->itemAt(i)->widget(); w && w->focusPolicy() != Qt::NoFocus) chain(w);
  }
  for (QWidget* w : {m_run, m_compare, m_cancel}) chain(w);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(form);
  auto* controlsLayout = new QVBoxLayout(m_controls);
  controlsLayout->setContentsMargins(0, 0, 0, 0);
  controlsLayout->addLayout(buttons);
  controlsLayout->addWidget(m_progress);
  controlsLayout->addWidget(m_status);
  layout->addWidget(m_controls);

  connect(m_run, &QPushButton::clicked, this, &RunSettingsPanel::runClicked);
  connect(m_compare, &QPushButton::clicked, this, &RunSettingsPanel::compareClicked);
  connect(m_cancel, &QPushButton::clicked, this, &RunSettingsPanel::cancelClicked);
  connect(m_backend, &QComboBox::currentIndexChanged, this, [this] {
    const BackendStatus* b = m_backend->status(backend());
    m_precision->setSupported(b ? std::vector<const BackendStatus*>{b} : std::vector<const BackendStatus*>{});
    if (m_wantedPrecision && b) {  // once, for the first backend known: not later for another one
      m_precision->setPrecision(*m_wantedPrecision);
      m_wantedPrecision.reset();
    }
    updateEnabled();
    Q_EMIT backendChanged(backend());
  });
  connect(m_precision, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
  connect(m_runOn, &QComboBox::currentIndexChanged, this, [this] {
    updateEnabled();
    Q_EMIT runTargetChanged(runTarget());
  });
  connect(m_targets, &QPushButton::clicked, this, &RunSettingsPanel::manageTargetsClicked);
  connect(m_input, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
  setImageName(QString());
  updateEnabled();
}

QString RunSettingsPanel::runTarget() const { return m_runOn->currentData().toString(); }

QComboBox* RunSettingsPanel::runOnCombo() const { return m_runOn; }

void RunSettingsPanel::setRunTarget(const QString& name) {
  int i = name.isEmpty() ? 0 : m_runOn->findData(name);
  if (i < 0) {
    m_runOn->addItem(QStringLiteral("%1 (not in the targets file)").arg(name), name);
    m_runOn->setItemData(m_runOn->count() - 1,
                         QStringLiteral("A run there fails: the targets file has no target '%1'").arg(name),
                         Qt::ToolTipRole);
    i = m_runOn->count() - 1;
  }
  m_runOn->setCurrentIndex(i);
}

void RunSettingsPanel::setTargets(const std::vector<mnv2::remote::Target>& targets, const QString& error) {
  // The choice stays what it was (the same name), so there is nothing to announce.
  const QSignalBlocker block(m_runOn);
  const QString chosen = runTarget();
  while (m_runOn->count() > 1) m_runOn->removeItem(1);
  for (const mnv2::remote::Target& t : targets) {
    const QString name = QString::fromStdString(t.name);
    m_runOn->addItem(name, name);
    m_runOn->setItemData(m_runOn->count() - 1, QString::fromStdString(frontend::describe_target(t)), Qt::ToolTipRole);
  }
  setRunTarget(chosen);
  m_runOn->setToolTip(error.isEmpty() ? QStringLiteral("Where Profile and Compare run: this machine, or a target of "
                                                       "the targets file (Targets…)")
                                      : error);
}

void RunSettingsPanel::setBackends(const std::vector<BackendStatus>& backends) { m_backend->setBackends(backends); }

QString RunSettingsPanel::backend() const { return m_backend->backend(); }

bool RunSettingsPanel::selectBackend(const QString& name) { return m_backend->select(name); }

bool RunSettingsPanel::isBackendAvailable(const QString& name) const { return m_backend->isAvailable(name); }

QStringList RunSettingsPanel::availableBackends() const { return m_backend->availableBackends(); }

const BackendStatus* RunSettingsPanel::backendStatus(const QString& name) const { return m_backend->status(name); }

mnv2::Precision RunSettingsPanel::precision() const { return m_precision->precision(); }

bool RunSettingsPanel::setPrecision(mnv2::Precision precision) {
  if (m_backend->count() == 0) {
    m_wantedPrecision = precision;  // applied when the backends arrive
    return true;
  }
  return m_precision->setPrecision(precision);
}

mnv2::TimerKind RunSettingsPanel::timer() const { return m_gpuTimer; }

QString RunSettingsPanel::optionText(const std::string& name) const {
  QWidget* w = m_backendOptions.at(name);
  if (auto* combo = qobject_cast<QComboBox*>(w)) return combo->currentData().toString();
  return qobject_cast<QLineEdit*>(w)->text().trimmed();
}

void RunSettingsPanel::setOptionText(const std::string& name, const QString& value) {
  auto it = m_backendOptions.find(name);
  if (it == m_backendOptions.end()) return;
  if (auto* combo = qobject_cast<QComboBox*>(it->second)) {
    int i = combo->findData(value);
    if (i < 0 && name == "device" && !value.isEmpty()) {  // an ordinal this machine does not show (yet)
      combo->addItem(QStringLiteral("%1 (not on this machine)").arg(value), value);
      i = combo->count() - 1;
    }
    if (i >= 0) combo->setCurrentIndex(i);
  } else {
    qobject_cast<QLineEdit*>(it->second)->setText(value);
  }
}

mnv2::OptionValues RunSettingsPanel::options() const {
  std::map<std::string, std::string> now;
  for (const auto& [name, widget] : m_backendOptions) now[name] = optionText(name).toStdString();
  if (m_backend->count() > 0 && !backend().isEmpty()) now["backend"] = backend().toStdString();  // once known
  now["precision"] = mnv2::to_string(precision());
  now["timing"] = timer() == mnv2::TimerKind::cupti_kernel ? "cupti" : "event";
  now["batch"] = std::to_string(batch());
  now["warmup"] = std::to_string(warmup());
  now["iters"] = std::to_string(iterations());
  now["threads"] = std::to_string(cpuThreads());
  // The size of a random input; "" (the model's) where it is the model's and was not set otherwise.
  const std::string size = std::to_string(m_height->value()) + "x" + std::to_string(m_width->value());
  const std::string& resolvedSize = m_resolved.value("input-size");
  now["input-size"] = resolvedSize.empty() && m_height->value() == m_modelHeight && m_width->value() == m_modelWidth
                          ? std::string()
                          : (!resolvedSize.empty() && mnv2::parse_input_size(resolvedSize) ==
                                                          std::pair<int, int>{m_height->value(), m_width->value()}
                                 ? resolvedSize
                                 : size);
  mnv2::OptionValues out;
  for (const auto& [name, value] : now) {
    const mnv2::OptionValue& resolved = m_resolved.at(name);
    if (value == resolved.value)
      out.assign(name, value, resolved.source);
    else if (value == mnv2::find_option(name)->default_value)  // set back to the default ("0" threads: unset)
      out.offer(name, value, mnv2::OptionSource::default_value);
    else
      out.offer(name, value, mnv2::OptionSource::flag);
  }
  // The rest as resolved: where files are (the process's), and what the panel cannot show yet (the backend
  // before the backends are known).
  for (const mnv2::OptionSpec& spec : mnv2::option_table())
    if (!now.count(spec.name)) out.assign(spec.name, m_resolved.value(spec.name), m_resolved.at(spec.name).source);
  return out;
}

mnv2::CudaOptions RunSettingsPanel::cudaOptions() const { return mnv2::prepare_config_of(options(), {224, 224}).cuda; }

mnv2::CudnnOptions RunSettingsPanel::cudnnOptions() const {
  return mnv2::prepare_config_of(options(), {224, 224}).cudnn;
}

void RunSettingsPanel::setCudnnOptions(const mnv2::CudnnOptions& o) {
  setOptionText("cudnn-variant", QString::fromLatin1(mnv2::to_string(o.variant)));
  setOptionText("cudnn-graph", QString::fromLatin1(mnv2::to_string(o.graph)));
  setOptionText("cudnn-layout", QString::fromLatin1(mnv2::to_string(o.layout)));
}

void RunSettingsPanel::setCudaOptions(const mnv2::CudaOptions& o) {
  setOptionText("cuda-variant", QString::fromLatin1(mnv2::to_string(o.variant)));
  setOptionText("cuda-fusion", QString::fromLatin1(mnv2::to_string(o.fusion)));
  setOptionText("cuda-graph", QString::fromLatin1(mnv2::to_string(o.graph)));
  setOptionText("cuda-gemm-tile", QString::fromStdString(o.gemm_tile));
  setOptionText("cuda-pdl", QString::fromLatin1(mnv2::to_string(o.pdl)));
  setOptionText("cuda-splitk", QString::fromLatin1(mnv2::to_string(o.splitk)));
}

void RunSettingsPanel::setTimer(mnv2::TimerKind timer) {
  if (timer == mnv2::TimerKind::host_clock) return;  // not a GPU backend's choice
  m_gpuTimer = timer;
  updateEnabled();
}

int RunSettingsPanel::cpuThreads() const { return m_cpuThreads->value(); }

int RunSettingsPanel::device() const { return optionText("device").toInt(); }

void RunSettingsPanel::setDevices(const std::vector<mnv2::GpuDevice>& devices) {
  auto* combo = qobject_cast<QComboBox*>(m_backendOptions.at("device"));
  const QString chosen = optionText("device");
  {
    const QSignalBlocker block(combo);
    combo->clear();
    for (const mnv2::GpuDevice& d : devices)
      combo->addItem(QStringLiteral("%1: %2").arg(d.index).arg(QString::fromStdString(d.name)),
                     QString::number(d.index));
    if (devices.empty()) combo->addItem(QStringLiteral("0 (no GPU)"), QStringLiteral("0"));
  }
  setOptionText("device", chosen);
  Q_EMIT deviceChanged();
}
int RunSettingsPanel::batch() const { return m_batch->value(); }
int RunSettingsPanel::warmup() const { return m_warmup->value(); }
int RunSettingsPanel::iterations() const { return m_iters->value(); }

void RunSettingsPanel::setCounts(int batch, int warmup, int iterations) {
  if (batch > 0) m_batch->setValue(batch);
  if (warmup >= 0) m_warmup->setValue(warmup);
  if (iterations > 0) m_iters->setValue(iterations);
}

bool RunSettingsPanel::useImage() const {
  return m_input->currentIndex() == 0 && m_input->model()->flags(m_input->model()->index(0, 0)) & Qt::ItemIsEnabled;
}

QSize RunSettingsPanel::inputSize() const { return {m_width->value(), m_height->value()}; }

void RunSettingsPanel::setImageName(const QString& name, QSize size) {
  m_imageInputSize = size;
  auto* model = qobject_cast<QStandardItemModel*>(m_input->model());
  QStandardItem* item = model ? model->item(0) : nullptr;
  if (item) {
    item->setText(name.isEmpty() ? QStringLiteral("opened image (none)") : QStringLiteral("image: %1").arg(name));
    item->setEnabled(!name.isEmpty());
  }
  m_input->setCurrentIndex(name.isEmpty() ? 1 : 0);
  updateEnabled();
}

void RunSettingsPanel::setModelInputSize(int height, int width) {
  m_modelHeight = height;
  m_modelWidth = width;
  m_height->setValue(height);
  m_width->setValue(width);
}

void RunSettingsPanel::setRunning(bool running) {
  m_running = running;
  // The end of a job does not fill the bar: only a job that finished does (setFinished), not a cancelled or
  // failed one.
  if (running) m_progress->setValue(0);
  updateEnabled();
}

void RunSettingsPanel::setFinished(bool ok) { m_progress->setValue(ok ? m_progress->maximum() : 0); }

void RunSettingsPanel::setProgress(const RunProgress& p) {
  m_progress->setValue(static_cast<int>(p.fraction * m_progress->maximum()));
  if (!p.text.isEmpty()) {  // a run on a target: its stage, said whole
    m_status->setText(p.text);
    return;
  }
  const QString of =
      p.backendCount > 1 ? QStringLiteral(" (%1 of %2)").arg(p.backendIndex + 1).arg(p.backendCount) : QString();
  m_status->setText(QStringLiteral("%1%2: %3 %4/%5").arg(p.backend, of, p.phase).arg(p.done).arg(p.total));
}

void RunSettingsPanel::setStatus(const QString& text) { m_status->setText(text); }

void RunSettingsPanel::updateEnabled() {
  const bool gpu = !backend().isEmpty() && !mnv2::is_host_backend(backend().toStdString());
  m_timer->setEnabled(gpu && !m_running);
  m_timer->setCurrentIndex(m_timer->findData(static_cast<int>(gpu ? m_gpuTimer : mnv2::TimerKind::host_clock)));
  m_timer->setToolTip(gpu ? QStringLiteral("cudaEvent: events around each layer; CUPTI: GPU kernel time from activity "
                                           "records, with kernel names")
                          : QStringLiteral("The cpu backends are always timed with the host clock"));
  const bool random = !useImage();
  m_height->setEnabled(random && !m_running);
  m_width->setEnabled(random && !m_running);
  // The image's own size in place of the random tensor's (kept for when the random tensor is chosen again).
  const bool imageSize = !random && m_imageInputSize.isValid();
  for (QWidget* w : std::initializer_list<QWidget*>{m_height, m_times, m_width}) w->setVisible(!imageSize);
  m_imageSize->setVisible(imageSize);
  m_imageSize->setText(
      QStringLiteral("%1×%2 (the image)").arg(m_imageInputSize.height()).arg(m_imageInputSize.width()));
  const QString sizeTip = random ? QStringLiteral("Height × width of the random input tensor")
                                 : QStringLiteral("An image is resized and cropped as the model's preprocessing says");
  m_height->setToolTip(sizeTip);
  m_width->setToolTip(sizeTip);
  for (QWidget* w : std::initializer_list<QWidget*>{m_runOn, m_backend, m_precision, m_input, m_batch, m_warmup,
                                                    m_iters, m_cpuThreads})
    w->setEnabled(!m_running);
  // What Compare runs in the chosen mode, as the engine's rule says (the reference may run fp32 in its place; a
  // later backend without the mode is left out): said here, before the run, not as a failure after it.
  const mnv2::CompareSelection selection = compareSelection();
  QStringList notes;
  for (const std::string& n : selection.rule.notes) notes << QString::fromStdString(n);
  m_precisionNote->setVisible(!notes.isEmpty());
  m_precisionNote->setText(QStringLiteral("Compare: %1.").arg(notes.join(QStringLiteral("; "))));
  QStringList runs;
  for (const std::string& b : selection.backends) runs << QString::fromStdString(b);
  m_compare->setToolTip(runs.size() > 1 ? QStringLiteral("Profile %1 and diff each against %2 (F6)")
                                              .arg(runs.join(QStringLiteral(", ")), runs.front())
                                        : QStringLiteral("Profile every available backend and diff each against the "
                                                         "first (F6)"));
  m_run->setEnabled(!m_running && !backend().isEmpty());
  m_compare->setEnabled(!m_running && !selection.backends.empty());
  m_cancel->setEnabled(m_running);
}

mnv2::CompareSelection RunSettingsPanel::compareSelection() const {
  std::vector<std::string> available;
  for (const QString& name : availableBackends()) available.push_back(name.toStdString());
  if (available.empty()) return {};
  return mnv2::select_compare(available, precision(), [this](const std::string& name, mnv2::Precision p) {
    const BackendStatus* b = m_backend->status(QString::fromStdString(name));
    return b != nullptr && b->supports(p);
  });
}

void RunSettingsPanel::loadSettings(const QSettings& s) {
  // Saved values beneath the environment's: the one precedence rule. A hand-edited bad value is skipped.
  mnv2::OptionValues v;
  auto offerSaved = [&v](const std::string& name, const QVariant& value) {
    if (!value.isValid()) return;
    try {
      v.offer(name, value.toString().toStdString(), mnv2::OptionSource::saved);
    } catch (const std::exception&) {
    }
  };
  const std::pair<const char*, const char*> legacy[] = {{"run/backend", "backend"},
                                                        {"run/precision", "precision"},
                                                        {"run/batch", "batch"},
                                                        {"run/warmup", "warmup"},
                                                        {"run/iterations", "iters"},
                                                        {"run/cpuThreads", "threads"},
                                                        {"run/cudaVariant", "cuda-variant"},
                                                        {"run/cudaFusion", "cuda-fusion"},
                                                        {"run/cudaGraph", "cuda-graph"},
                                                        {"run/cudaGemmTile", "cuda-gemm-tile"},
                                                        {"run/cudnnVariant", "cudnn-variant"},
                                                        {"run/cudnnGraph", "cudnn-graph"},
                                                        {"run/cudnnLayout", "cudnn-layout"}};
  for (const auto& [key, name] : legacy) offerSaved(name, s.value(QString::fromLatin1(key)));
  if (const QVariant t = s.value(QStringLiteral("run/timer")); t.isValid())
    offerSaved("timing", static_cast<mnv2::TimerKind>(t.toInt()) == mnv2::TimerKind::cupti_kernel
                             ? QStringLiteral("cupti")
                             : QStringLiteral("event"));
  for (const mnv2::OptionSpec& spec : mnv2::option_table())
    if (spec.per_run) offerSaved(spec.name, s.value(settingsKey(spec.name)));
  try {
    frontend::offer_environment(v);
  } catch (const std::exception&) {  // reported by the front end at start; the saved value stands
  }
  m_resolved = v;
  selectBackend(QString::fromStdString(v.value("backend")));
  try {
    setPrecision(mnv2::parse_precision(v.value("precision")));
  } catch (const std::exception&) {
  }
  setTimer(v.value("timing") == "cupti" ? mnv2::TimerKind::cupti_kernel : mnv2::TimerKind::cuda_event);
  setCounts(static_cast<int>(v.integer("batch")), static_cast<int>(v.integer("warmup")),
            static_cast<int>(v.integer("iters")));
  m_height->setValue(s.value(QStringLiteral("run/height"), 224).toInt());
  m_width->setValue(s.value(QStringLiteral("run/width"), 224).toInt());
  m_cpuThreads->setValue(static_cast<int>(v.integer("threads")));
  for (const auto& [name, widget] : m_backendOptions) setOptionText(name, QString::fromStdString(v.value(name)));
  setRunTarget(s.value(QStringLiteral("run/target")).toString());
}

void RunSettingsPanel::setOptions(const mnv2::OptionValues& v) {
  m_resolved = v;
  selectBackend(QString::fromStdString(v.value("backend")));
  try {
    setPrecision(mnv2::parse_precision(v.value("precision")));
  } catch (const std::exception&) {
  }
  setTimer(v.value("timing") == "cupti" ? mnv2::TimerKind::cupti_kernel : mnv2::TimerKind::cuda_event);
  setCounts(static_cast<int>(v.integer("batch")), static_cast<int>(v.integer("warmup")),
            static_cast<int>(v.integer("iters")));
  m_cpuThreads->setValue(static_cast<int>(v.integer("threads")));
  if (const std::string& size = v.value("input-size"); !size.empty()) {
    try {
      const auto [h, w] = mnv2::parse_input_size(size);
      m_height->setValue(h);
      m_width->setValue(w);
    } catch (const std::exception&) {
    }
  }
  for (const auto& [name, widget] : m_backendOptions) setOptionText(name, QString::fromStdString(v.value(name)));
}

void RunSettingsPanel::saveSettings(QSettings& s) const {
  const mnv2::OptionValues v = options();
  for (const mnv2::OptionSpec& spec : mnv2::option_table())
    if (spec.per_run) s.setValue(settingsKey(spec.name), QString::fromStdString(v.value(spec.name)));
  s.setValue(QStringLiteral("run/height"), m_height->value());
  s.setValue(QStringLiteral("run/width"), m_width->value());
  s.setValue(QStringLiteral("run/target"), runTarget());
}

}  // namespace mnv2::ui
