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
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "common/cuda_options.h"
#include "mnv2/backend.h"
#include "models/report_access.h"
#include "widgets/backend_picker.h"

namespace mnv2::ui {

namespace {

QSpinBox* spin(QWidget* parent, int lo, int hi, int value, const QString& objectName) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setValue(value);
  s->setObjectName(objectName);
  return s;
}

}  // namespace

RunSettingsPanel::RunSettingsPanel(QWidget* parent) : QWidget(parent) {
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
  m_cudaVariant = new QComboBox(this);
  m_cudaVariant->setObjectName(QStringLiteral("cudaVariantCombo"));
  for (auto v : {mnv2::CudaOptions::Variant::fast, mnv2::CudaOptions::Variant::baseline})
    m_cudaVariant->addItem(QString::fromLatin1(mnv2::to_string(v)), static_cast<int>(v));
  m_cudaVariant->setToolTip(
      QStringLiteral("cuda backend: fast (NHWC, fused epilogues, every mode) or baseline (NCHW, "
                     "im2col + tiled GEMM, fp32 only: the optimisation story's start)"));
  m_cudaFusion = new QComboBox(this);
  m_cudaFusion->setObjectName(QStringLiteral("cudaFusionCombo"));
  for (auto f :
       {mnv2::CudaOptions::Fusion::none, mnv2::CudaOptions::Fusion::expand_dw, mnv2::CudaOptions::Fusion::block})
    m_cudaFusion->addItem(QString::fromLatin1(mnv2::to_string(f)), static_cast<int>(f));
  m_cudaFusion->setToolTip(
      QStringLiteral("cuda backend: expand_dw runs a block's expansion 1x1 and depthwise 3x3 as "
                     "one kernel where that pays (fp32); block runs each inverted-residual block "
                     "(expansion, depthwise, projection, residual) as one kernel (fp16)"));
  m_cudaGraph = new QComboBox(this);
  m_cudaGraph->setObjectName(QStringLiteral("cudaGraphCombo"));
  for (auto g : {mnv2::CudaOptions::Graph::automatic, mnv2::CudaOptions::Graph::on, mnv2::CudaOptions::Graph::off})
    m_cudaGraph->addItem(QString::fromLatin1(mnv2::to_string(g)), static_cast<int>(g));
  m_cudaGraph->setToolTip(
      QStringLiteral("cuda backend: replay one CUDA graph per run (auto: unless steps are timed by "
                     "events), always, or never"));
  m_cudaTile = new QLineEdit(this);
  m_cudaTile->setObjectName(QStringLiteral("cudaTileEdit"));
  m_cudaTile->setPlaceholderText(QStringLiteral("cost model"));
  m_cudaTile->setToolTip(
      QStringLiteral("cuda backend: force one GEMM tile (128x128, 128x64, 64x64, 128x32, 32x32) "
                     "for tuning experiments; empty: the planner chooses"));
  setCudaOptions(frontend::resolve_cuda_options({}, {}, {}, {}));
  m_cudnnVariant = new QComboBox(this);
  m_cudnnVariant->setObjectName(QStringLiteral("cudnnVariantCombo"));
  for (auto v : {mnv2::CudnnOptions::Variant::fused, mnv2::CudnnOptions::Variant::naive})
    m_cudnnVariant->addItem(QString::fromLatin1(mnv2::to_string(v)), static_cast<int>(v));
  m_cudnnVariant->setToolTip(
      QStringLiteral("cudnn backend: fused (cuDNN graph API: conv + bias + ReLU6 + residual add in one step, "
                     "autotuned, plan cache) or naive (one legacy cuDNN call per layer, NCHW)"));
  m_cudnnGraph = new QComboBox(this);
  m_cudnnGraph->setObjectName(QStringLiteral("cudnnGraphCombo"));
  for (auto g : {mnv2::CudnnOptions::Graph::automatic, mnv2::CudnnOptions::Graph::on, mnv2::CudnnOptions::Graph::off})
    m_cudnnGraph->addItem(QString::fromLatin1(mnv2::to_string(g)), static_cast<int>(g));
  m_cudnnGraph->setToolTip(
      QStringLiteral("cudnn backend: replay one CUDA graph per run (auto: unless steps are timed by events; on: "
                     "also for CUPTI per-step timing; off: never)"));
  m_cudnnLayout = new QComboBox(this);
  m_cudnnLayout->setObjectName(QStringLiteral("cudnnLayoutCombo"));
  for (auto l :
       {mnv2::CudnnOptions::Layout::automatic, mnv2::CudnnOptions::Layout::nchw, mnv2::CudnnOptions::Layout::nhwc})
    m_cudnnLayout->addItem(QString::fromLatin1(mnv2::to_string(l)), static_cast<int>(l));
  m_cudnnLayout->setToolTip(
      QStringLiteral("cudnn backend, fused variant: activation layout (auto: NHWC in tf32 and fp16, NCHW in fp32)"));
  m_input = new QComboBox(this);
  m_input->setObjectName(QStringLiteral("inputCombo"));
  m_input->addItem(QStringLiteral("opened image"));
  m_input->addItem(QStringLiteral("random tensor (seed 1)"));
  m_height = spin(this, 32, 4096, 224, QStringLiteral("heightSpin"));
  m_width = spin(this, 32, 4096, 224, QStringLiteral("widthSpin"));
  m_batch = spin(this, 1, 4096, 1, QStringLiteral("batchSpin"));
  m_warmup = spin(this, 0, 100000, 3, QStringLiteral("warmupSpin"));
  m_iters = spin(this, 1, 1000000, 20, QStringLiteral("itersSpin"));
  m_batch->setToolTip(QStringLiteral("Images per forward pass; the opened image is repeated over the batch"));
  m_warmup->setToolTip(QStringLiteral("Untimed runs before each of the two timed phases"));
  m_iters->setToolTip(QStringLiteral("Timed runs in each phase (end-to-end, then per layer)"));
  m_cpuThreads = spin(this, 0, 4096, 0, QStringLiteral("cpuThreadsSpin"));
  m_cpuThreads->setSpecialValueText(QStringLiteral("default"));
  m_cpuThreads->setToolTip(
      QStringLiteral("Host threads of the cpu backends; default: $MNV2_CPU_THREADS, else one per core. Pin it for "
                     "benchmarks; on a busy machine fewer threads than free cores keep the tail short."));

  auto* sizeRow = new QHBoxLayout;
  sizeRow->addWidget(m_height);
  sizeRow->addWidget(new QLabel(QStringLiteral("×"), this));
  sizeRow->addWidget(m_width);

  m_run = new QPushButton(QStringLiteral("Run"), this);
  m_run->setObjectName(QStringLiteral("runButton"));
  m_run->setToolTip(QStringLiteral("Profile the selected backend (F5)"));
  m_compare = new QPushButton(QStringLiteral("Compare"), this);
  m_compare->setObjectName(QStringLiteral("compareButton"));
  m_compare->setToolTip(QStringLiteral("Profile every available backend and diff their outputs against cpu (F6)"));
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

  auto* form = new QFormLayout;
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
  form->addRow(QStringLiteral("cuda variant"), m_cudaVariant);
  form->addRow(QStringLiteral("cuda fusion"), m_cudaFusion);
  form->addRow(QStringLiteral("cuda graph"), m_cudaGraph);
  form->addRow(QStringLiteral("cuda GEMM tile"), m_cudaTile);
  form->addRow(QStringLiteral("cudnn variant"), m_cudnnVariant);
  form->addRow(QStringLiteral("cudnn graph"), m_cudnnGraph);
  form->addRow(QStringLiteral("cudnn layout"), m_cudnnLayout);
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
  connect(m_input, &QComboBox::currentIndexChanged, this, [this] { updateEnabled(); });
  setImageName(QString());
  updateEnabled();
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

mnv2::TimerKind RunSettingsPanel::timer() const { return static_cast<mnv2::TimerKind>(m_timer->currentData().toInt()); }

mnv2::CudaOptions RunSettingsPanel::cudaOptions() const {
  mnv2::CudaOptions o;
  o.variant = static_cast<mnv2::CudaOptions::Variant>(m_cudaVariant->currentData().toInt());
  o.fusion = static_cast<mnv2::CudaOptions::Fusion>(m_cudaFusion->currentData().toInt());
  o.graph = static_cast<mnv2::CudaOptions::Graph>(m_cudaGraph->currentData().toInt());
  o.gemm_tile = m_cudaTile->text().trimmed().toStdString();
  return o;
}

mnv2::CudnnOptions RunSettingsPanel::cudnnOptions() const {
  mnv2::CudnnOptions o;
  o.variant = static_cast<mnv2::CudnnOptions::Variant>(m_cudnnVariant->currentData().toInt());
  o.graph = static_cast<mnv2::CudnnOptions::Graph>(m_cudnnGraph->currentData().toInt());
  o.layout = static_cast<mnv2::CudnnOptions::Layout>(m_cudnnLayout->currentData().toInt());
  return o;
}

void RunSettingsPanel::setCudnnOptions(const mnv2::CudnnOptions& o) {
  m_cudnnVariant->setCurrentIndex(m_cudnnVariant->findData(static_cast<int>(o.variant)));
  m_cudnnGraph->setCurrentIndex(m_cudnnGraph->findData(static_cast<int>(o.graph)));
  m_cudnnLayout->setCurrentIndex(m_cudnnLayout->findData(static_cast<int>(o.layout)));
}

void RunSettingsPanel::setCudaOptions(const mnv2::CudaOptions& o) {
  m_cudaVariant->setCurrentIndex(m_cudaVariant->findData(static_cast<int>(o.variant)));
  m_cudaFusion->setCurrentIndex(m_cudaFusion->findData(static_cast<int>(o.fusion)));
  m_cudaGraph->setCurrentIndex(m_cudaGraph->findData(static_cast<int>(o.graph)));
  m_cudaTile->setText(QString::fromStdString(o.gemm_tile));
}

void RunSettingsPanel::setTimer(mnv2::TimerKind timer) {
  const int i = m_timer->findData(static_cast<int>(timer));
  if (i >= 0) m_timer->setCurrentIndex(i);
}

int RunSettingsPanel::cpuThreads() const { return m_cpuThreads->value(); }
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

void RunSettingsPanel::setImageName(const QString& name) {
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
  const QString of =
      p.backendCount > 1 ? QStringLiteral(" (%1 of %2)").arg(p.backendIndex + 1).arg(p.backendCount) : QString();
  m_status->setText(QStringLiteral("%1%2: %3 %4/%5").arg(p.backend, of, p.phase).arg(p.done).arg(p.total));
}

void RunSettingsPanel::setStatus(const QString& text) { m_status->setText(text); }

void RunSettingsPanel::updateEnabled() {
  const bool gpu = !backend().isEmpty() && !mnv2::is_host_backend(backend().toStdString());
  m_timer->setEnabled(gpu && !m_running);
  m_timer->setToolTip(gpu ? QStringLiteral("cudaEvent: events around each layer; CUPTI: GPU kernel time from activity "
                                           "records, with kernel names")
                          : QStringLiteral("The cpu backends are always timed with the host clock"));
  const bool random = !useImage();
  m_height->setEnabled(random && !m_running);
  m_width->setEnabled(random && !m_running);
  const QString sizeTip = random ? QStringLiteral("Height × width of the random input tensor")
                                 : QStringLiteral("An image is resized and cropped as the model's preprocessing says");
  m_height->setToolTip(sizeTip);
  m_width->setToolTip(sizeTip);
  for (QWidget* w :
       std::initializer_list<QWidget*>{m_backend, m_precision, m_input, m_batch, m_warmup, m_iters, m_cpuThreads})
    w->setEnabled(!m_running);
  // Compare runs every available backend in the chosen mode; one that does not run it runs fp32 (the cpu
  // reference stays fp32): said here, before the run, not as a failure after it.
  QStringList fp32Only;
  if (precision() != mnv2::Precision::fp32)
    for (const QString& name : availableBackends())
      if (const BackendStatus* b = m_backend->status(name); b && !b->supports(precision())) fp32Only << name;
  m_precisionNote->setVisible(!fp32Only.isEmpty());
  m_precisionNote->setText(QStringLiteral("Compare: %1 run%2 fp32 (no %3 there); %4 against it is judged by the "
                                          "reduced-precision bound.")
                               .arg(fp32Only.join(QStringLiteral(", ")),
                                    fp32Only.size() == 1 ? QStringLiteral("s") : QString(), precisionName(precision()),
                                    precisionName(precision())));
  m_run->setEnabled(!m_running && !backend().isEmpty());
  m_compare->setEnabled(!m_running && !availableBackends().isEmpty());
  m_cancel->setEnabled(m_running);
}

void RunSettingsPanel::loadSettings(const QSettings& s) {
  selectBackend(s.value(QStringLiteral("run/backend"), QStringLiteral("cpu")).toString());
  const QString precisionText = s.value(QStringLiteral("run/precision"), QStringLiteral("fp32")).toString();
  try {
    setPrecision(mnv2::parse_precision(precisionText.toStdString()));
  } catch (const std::exception&) {  // a hand-edited settings file: keep fp32
  }
  setTimer(static_cast<mnv2::TimerKind>(
      s.value(QStringLiteral("run/timer"), static_cast<int>(mnv2::TimerKind::cuda_event)).toInt()));
  setCounts(s.value(QStringLiteral("run/batch"), 1).toInt(), s.value(QStringLiteral("run/warmup"), 3).toInt(),
            s.value(QStringLiteral("run/iterations"), 20).toInt());
  m_height->setValue(s.value(QStringLiteral("run/height"), 224).toInt());
  m_width->setValue(s.value(QStringLiteral("run/width"), 224).toInt());
  m_cpuThreads->setValue(s.value(QStringLiteral("run/cpuThreads"), 0).toInt());
  // Saved options win over the environment's overrides, which gave the start values; a hand-edited bad value
  // keeps what is there.
  const mnv2::CudaOptions start = cudaOptions();
  try {
    mnv2::CudaOptions o;
    o.variant = mnv2::parse_cuda_variant(
        s.value(QStringLiteral("run/cudaVariant"), QString::fromLatin1(mnv2::to_string(start.variant)))
            .toString()
            .toStdString());
    o.fusion = mnv2::parse_cuda_fusion(
        s.value(QStringLiteral("run/cudaFusion"), QString::fromLatin1(mnv2::to_string(start.fusion)))
            .toString()
            .toStdString());
    o.graph = mnv2::parse_cuda_graph(
        s.value(QStringLiteral("run/cudaGraph"), QString::fromLatin1(mnv2::to_string(start.graph)))
            .toString()
            .toStdString());
    o.gemm_tile =
        s.value(QStringLiteral("run/cudaGemmTile"), QString::fromStdString(start.gemm_tile)).toString().toStdString();
    setCudaOptions(o);
  } catch (const std::exception&) {
  }
  try {
    const mnv2::CudnnOptions start_cudnn = cudnnOptions();
    auto text = [&s](const char* key, const char* fallback) {
      return s.value(QString::fromLatin1(key), QString::fromLatin1(fallback)).toString().toStdString();
    };
    mnv2::CudnnOptions o;
    o.variant = mnv2::parse_cudnn_variant(text("run/cudnnVariant", mnv2::to_string(start_cudnn.variant)));
    o.graph = mnv2::parse_cudnn_graph(text("run/cudnnGraph", mnv2::to_string(start_cudnn.graph)));
    o.layout = mnv2::parse_cudnn_layout(text("run/cudnnLayout", mnv2::to_string(start_cudnn.layout)));
    setCudnnOptions(o);
  } catch (const std::exception&) {
  }
}

void RunSettingsPanel::saveSettings(QSettings& s) const {
  if (!backend().isEmpty()) s.setValue(QStringLiteral("run/backend"), backend());
  s.setValue(QStringLiteral("run/precision"), precisionName(precision()));
  s.setValue(QStringLiteral("run/timer"), static_cast<int>(timer()));
  s.setValue(QStringLiteral("run/batch"), batch());
  s.setValue(QStringLiteral("run/warmup"), warmup());
  s.setValue(QStringLiteral("run/iterations"), iterations());
  s.setValue(QStringLiteral("run/height"), m_height->value());
  s.setValue(QStringLiteral("run/width"), m_width->value());
  s.setValue(QStringLiteral("run/cpuThreads"), cpuThreads());
  const mnv2::CudaOptions o = cudaOptions();
  s.setValue(QStringLiteral("run/cudaVariant"), QString::fromLatin1(mnv2::to_string(o.variant)));
  s.setValue(QStringLiteral("run/cudaFusion"), QString::fromLatin1(mnv2::to_string(o.fusion)));
  s.setValue(QStringLiteral("run/cudaGraph"), QString::fromLatin1(mnv2::to_string(o.graph)));
  s.setValue(QStringLiteral("run/cudaGemmTile"), QString::fromStdString(o.gemm_tile));
  const mnv2::CudnnOptions c = cudnnOptions();
  s.setValue(QStringLiteral("run/cudnnVariant"), QString::fromLatin1(mnv2::to_string(c.variant)));
  s.setValue(QStringLiteral("run/cudnnGraph"), QString::fromLatin1(mnv2::to_string(c.graph)));
  s.setValue(QStringLiteral("run/cudnnLayout"), QString::fromLatin1(mnv2::to_string(c.layout)));
}

}  // namespace mnv2::ui
