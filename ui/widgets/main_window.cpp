// The main window (see main_window.h).
#include "widgets/main_window.h"
#include "mnv2/build_info.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "common/environment.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/eval_report.h"
#include "mnv2/output_files.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/roofline_report.h"
#include "models/layer_selection.h"
#include "models/layer_table_model.h"
#include "models/report_catalog.h"
#include "models/run_differences.h"
#include "models/targets_model.h"
#include "run_controller.h"
#include "widgets/accuracy_page.h"
#include "widgets/comparison_page.h"
#include "widgets/deep_dive_page.h"
#include "widgets/diffs_page.h"
#include "widgets/elided_label.h"
#include "widgets/input_panel.h"
#include "widgets/kernel_lab_page.h"
#include "widgets/network_graph_view.h"
#include "widgets/roofline_page.h"
#include "widgets/run_settings_panel.h"
#include "widgets/runs_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/targets_dialog.h"
#include "widgets/timeline_page.h"
#include "widgets/timings_page.h"
#include "widgets/topology_page.h"

namespace mnv2::ui {

namespace {

constexpr int kMaxRecent = 8;
// More shown runs than this are named by their first and last in the titles ("run 1 … run 20, 20 runs").
constexpr qsizetype kRunsNamedInTitles = 3;
const QString kRecentImages = QStringLiteral("recent/images");
const QString kRecentReports = QStringLiteral("recent/reports");

// A status bar field: elided where the bar is too narrow for every field (1280×720), the whole text as tool-tip.
QLabel* statusField(QWidget* parent, const QString& objectName) {
  auto* l = new ElidedLabel(parent);
  l->setObjectName(objectName);
  l->setContentsMargins(6, 0, 6, 0);
  return l;
}

// `requested`: the mode the run asked for, when known; a backend that ran fp32 instead is named. `names`: each
// run's name on the pages (RunIdentity), one per report; without them, the runs' labels.
QString describeRun(const std::vector<ReportPtr>& reports, std::optional<mnv2::Precision> requested = {},
                    const QStringList& names = {}) {
  const mnv2::RunReport& r = *reports.front();
  // Each backend once, with how many runs used it, when there are more runs than a line holds.
  QStringList backends;
  for (const auto& x : reports) backends << runLabel(*x);
  if (backends.size() > kRunsNamedInTitles) {
    QStringList once;
    for (const QString& b : backends)
      if (!once.contains(b)) once << b;
    for (QString& b : once) b += QStringLiteral(" ×%1").arg(backends.count(b));
    backends = once;
  }
  // The settings the title states: once when the engine's comparability rule finds every run alike in it, else
  // on each run's line with that run's value (the rule's names and values).
  const RunsDifferences differ = differencesAmong(reports);
  const std::pair<const char*, QString> stated[] = {
      {"input", QStringLiteral("input ") + QFileInfo(QString::fromStdString(r.config.input_name)).fileName()},
      {"batch", QStringLiteral("batch %1").arg(r.config.batch)},
      {"input size", QStringLiteral("%1×%2").arg(r.config.height).arg(r.config.width)},
      {"iterations", QStringLiteral("%1 warm-up + %2 timed runs per phase").arg(r.config.warmup).arg(r.config.iters)}};
  QStringList shared;
  std::vector<const RunsDifferences::Setting*> own;
  for (const auto& [setting, text] : stated) {
    if (const RunsDifferences::Setting* s = differ.find(setting))
      own.push_back(s);
    else
      shared << text.toHtmlEscaped();
  }
  QString text = QStringLiteral("<b>%1</b>").arg(backends.join(QStringLiteral(" vs ")));
  if (!shared.isEmpty()) text += QStringLiteral(" — ") + shared.join(QStringLiteral(", "));
  for (size_t i = 0; i < reports.size(); ++i) {
    const ReportPtr& x = reports[i];
    if (requested && x->config.precision != *requested) {
      text +=
          QStringLiteral("<br><i>%1 ran %2: it does not run %3%4</i>")
              .arg(QString::fromStdString(x->backend), precisionName(x->config.precision), precisionName(*requested),
                   x == reports.front() && reports.size() > 1
                       ? QStringLiteral(" (the reference of the diffs stays fp32; the others are judged by the "
                                        "reduced-precision bound)")
                       : QString());
    }
    QStringList values;
    for (const RunsDifferences::Setting* s : own)
      values << QString::fromStdString(s->name + " " + s->values[i]).toHtmlEscaped();
    // A remote run's label ends with where it ran ("... on h200 (gpu-node-3)"): the device follows a dash.
    text += QStringLiteral("<br>%1%2%3%4 (%5): end to end %6 ms median (%7 images/s); sum of layer medians %8 ms")
                .arg(values.isEmpty() ? QString() : values.join(QStringLiteral(", ")) + QStringLiteral(" — "),
                     (names.size() == static_cast<qsizetype>(reports.size()) ? names[static_cast<qsizetype>(i)]
                                                                             : runLabel(*x))
                         .toHtmlEscaped(),
                     x->origin.target.empty() ? QStringLiteral(" on ") : QStringLiteral(" — "),
                     QString::fromStdString(x->device).toHtmlEscaped(), QString::fromStdString(x->timer))
                .arg(x->end_to_end.gpu_ms ? x->end_to_end.gpu_ms->median : x->end_to_end.host_ms.median, 0, 'f', 3)
                .arg(x->end_to_end.images_per_s, 0, 'f', 1)
                .arg(x->sum_of_steps_ms, 0, 'f', 3);
  }
  return text;
}

}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), m_options(options) {
  setObjectName(QStringLiteral("mainWindow"));
  setWindowTitle(QStringLiteral("mnv2-profiler"));
  setWindowIcon(QIcon(QStringLiteral(":/mnv2/mnv2-profiler.png")));
  setAcceptDrops(true);

  m_controller = new RunController(this);
  m_catalog = new ReportCatalog(this);
  m_selection = new LayerSelection(this);
  m_layers = new LayerTableModel(this);

  // Left: the input (image, crop, top-5) and the run settings.
  m_input = new InputPanel(this);
  m_settings = new RunSettingsPanel(this);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(4, 4, 4, 4);  // the group boxes have margins of their own
  auto* inputBox = new QGroupBox(QStringLiteral("Input"), left);
  (new QVBoxLayout(inputBox))->addWidget(m_input);
  auto* runBox = new QGroupBox(QStringLiteral("Run"), left);
  (new QVBoxLayout(runBox))->addWidget(m_settings);
  leftLayout->addWidget(inputBox);
  leftLayout->addWidget(runBox);
  leftLayout->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(left);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // The run controls below the scrolling part: always in view, at 1024×700 too.
  auto* dockBody = new QWidget(this);
  auto* dockLayout = new QVBoxLayout(dockBody);
  dockLayout->setContentsMargins(0, 0, 0, 0);
  dockLayout->addWidget(scroll, 1);
  auto* controlsBox = new QWidget(dockBody);
  auto* controlsLayout = new QVBoxLayout(controlsBox);
  controlsLayout->setContentsMargins(9, 0, 9, 6);
  controlsLayout->addWidget(m_settings->runControls());
  dockLayout->addWidget(controlsBox);
  auto* dock = new QDockWidget(QStringLiteral("Input and run"), this);
  dock->setObjectName(QStringLiteral("inputDock"));
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  dock->setWidget(dockBody);
  // Never narrower than its content beside the vertical scroll bar: a wider content would scroll sideways
  // (the scroll area follows the focused field), cutting the labels at the left edge.
  scroll->setObjectName(QStringLiteral("inputScroll"));
  dock->setMinimumWidth(std::max(330, left->minimumSizeHint().width() +
                                          scroll->verticalScrollBar()->sizeHint().width() + 2 * scroll->frameWidth()));
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  // Bottom: the run history. Every run is kept; checked runs are shown on the pages.
  m_runs = new RunsPanel(m_catalog, this);
  m_runsDock = new QDockWidget(QStringLiteral("Runs"), this);
  m_runsDock->setObjectName(QStringLiteral("runsDock"));
  m_runsDock->setWidget(m_runs);
  addDockWidget(Qt::BottomDockWidgetArea, m_runsDock);
  resizeDocks({m_runsDock}, {150}, Qt::Vertical);

  // Centre: the synthetic-weights banner over the tabs.
  m_banner = new QLabel(this);
  m_banner->setObjectName(QStringLiteral("syntheticBanner"));
  m_banner->setWordWrap(true);
  m_banner->setStyleSheet(QStringLiteral(
      "background: #fff3cd; color: #664d03; border: 1px solid #e0c36c; padding: 6px; font-weight: bold;"));
  m_banner->hide();
  m_reliability = new ElidedLabel(this);
  m_reliability->setObjectName(QStringLiteral("reliabilityBanner"));
  // One line per run, elided at the right when narrow; each line whole, and every reason, in the tool-tip.
  m_reliability->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  m_reliability->setStyleSheet(
      QStringLiteral("background: #f8d7da; color: #58151c; border: 1px solid #e0a0a6; padding: 4px;"));
  m_reliability->hide();
  m_tabs = new QTabWidget(this);
  m_tabs->setObjectName(QStringLiteral("tabs"));
  m_topology = new TopologyPage(m_layers, m_selection, m_tabs);
  m_timings = new TimingsPage(m_selection, m_tabs);
  m_timeline = new TimelinePage(m_tabs);
  m_diffs = new DiffsPage(m_selection, m_tabs);
  m_comparison = new ComparisonPage(m_catalog, m_selection, m_tabs);
  m_graph = new GraphPage(m_selection, m_tabs);
  m_roofline = new RooflinePage(m_selection, m_tabs);
  m_sweep = new SweepPage(m_tabs);
  m_accuracy = new AccuracyPage(m_tabs);
  m_accuracy->setObjectName(QStringLiteral("accuracyPage"));
  m_tabs->addTab(m_topology, QStringLiteral("Topology"));
  m_tabs->addTab(m_timings, QStringLiteral("Timings"));
  m_tabs->addTab(m_timeline, QStringLiteral("Timeline"));
  m_tabs->addTab(m_diffs, QStringLiteral("Diffs"));
  m_tabs->addTab(m_comparison, QStringLiteral("Run comparison"));
  m_tabs->addTab(m_graph, QStringLiteral("Graph"));
  m_tabs->addTab(m_roofline, QStringLiteral("Roofline && memory"));
  m_tabs->addTab(m_sweep, QStringLiteral("Sweep"));
  m_tabs->addTab(m_accuracy, QStringLiteral("Accuracy"));
  m_lab = new KernelLabPage(m_tabs);
  m_lab->setConfirmations(!m_options.scripted);
  m_tabs->addTab(m_lab, QStringLiteral("Kernel lab"));
  m_deepDive = new DeepDivePage(m_catalog, m_selection, m_tabs);
  m_tabs->addTab(m_deepDive, QStringLiteral("Deep dive"));
  auto* centre = new QWidget(this);
  auto* centreLayout = new QVBoxLayout(centre);
  centreLayout->setContentsMargins(4, 4, 4, 0);
  centreLayout->addWidget(m_banner);
  centreLayout->addWidget(m_reliability);
  centreLayout->addWidget(m_tabs, 1);
  setCentralWidget(centre);

  buildMenus();
  buildStatusBar();
  connectController();

  connect(m_settings, &RunSettingsPanel::runClicked, this, [this] { startRun(false); });
  connect(m_settings, &RunSettingsPanel::compareClicked, this, [this] { startRun(true); });
  connect(m_settings, &RunSettingsPanel::deviceChanged, this, [this] {
    showGpu();
    m_lab->setDevice(m_settings->device());
  });
  connect(m_settings, &RunSettingsPanel::cancelClicked, this, [this] { cancelRun(); });
  connect(m_settings, &RunSettingsPanel::backendChanged, this, [this](const QString& backend) {
    // The predictions follow the chosen backend (one forward pass).
    if (m_image && !backend.isEmpty() && backend != m_image->backend && m_settings->runTarget().isEmpty())
      classifyCurrent(m_image->imagePath);
  });
  connect(m_accuracy, &AccuracyPage::runRequested, this, [this] { startEval(); });
  connect(m_accuracy, &AccuracyPage::cancelRequested, this, [this] { cancelRun(); });
  connect(m_accuracy, &AccuracyPage::imageRequested, this, [this](const QString& path) { openImage(path); });
  connect(m_accuracy, &AccuracyPage::exportRequested, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, QStringLiteral("Export the evaluation"),
        QDir(lastFolder(QStringLiteral("exports")))
            .filePath(QStringLiteral("mnv2-eval-%1.csv")
                          .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))),
        QStringLiteral("CSV (*.csv)"));
    if (!path.isEmpty()) exportEvalCsv(path);
  });
  connect(m_lab, &KernelLabPage::runningChanged, this, [this] { updateActions(); });
  connect(m_lab, &KernelLabPage::modifiedChanged, this, [this](bool modified) {
    m_tabs->setTabText(m_tabs->indexOf(m_lab),
                       modified ? QStringLiteral("Kernel lab *") : QStringLiteral("Kernel lab"));
  });
  connect(m_diffs, &DiffsPage::computeRequested, this,
          [this](const QString& backend, const QString& reference) { computeDiff(backend, reference); });
  connect(m_diffs, &DiffsPage::currentDiffChanged, this, [this](DiffPtr diff) { m_graph->view()->setDiff(diff); });
  connect(m_catalog, &ReportCatalog::shownChanged, this, [this] { showShown(); });
  connect(m_runs, &RunsPanel::compareRequested, this, [this](int a, int b) {
    m_comparison->selectRuns(a, b);
    m_tabs->setCurrentWidget(m_comparison);
  });
  connect(m_runs, &RunsPanel::saveRequested, this, [this] { saveSessionInteractive(); });

  // Where runs go: the targets file's targets in the Run-on chooser, re-read when it changes and as the chooser
  // opens; the choice (a saved setting of its own) sets what the panel offers and what runs here only.
  m_targets = new TargetsModel(QString::fromStdString(frontend::remote_environment().targets_file), this);
  m_settings->setTargets(m_targets->targets(), m_targets->error());
  connect(m_targets, &TargetsModel::targetsChanged, this, [this] {
    m_settings->setTargets(m_targets->targets(), m_targets->error());
    applyRunTarget();
  });
  connect(m_settings, &RunSettingsPanel::targetsWanted, this, [this] { m_targets->reload(); });
  connect(m_settings, &RunSettingsPanel::runTargetChanged, this, [this] { applyRunTarget(); });
  connect(m_settings, &RunSettingsPanel::manageTargetsClicked, this, [this] { targetsDialog(true); });
  connect(m_controller, &RunController::targetProbed, this, [this](const TargetProbe& p) {
    const bool chosen = p.target == m_settings->runTarget();
    if (p.ok) {
      m_targetProbes.insert(p.target, p.result);
      if (chosen) applyRunTarget();
    }
    if (p.id != m_choiceProbe) return;
    m_choiceProbe = 0;
    if (!chosen || m_controller->isRunning()) return;
    if (!p.ok) {
      m_settings->setStatus(
          QStringLiteral("Profile and Compare run on %1, which did not answer a probe: %2").arg(p.target, p.error));
      return;
    }
    QStringList gpus, backends;
    for (const mnv2::remote::ProbeGpu& g : p.result.gpus) gpus << shownText(mnv2::printable(g.name));
    for (const mnv2::remote::ProbeBackend& b : p.result.backends)
      if (b.available) backends << shownText(mnv2::printable(b.name));
    m_settings->setStatus(QStringLiteral("Profile and Compare run on %1 (%2): %3; backends %4")
                              .arg(p.target, shownText(mnv2::printable(p.result.host)),
                                   gpus.isEmpty() ? QStringLiteral("no GPU")
                                                  : QStringLiteral("GPU %1").arg(gpus.join(QStringLiteral(", "))),
                                   backends.isEmpty() ? QStringLiteral("none") : backends.join(QStringLiteral(", "))));
  });

  // The first start: nine tenths of the screen's free area, at most 1500×950, centred (a fixed 1500×950 ran off a
  // 1280×720 screen). A saved geometry replaces it (loadSettings).
  if (const QScreen* screen = this->screen()) {
    const QRect available = screen->availableGeometry();
    const QSize size =
        QSize(1500, 950).boundedTo(available.size() * 0.9).expandedTo(minimumSizeHint()).boundedTo(available.size());
    setGeometry(QStyle::alignedRect(Qt::LeftToRight, Qt::AlignCenter, size, available));
  } else {
    resize(1500, 950);
  }
  if (m_options.useSettings) loadSettings();
  applyRunTarget();
  updateActions();
}

TargetsDialog* MainWindow::targetsDialog(bool show) {
  if (!m_targetsDialog) {
    m_targetsDialog = new TargetsDialog(m_targets, m_controller, this);
    connect(m_targetsDialog, &TargetsDialog::connected, this,
            [this](const mnv2::remote::Target& t) { m_controller->noteTargetUsed(t); });
  }
  if (show) {
    m_targets->reload();
    m_targetsDialog->show();
    m_targetsDialog->raise();
    m_targetsDialog->activateWindow();
  }
  return m_targetsDialog;
}

const mnv2::remote::ProbeResult* MainWindow::targetProbe(const QString& name) const {
  const auto it = m_targetProbes.constFind(name);
  return it == m_targetProbes.constEnd() ? nullptr : &*it;
}

QString MainWindow::remoteRefusal(const QString& what) const {
  const QString target = m_settings->runTarget();
  if (target.isEmpty()) return {};
  return QStringLiteral(
             "%1 run on this machine only, for now, and Run on is the remote target '%2': choose This "
             "machine to run it here (Profile and Compare run on the target)")
      .arg(what, target);
}

void MainWindow::applyRunTarget() {
  const QString name = m_settings->runTarget();
  const bool changed = name != m_appliedTarget;
  m_appliedTarget = name;
  m_sweep->setRemoteRefusal(remoteRefusal(QStringLiteral("Sweeps")));
  m_accuracy->setRemoteRefusal(remoteRefusal(QStringLiteral("Evaluations")));
  m_diffs->setRemoteRefusal(remoteRefusal(QStringLiteral("Computed diffs")));
  m_roofline->setRemoteRefusal(
      remoteRefusal(QStringLiteral("The ceilings are measured on the machine that runs: they")));
  m_lab->setRemoteRefusal(remoteRefusal(QStringLiteral("Kernel lab jobs")));
  updateLabActions();
  if (name.isEmpty()) {
    if (m_backends.empty()) return;  // this machine is not probed yet: onEnvironment() comes back here
    m_settings->setBackends(m_backends);
    m_settings->setDevices(m_cuda.devices);
    if (changed) m_settings->setStatus(QStringLiteral("runs here"));
    return;
  }
  // The target's backends as its probe answered; before a probe, every backend this version knows (the target runs
  // the same version), and the target's mnv2 answers when the run starts. The modes are the target's to decide too:
  // a mode a backend does not run there is refused by it, or runs fp32 as its report says.
  const mnv2::remote::ProbeResult* probe = targetProbe(name);
  std::vector<BackendStatus> backends;
  for (const std::string& b : mnv2::backend_names()) {
    BackendStatus s;
    s.name = QString::fromStdString(b);
    s.precisions = {mnv2::Precision::fp32, mnv2::Precision::tf32, mnv2::Precision::fp16};
    if (probe == nullptr) {
      s.available = true;
      s.description = QStringLiteral(
                          "on target %1 (not probed: Targets… > Probe says what it has; the target "
                          "answers when the run starts)")
                          .arg(name);
    } else {
      const auto found = std::find_if(probe->backends.begin(), probe->backends.end(),
                                      [&](const mnv2::remote::ProbeBackend& p) { return p.name == b; });
      s.available = found != probe->backends.end() && found->available;
      s.reason = found == probe->backends.end()
                     ? QStringLiteral("target %1's mnv2 does not know it").arg(name)
                     : QStringLiteral("on target %1: %2").arg(name, shownText(mnv2::printable(found->reason)));
      s.description = QStringLiteral("on target %1 (%2)").arg(name, shownText(mnv2::printable(probe->host)));
    }
    backends.push_back(s);
  }
  m_settings->setBackends(backends);
  std::vector<mnv2::GpuDevice> devices;
  if (probe != nullptr) {
    for (const mnv2::remote::ProbeGpu& g : probe->gpus) {
      mnv2::GpuDevice d;
      d.index = g.index;
      d.name = mnv2::printable(g.name) + " on " + name.toStdString();
      devices.push_back(d);
    }
  } else {
    mnv2::GpuDevice d;
    d.index = 0;
    d.name = "the first GPU of " + name.toStdString() + " (not probed)";
    devices.push_back(d);
  }
  m_settings->setDevices(devices);
  if (!changed) return;
  m_settings->setStatus(
      QStringLiteral("Profile and Compare run on %1; the image's top-5 is computed here (cpu)").arg(name));
  // A plain ssh target is asked what it has as it is chosen (a login, a second or so), so that the backends and GPUs
  // offered are its own; a Slurm target only when asked (Targets… > Probe): its probe takes an allocation.
  const mnv2::remote::Target* target = m_targets->find(name);
  if (probe == nullptr && target != nullptr && !target->slurm) {
    m_choiceProbe = m_controller->probeTarget(*target);
    m_settings->setStatus(QStringLiteral("Profile and Compare run on %1: asking it what it has…").arg(name));
  }
}

MainWindow::~MainWindow() {
  // The scripted mode ends without closing the window: the targets it reached are let go here too (a no-op after
  // closeEvent()).
  m_controller->cancelProbes();
  m_controller->closeConnections();
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  QAction* openImage = file->addAction(QStringLiteral("&Open image…"));
  openImage->setShortcut(QKeySequence::Open);
  connect(openImage, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Open image"), lastFolder(QStringLiteral("images")),
        QStringLiteral("Images (*.bmp *.jpg *.jpeg *.png *.ppm *.tif *.tiff *.webp);;All files (*)"));
    if (!path.isEmpty()) this->openImage(path);
  });
  m_recentImages = file->addMenu(QStringLiteral("Recent &images"));
  QAction* openReport = file->addAction(QStringLiteral("Open &report (JSON)…"));
  openReport->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  connect(openReport, &QAction::triggered, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Open report"), lastFolder(QStringLiteral("reports")),
                                     QStringLiteral("mnv2 reports (*.json);;All files (*)"));
    if (!path.isEmpty()) this->openReport(path);
  });
  m_recentReports = file->addMenu(QStringLiteral("Recent re&ports"));
  m_saveSessionAction = file->addAction(QStringLiteral("&Save session (all runs)…"));
  m_saveSessionAction->setShortcut(QKeySequence::Save);
  connect(m_saveSessionAction, &QAction::triggered, this, [this] { saveSessionInteractive(); });
  file->addSeparator();
  QMenu* exportMenu = file->addMenu(QStringLiteral("&Export"));
  // The sweep, evaluation and roofline results come and go with their pages: asked for as the menu opens.
  connect(exportMenu, &QMenu::aboutToShow, this, [this] { updateActions(); });
  const std::pair<QString, ExportFormat> exports[] = {
      {QStringLiteral("&CSV…"), ExportFormat::Csv},
      {QStringLiteral("&JSON report…"), ExportFormat::Json},
      {QStringLiteral("&Perfetto / Chrome trace…"), ExportFormat::Trace},
      {QStringLiteral("&Sweep CSV…"), ExportFormat::SweepCsv},
      {QStringLiteral("S&weep JSON…"), ExportFormat::SweepJson},
      {QStringLiteral("&Evaluation CSV…"), ExportFormat::EvalCsv},
      {QStringLiteral("E&valuation JSON…"), ExportFormat::EvalJson},
      {QStringLiteral("&Roofline CSV…"), ExportFormat::RooflineCsv},
      {QStringLiteral("R&oofline JSON…"), ExportFormat::RooflineJson}};
  for (const auto& [title, format] : exports) {
    if (format == ExportFormat::SweepCsv || format == ExportFormat::EvalCsv || format == ExportFormat::RooflineCsv)
      exportMenu->addSeparator();
    QAction* a = exportMenu->addAction(title);
    a->setData(static_cast<int>(format));
    connect(a, &QAction::triggered, this, [this, format = format] { exportInteractive(format); });
    m_exportActions << a;
  }
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("&Quit"));
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(QStringLiteral("&Run"));
  m_runAction = run->addAction(QStringLiteral("&Run selected backend"));
  m_runAction->setShortcut(QKeySequence(Qt::Key_F5));
  connect(m_runAction, &QAction::triggered, this, [this] { startRun(false); });
  m_compareAction = run->addAction(QStringLiteral("&Compare all available backends"));
  m_compareAction->setShortcut(QKeySequence(Qt::Key_F6));
  connect(m_compareAction, &QAction::triggered, this, [this] { startRun(true); });
  m_cancelAction = run->addAction(QStringLiteral("C&ancel"));
  m_cancelAction->setShortcut(QKeySequence(Qt::Key_Escape));
  connect(m_cancelAction, &QAction::triggered, this, [this] { cancelRun(); });
  // Deep dive: from the selected layer of Timings, Topology or Run comparison (their context menus too).
  QAction* deepDive = run->addAction(QStringLiteral("&Deep dive into the selected layer (Nsight Compute)"));
  deepDive->setObjectName(QStringLiteral("deepDiveAction"));
  deepDive->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  connect(deepDive, &QAction::triggered, this, &MainWindow::deepDive);
  for (QWidget* page :
       {static_cast<QWidget*>(m_timings), static_cast<QWidget*>(m_topology), static_cast<QWidget*>(m_comparison)}) {
    page->addAction(deepDive);
    page->setContextMenuPolicy(Qt::ActionsContextMenu);
  }

  // The Kernel lab: its jobs and its file, with shortcuts that act while its page is in front.
  m_labMenu = menuBar()->addMenu(QStringLiteral("&Lab"));
  const struct {
    const char* name;
    const char* text;
    QKeySequence keys;
  } labItems[] = {{"compile", "&Compile kernel", QKeySequence(Qt::CTRL | Qt::Key_B)},
                  {"check", "C&heck kernel (no timing)", QKeySequence(Qt::CTRL | Qt::Key_T)},
                  {"run", "&Run kernel", QKeySequence(Qt::CTRL | Qt::Key_R)},
                  {"cancel", "C&ancel kernel job", QKeySequence()},
                  {"template", "&New from template", QKeySequence()},
                  {"open", "&Open kernel…", QKeySequence()},
                  {"save", "&Save kernel", QKeySequence::Save},
                  {"saveAs", "Sa&ve kernel as…", QKeySequence::SaveAs}};
  for (const auto& item : labItems) {
    QAction* a = m_labMenu->addAction(QString::fromUtf8(item.text));
    a->setObjectName(QStringLiteral("lab_") + QString::fromUtf8(item.name));
    a->setData(QString::fromUtf8(item.name));
    a->setShortcut(item.keys);
    const QString name = QString::fromUtf8(item.name);
    connect(a, &QAction::triggered, this, [this, name] {
      m_tabs->setCurrentWidget(m_lab);
      if (name == QLatin1String("compile"))
        m_lab->compile();
      else if (name == QLatin1String("check"))
        m_lab->check();
      else if (name == QLatin1String("run"))
        m_lab->run();
      else if (name == QLatin1String("cancel"))
        m_lab->cancel();
      else if (name == QLatin1String("template"))
        m_lab->newFromTemplate();
      else if (name == QLatin1String("open"))
        m_lab->openInteractive();
      else if (name == QLatin1String("save"))
        m_lab->save();
      else if (name == QLatin1String("saveAs"))
        m_lab->saveAsInteractive();
    });
    if (name == QLatin1String("cancel") || name == QLatin1String("open")) m_labMenu->addSeparator();
    m_labActions << a;
  }
  connect(m_tabs, &QTabWidget::currentChanged, this, [this] { updateLabActions(); });

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  QAction* find = view->addAction(QStringLiteral("&Find layer by name"));
  find->setObjectName(QStringLiteral("findLayerAction"));
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, this, [this] {
    m_tabs->setCurrentWidget(m_topology);
    m_topology->focusNameFilter();
  });
  view->addSeparator();
  for (int i = 0; i < m_tabs->count(); ++i) {
    QAction* a = view->addAction(m_tabs->tabText(i));
    // Ctrl+1 .. Ctrl+9, then Ctrl+0 for the tenth tab.
    if (i < 10) a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(i < 9 ? Qt::Key_1 + i : Qt::Key_0)));
    connect(a, &QAction::triggered, this, [this, i] { m_tabs->setCurrentIndex(i); });
  }

  view->addSeparator();
  QAction* runsToggle = m_runsDock->toggleViewAction();
  runsToggle->setText(QStringLiteral("R&uns panel"));
  runsToggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
  view->addAction(runsToggle);

  QMenu* tools = menuBar()->addMenu(QStringLiteral("&Tools"));
  m_targetsAction = tools->addAction(QStringLiteral("Remote &targets…"));
  m_targetsAction->setObjectName(QStringLiteral("targetsAction"));
  m_targetsAction->setToolTip(QStringLiteral("Add, remove, probe and connect to the targets Run on offers"));
  connect(m_targetsAction, &QAction::triggered, this, [this] { targetsDialog(true); });

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  connect(help->addAction(QStringLiteral("&About")), &QAction::triggered, this,
          [this] { QMessageBox::about(this, QStringLiteral("About mnv2-profiler"), aboutText()); });
  rebuildRecentMenu();
}

QString MainWindow::aboutText() {
  // Every library the programs link (or load: the GPU plugin), with its licence; what this build leaves out is
  // said as such.
  const bool cuda = mnv2::cuda_environment().built_with_cuda;
  const QString nvidia =
      cuda ? QStringLiteral("used by this build's GPU plugin") : QStringLiteral("not in this build (no GPU plugin)");
  return QStringLiteral(
             "<b>mnv2-profiler</b> %1 (commit %2)<br>A visual profiler for MobileNetV2 inference: per-layer timings, "
             "output diffs and comparisons of the cpu, cuDNN and custom CUDA backends.<br><br>"
             "Licence: <b>GPL-3.0-or-later</b> (the LICENSE file; QCustomPlot, which the app links, is GPL-3).<br>"
             "Documentation: the README and docs/ (ARCHITECTURE.md, PERFORMANCE.md, LIMITS.md) — "
             "<a href=\"https://github.com/mnv2-profiler/mnv2-profiler#readme\">"
             "https://github.com/mnv2-profiler/mnv2-profiler</a><br><br>"
             "Third-party software:<ul>"
             "<li>Qt %3 — LGPL-3.0 (The Qt Company)</li>"
             "<li>QCustomPlot — GPL-3.0 (Emanuel Eichhammer)</li>"
             "<li>OpenCV — Apache-2.0 (image decoding and resizing)</li>"
             "<li>ONNX — Apache-2.0 (model import)</li>"
             "<li>Protocol Buffers (protobuf) — BSD-3-Clause</li>"
             "<li>oneDNN — Apache-2.0 (the cpu backend)</li>"
             "<li>GNU OpenMP runtime (libgomp) — GPL-3.0 with the GCC Runtime Library Exception</li>"
             "<li>nlohmann-json — MIT (reports)</li>"
             "<li>CLI11 — BSD-3-Clause (the mnv2 command line)</li>"
             "<li>NVIDIA CUDA runtime, cuBLAS and CUPTI — NVIDIA CUDA Toolkit EULA; %4</li>"
             "<li>NVIDIA cuDNN — NVIDIA cuDNN Software License Agreement; %4</li>"
             "<li>NVIDIA NVTX — Apache-2.0; %4</li>"
             "</ul>")
      .arg(QStringLiteral(MNV2_VERSION), QString::fromLatin1(mnv2::build_commit()), QString::fromLatin1(qVersion()),
           nvidia);
}

void MainWindow::buildStatusBar() {
  m_statusModel = statusField(this, QStringLiteral("statusModel"));
  m_statusGpu = statusField(this, QStringLiteral("statusGpu"));
  m_statusDriver = statusField(this, QStringLiteral("statusDriver"));
  m_statusCuda = statusField(this, QStringLiteral("statusCuda"));
  m_statusCudnn = statusField(this, QStringLiteral("statusCudnn"));
  m_statusModel->setText(QStringLiteral("model: loading…"));
  m_statusGpu->setText(QStringLiteral("GPU: probing…"));
  m_statusCudnn->setText(QStringLiteral("cuDNN: —"));
  m_statusCudnn->setToolTip(QStringLiteral("This machine's cuDNN"));
  m_statusShown = statusField(this, QStringLiteral("statusShown"));
  m_statusShown->hide();  // until runs are shown
  for (QLabel* l : {m_statusModel, m_statusGpu, m_statusDriver, m_statusCuda, m_statusCudnn, m_statusShown})
    statusBar()->addPermanentWidget(l);
  m_statusGpu->setMaximumWidth(420);
}

QString MainWindow::statusText() const {
  QStringList parts;
  for (QLabel* l : {m_statusModel, m_statusGpu, m_statusDriver, m_statusCuda, m_statusCudnn}) parts << l->text();
  if (!m_statusShown->isHidden()) parts << m_statusShown->text();
  return parts.join(QStringLiteral(" | "));
}

void MainWindow::connectController() {
  connect(m_controller, &RunController::environmentReady, this, [this](const EnvironmentInfo& i) { onEnvironment(i); });
  connect(m_controller, &RunController::modelLoaded, this, [this](const ModelInfo& i) { onModel(i); });
  connect(m_controller, &RunController::classified, this, [this](const ClassifyResult& r) { onClassified(r); });
  connect(m_controller, &RunController::progress, this, [this](const RunProgress& p) {
    if (p.id == m_evalJob)
      m_accuracy->setProgress(p);
    else
      m_settings->setProgress(p);
  });
  connect(m_controller, &RunController::evaluated, this, [this](const EvalOutcome& o) { onEvaluated(o); });
  connect(m_controller, &RunController::profiled, this, [this](const ProfileResult& r) { onProfiled(r); });
  connect(m_controller, &RunController::diffed, this, [this](const DiffResult& r) { onDiffed(r); });
  connect(m_controller, &RunController::swept, this, [this](const SweepResult& r) {
    m_sweep->setResults(r.results);
    m_settings->setFinished(true);
    m_settings->setStatus(QStringLiteral("sweep done: %1 points").arg(r.results.size()));
    Q_EMIT runFinished(true);
  });
  connect(m_sweep, &SweepPage::sweepRequested, this, [this] { startSweep(); });
  connect(m_sweep, &SweepPage::exportRequested, this, [this] { exportInteractive(ExportFormat::SweepCsv); });
  connect(m_controller, &RunController::runningChanged, this, [this](bool running) {
    m_settings->setRunning(running);
    m_diffs->setComputing(running);
    m_sweep->setRunning(running);
    m_accuracy->setRunning(running);
    updateActions();
  });
  connect(m_controller, &RunController::cancelled, this, [this](JobId id) {
    if (id == m_evalJob) {
      m_accuracy->setCancelled();
      statusBar()->showMessage(QStringLiteral("Evaluation cancelled"), 5000);
      Q_EMIT evalFinished(false);
      return;
    }
    m_settings->setStatus(QStringLiteral("cancelled"));
    m_settings->setFinished(false);
    statusBar()->showMessage(QStringLiteral("Run cancelled"), 5000);
    Q_EMIT runFinished(false);
  });
  connect(m_controller, &RunController::failed, this, [this](const JobFailure& f) {
    switch (f.kind) {
      case JobKind::Environment:
        reportError(QStringLiteral("Probing the machine failed"), f.message);
        break;
      case JobKind::Model:
        m_statusModel->setText(QStringLiteral("model: none (load failed)"));
        reportError(QStringLiteral("Could not load the model"), f.message);
        Q_EMIT modelReady(false);
        break;
      case JobKind::Classify:
        m_input->setMessage(QStringLiteral("Could not open the image: ") + f.message);
        reportError(QStringLiteral("Could not open the image"), f.message);
        Q_EMIT imageReady(false);
        break;
      case JobKind::Profile:
      case JobKind::Diff:
        m_settings->setStatus(QStringLiteral("failed: ") + f.message);
        m_settings->setFinished(false);
        reportError(f.kind == JobKind::Profile ? QStringLiteral("The run failed") : QStringLiteral("The diff failed"),
                    f.message);
        Q_EMIT runFinished(false);
        break;
      case JobKind::Eval:
        m_accuracy->setError(f.message);
        reportError(QStringLiteral("The evaluation failed"), f.message);
        Q_EMIT evalFinished(false);
        break;
    }
  });
}

void MainWindow::reportError(const QString& what, const QString& fullMessage) {
  // An engine message can quote what it refused; a message box lays out a few kilobytes at most.
  constexpr qsizetype kMaxMessage = 4096;
  const QString message =
      fullMessage.size() <= kMaxMessage
          ? fullMessage
          : fullMessage.left(kMaxMessage / 2) + QStringLiteral(" … ") + fullMessage.right(kMaxMessage / 4);
  const QString text = what + QStringLiteral(": ") + message;
  qWarning().noquote() << "mnv2-profiler:" << text;
  statusBar()->showMessage(text, 20000);
  if (!m_options.scripted) {
    // Not modal: the app keeps working behind the message.
    auto* box = new QMessageBox(QMessageBox::Warning, what, message, QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("errorMessage"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::NonModal);
    box->show();
  }
  Q_EMIT errorReported(text);
}

void MainWindow::start(const QString& modelPath) {
  m_controller->probeEnvironment();
  m_controller->loadModel(modelPath);
}

// "sm_75/80/86/89/90/100/120 + PTX 120": the architectures the GPU code carries, short enough for the status
// bar (the tool-tip has the long form that `mnv2 info` prints).
QString MainWindow::compactArchitectures() {
  QStringList sass, ptx;
  for (const mnv2::CudaArch& a : mnv2::built_cuda_architectures())
    (a.ptx ? ptx : sass) << QStringLiteral("%1%2%3").arg(a.major).arg(a.minor).arg(a.arch_specific ? "a" : "");
  QString text = sass.isEmpty() ? QString() : QStringLiteral("sm_") + sass.join(QLatin1Char('/'));
  if (!ptx.isEmpty())
    text += (text.isEmpty() ? QString() : QStringLiteral(" + ")) + QStringLiteral("PTX ") + ptx.join(QLatin1Char('/'));
  return text.isEmpty() ? QStringLiteral("none") : text;
}

// The GPU the GPU backends run on (the run settings' device) in the status bar.
void MainWindow::showGpu() {
  const mnv2::CudaEnvironment& env = m_cuda;
  const int chosen = m_settings->device();
  if (const QString target = m_settings->runTarget(); !target.isEmpty()) {
    // The ordinal is the target's: what its probe said of that GPU, if it was probed.
    const mnv2::remote::ProbeResult* probe = targetProbe(target);
    QString what = QStringLiteral("not probed");
    if (probe != nullptr) {
      what = probe->gpus.empty() ? QStringLiteral("the target shows no GPU")
                                 : QStringLiteral("not on the target (it shows %1)").arg(probe->gpus.size());
      for (const mnv2::remote::ProbeGpu& g : probe->gpus)
        if (g.index == chosen)
          what = QStringLiteral("%1 (sm %2)")
                     .arg(shownText(mnv2::printable(g.name)), shownText(mnv2::printable(g.compute_capability)));
    }
    m_statusGpu->setText(QStringLiteral("GPU %1 of target %2: %3").arg(chosen).arg(target, what));
    m_statusGpu->setToolTip(QStringLiteral("Runs go to target %1; this machine's GPUs are not used").arg(target));
    return;
  }
  const auto d = std::find_if(env.devices.begin(), env.devices.end(),
                              [chosen](const mnv2::GpuDevice& g) { return g.index == chosen; });
  if (env.devices.empty()) {
    m_statusGpu->setText(QStringLiteral("GPU: none (%1)").arg(QString::fromStdString(env.why_none)));
  } else if (d == env.devices.end()) {
    m_statusGpu->setText(
        QStringLiteral("GPU %1: not on this machine (it shows %2)").arg(chosen).arg(env.devices.size()));
  } else {
    m_statusGpu->setText(QStringLiteral("GPU %1 of %2: %3 (sm_%4%5, %6 GiB)%7")
                             .arg(d->index)
                             .arg(env.devices.size())
                             .arg(QString::fromStdString(d->name))
                             .arg(d->cc_major)
                             .arg(d->cc_minor)
                             .arg(d->memory_bytes / double(1 << 30), 0, 'f', 0)
                             .arg(d->cannot_run.empty() ? QString()
                                                        : QStringLiteral(": cannot run this build's kernels (%1)")
                                                              .arg(QString::fromStdString(d->cannot_run))));
  }
  m_statusGpu->setToolTip(m_statusGpu->text() +
                          (d == env.devices.end()
                               ? QString()
                               : QStringLiteral("\n%1 at PCI %2")
                                     .arg(QString::fromStdString(d->uuid), QString::fromStdString(d->pci_bus_id))));
}

void MainWindow::onEnvironment(const EnvironmentInfo& info) {
  m_backends = info.backends;
  m_diffs->setBackends(info.backends);
  m_sweep->setBackends(info.backends);
  m_accuracy->setBackends(info.backends);
  m_cuda = info.cuda;
  applyRunTarget();  // this machine's backends and GPUs, unless runs go to a target
  showGpu();
  const mnv2::CudaEnvironment& env = info.cuda;
  const QString driverCuda = QString::fromStdString(mnv2::cuda_version_string(env.driver_version));
  m_statusDriver->setText(
      !env.driver_version ? QStringLiteral("driver: none")
      : env.driver_release.empty()
          ? QStringLiteral("driver: CUDA %1").arg(driverCuda)
          : QStringLiteral("driver %1 (CUDA %2)").arg(QString::fromStdString(env.driver_release), driverCuda));
  if (env.built_with_cuda)
    m_statusCudnn->setText(QStringLiteral("cuDNN %1 (this machine)").arg(QString::fromStdString(env.cudnn_version)));
  // The architectures this build's GPU code carries; the plugin's path (or why it did not load) in the tip.
  const mnv2::GpuPluginInfo plugin = mnv2::gpu_plugin_info();
  if (!env.built_with_cuda) {
    m_statusCuda->setText(QStringLiteral("CUDA: not built"));
    m_statusCuda->setToolTip(QString::fromStdString(plugin.problem));
  } else {
    const QString runtime =
        plugin.loaded
            ? QStringLiteral("CUDA %1").arg(QString::fromStdString(mnv2::cuda_version_string(env.runtime_version)))
            : QStringLiteral("GPU plugin not loaded");
    m_statusCuda->setText(QStringLiteral("%1 · code %2").arg(runtime, compactArchitectures()));
    m_statusCuda->setToolTip(QStringLiteral("GPU code for %1\n%2")
                                 .arg(QString::fromStdString(env.architectures),
                                      plugin.loaded
                                          ? QStringLiteral("GPU plugin %1").arg(QString::fromStdString(plugin.path))
                                          : QString::fromStdString(plugin.problem)));
  }
  Q_EMIT environmentReady();
}

void MainWindow::onModel(const ModelInfo& info) {
  m_model = info;
  m_layers->setTopology(info.topology, info.stats);
  m_lab->setTopology(info.topology);
  m_lab->setModelPath(info.synthetic ? QString() : info.source);
  m_graph->view()->setTopology(info.topology, info.stats);
  m_settings->setModelInputSize(info.inputHeight, info.inputWidth);
  const QString file =
      info.synthetic ? QStringLiteral("built-in (synthetic weights)") : QFileInfo(info.source).fileName();
  m_statusModel->setText(QStringLiteral("model: %1").arg(file));
  m_statusModel->setToolTip(QStringLiteral("%1\nfound by: %2\n%3").arg(info.source, info.how, info.checksum));
  m_topology->setModelHeader(file, info.fileFacts, info.synthetic ? QStringList() : info.warnings);
  if (info.synthetic) {
    m_banner->setText(QStringLiteral("Synthetic weights: no model file was found, so the built-in MobileNetV2 "
                                     "topology runs with deterministic random weights. Timings are real; predictions "
                                     "are meaningless. Give a model with --model FILE or MNV2_MODEL.  ") +
                      info.warnings.join(QLatin1Char(' ')));
    m_banner->show();
  } else {
    m_banner->hide();
  }
  m_shown.clear();
  updateTopologySummary();
  if (m_image) classifyCurrent(m_image->imagePath);
  Q_EMIT modelReady(true);
}

void MainWindow::updateTopologySummary() {
  const std::vector<mnv2::Layer>& layers = m_layers->layers();
  if (layers.empty()) {
    m_topology->setSummary(QString());
    return;
  }
  std::map<QString, int> kinds;
  QStringList order;
  for (const mnv2::Layer& l : layers) {
    const QString k = QString::fromLatin1(mnv2::to_string(l.kind));
    if (!kinds.count(k)) order << k;
    ++kinds[k];
  }
  QStringList parts;
  for (const QString& k : order) parts << QStringLiteral("%1 %2").arg(kinds[k]).arg(k);
  qint64 params = 0, macs = 0;
  const ReportPtr report = m_layers->report();
  for (int row = 0; row < m_layers->rowCount(); ++row) {
    params += m_layers->index(row, LayerTableModel::Params).data(LayerTableModel::SortRole).toLongLong();
    macs += m_layers->index(row, LayerTableModel::Macs).data(LayerTableModel::SortRole).toLongLong();
  }
  const int blocks = m_model ? m_model->numBlocks : 0;
  QString text = QStringLiteral("<b>%1 layers</b> (%2) · %3 bottleneck blocks · %4 params · %5 MACs")
                     .arg(layers.size())
                     .arg(parts.join(QStringLiteral(", ")))
                     .arg(blocks)
                     .arg(groupedNumber(params), groupedNumber(macs));
  if (report) {
    text += QStringLiteral(" at batch %1, %2×%3.<br>Timings from the %4: %5")
                .arg(report->config.batch)
                .arg(report->config.height)
                .arg(report->config.width)
                .arg(m_shownOrigin.toHtmlEscaped(), reportSummary(*report));
  } else if (m_model) {
    text += QStringLiteral(" at batch 1, %1×%2. Run a profile to add timings.")
                .arg(m_model->inputHeight)
                .arg(m_model->inputWidth);
  }
  m_topology->setSummary(text);
}

void MainWindow::classifyCurrent(const QString& path) {
  ClassifyRequest request;
  request.imagePath = path;
  // The top-5 is computed here: with the chosen backend, or this machine's cpu while runs go to a target.
  request.backend = m_settings->backend().isEmpty() || !m_settings->runTarget().isEmpty() ? QStringLiteral("cpu")
                                                                                          : m_settings->backend();
  request.decoder = m_options.decoder;
  request.cuda = m_settings->cudaOptions();
  request.cudnn = m_settings->cudnnOptions();
  request.device = m_settings->device();
  m_controller->classify(request);
}

void MainWindow::openImage(const QString& path) {
  m_input->setMessage(m_controller->isRunning() ? QStringLiteral("%1: waiting for the run to finish…").arg(path)
                                                : QStringLiteral("classifying %1…").arg(path));
  classifyCurrent(path);
}

void MainWindow::onClassified(const ClassifyResult& result) {
  m_image = result;
  // A previous image's failure is not this image's: its message goes.
  if (statusBar()->currentMessage().startsWith(QStringLiteral("Could not open the image"))) statusBar()->clearMessage();
  // Non-finite logits: the probabilities shown are meaningless, and the warning names where they started.
  for (const QString& w : result.warnings) {
    qWarning().noquote() << "mnv2-profiler:" << w;
    statusBar()->showMessage(w, 20000);
  }
  m_input->setResult(result);
  m_settings->setImageName(QFileInfo(result.imagePath).fileName(),
                           QSize(static_cast<int>(result.input.shape.w), static_cast<int>(result.input.shape.h)));
  setWindowTitle(QStringLiteral("mnv2-profiler — %1").arg(QFileInfo(result.imagePath).fileName()));
  addRecent(kRecentImages, result.imagePath);
  setLastFolder(QStringLiteral("images"), result.imagePath);
  Q_EMIT imageReady(true);
}

bool MainWindow::startSweep() {
  if (const QString refusal = remoteRefusal(QStringLiteral("Sweeps")); !refusal.isEmpty()) {
    reportError(QStringLiteral("Cannot sweep"), refusal);
    return false;
  }
  QString error;
  const auto config = m_sweep->config(&error);
  if (!config) {
    reportError(QStringLiteral("The sweep's settings are not valid"), error);
    return false;
  }
  m_settings->setStatus(QStringLiteral("sweep of %1 points…").arg(mnv2::sweep_points(*config).size()));
  SweepRequest sweep{*config};
  sweep.config.cuda = m_settings->cudaOptions();
  sweep.config.cudnn = m_settings->cudnnOptions();
  sweep.config.cpu_threads = m_settings->cpuThreads();
  sweep.config.device = m_settings->device();
  m_controller->sweep(sweep);
  return true;
}

bool MainWindow::startEval() {
  if (const QString refusal = remoteRefusal(QStringLiteral("Evaluations")); !refusal.isEmpty()) {
    m_accuracy->setError(refusal);
    reportError(QStringLiteral("Cannot evaluate"), refusal);
    return false;
  }
  QString error;
  std::optional<EvalRequest> request = m_accuracy->request(&error);
  if (request && !m_model) error = QStringLiteral("no model is loaded");
  if (!request || !m_model) {
    m_accuracy->setError(error);
    reportError(QStringLiteral("Cannot evaluate"), error);
    return false;
  }
  request->decoder = m_options.decoder;
  request->config.cuda = m_settings->cudaOptions();
  request->config.cudnn = m_settings->cudnnOptions();
  request->config.device = m_settings->device();
  m_accuracy->evalStarted(
      QStringLiteral("evaluating %1 on %2…")
          .arg(request->set, runLabel(QString::fromStdString(request->config.backend), request->config.precision)));
  m_evalJob = m_controller->evaluate(*request);
  return true;
}

void MainWindow::onEvaluated(const EvalOutcome& outcome) {
  m_accuracy->setOutcome(outcome);
  const mnv2::EvalResult& r = outcome.record.result;
  statusBar()->showMessage(QStringLiteral("Evaluated %1 images: top-1 %2%, top-5 %3%")
                               .arg(r.images)
                               .arg(r.top1 * 100, 0, 'f', 2)
                               .arg(r.top5 * 100, 0, 'f', 2),
                           15000);
  Q_EMIT evalFinished(true);
}

std::vector<std::pair<std::string, std::string>> MainWindow::exportInputs() const {
  if (!m_model || m_model->synthetic) return {};
  return {{"the model", m_model->source.toStdString()}};
}

bool MainWindow::exportEvalCsv(const QString& path) {
  const EvalRecordPtr record = m_accuracy->record();
  if (!record) {
    reportError(QStringLiteral("Nothing to export"), QStringLiteral("run an evaluation first"));
    return false;
  }
  try {
    mnv2::write_output_file(path.toStdString(), evalCsv(*record), exportInputs());
  } catch (const std::exception& e) {
    reportError(QStringLiteral("Export failed"), QString::fromUtf8(e.what()));
    return false;
  }
  setLastFolder(QStringLiteral("exports"), path);
  statusBar()->showMessage(QStringLiteral("Wrote %1").arg(path), 10000);
  return true;
}

void MainWindow::startRun(bool compare) {
  if (!m_model) {
    reportError(QStringLiteral("Cannot run"), QStringLiteral("no model is loaded"));
    Q_EMIT runFinished(false);
    return;
  }
  ProfileRequest request;
  request.compare = compare;
  if (compare) {  // the engine's compare rule picks them (mnv2::select_compare), as the panel's note says
    for (const std::string& b : m_settings->compareSelection().backends) request.backends << QString::fromStdString(b);
  } else {
    request.backends = QStringList{m_settings->backend()};
  }
  request.backends.removeAll(QString());
  if (request.backends.isEmpty()) {
    reportError(QStringLiteral("Cannot run"), QStringLiteral("no backend is available"));
    Q_EMIT runFinished(false);
    return;
  }
  mnv2::ProfileConfig& c = request.config;
  c.batch = m_settings->batch();
  c.warmup = m_settings->warmup();
  c.iters = m_settings->iterations();
  c.timer = m_settings->timer();
  c.precision = m_settings->precision();
  c.cuda = m_settings->cudaOptions();
  c.cudnn = m_settings->cudnnOptions();
  c.cpu_threads = m_settings->cpuThreads();
  c.device = m_settings->device();
  c.options = m_settings->options();  // each value with its source, recorded in the report
  if (m_settings->useImage() && m_image) {
    c.input = m_image->input;
    c.input_name = m_image->imagePath.toStdString();
    c.height = static_cast<int>(m_image->input.shape.h);
    c.width = static_cast<int>(m_image->input.shape.w);
  } else {
    c.height = m_settings->inputSize().height();
    c.width = m_settings->inputSize().width();
  }
  if (compare && request.backends.size() == 1 && m_settings->runTarget().isEmpty()) {
    statusBar()->showMessage(QStringLiteral("Compare: only %1 can run on this machine, so one run is shown (the other "
                                            "backends' reasons are in the backend list's tool-tips)")
                                 .arg(request.backends.front()),
                             15000);
  }
  request.measureCeilings = m_roofline->measureCeilings();
  if (const QString name = m_settings->runTarget(); !name.isEmpty()) {
    // On a remote target: the engine sends the model file the app opened (the worker refuses the built-in one, with
    // the engine's rule) and the input.
    const mnv2::remote::Target* target = m_targets->find(name);
    if (target == nullptr) {
      m_targets->reload();
      target = m_targets->find(name);
    }
    if (target == nullptr) {
      reportError(QStringLiteral("Cannot run"),
                  m_targets->error().isEmpty()
                      ? QStringLiteral("the targets file %1 has no target '%2'").arg(m_targets->path(), name)
                      : m_targets->error());
      Q_EMIT runFinished(false);
      return;
    }
    request.target = *target;
    request.modelPath = m_model->synthetic ? QString() : m_model->source;
    request.measureCeilings = false;
    m_settings->setStatus(QStringLiteral("starting %1 on %2…").arg(request.backends.join(QStringLiteral(", ")), name));
  } else {
    m_settings->setStatus(QStringLiteral("starting %1…").arg(request.backends.join(QStringLiteral(", "))));
  }
  m_controller->profile(request);
}

void MainWindow::cancelRun() {
  if (m_lab->isRunning() && m_tabs->currentWidget() == m_lab) {
    m_lab->cancel();  // Escape on the Kernel lab page ends its `mnv2 lab`
    return;
  }
  if (!m_controller->isRunning()) return;
  m_controller->cancel();
  m_settings->setStatus(QStringLiteral("cancelling…"));
}

void MainWindow::computeDiff(const QString& backend, const QString& reference) {
  if (!m_model) {
    reportError(QStringLiteral("Cannot compute a diff"), QStringLiteral("no model is loaded"));
    Q_EMIT runFinished(false);
    return;
  }
  if (const QString refusal = remoteRefusal(QStringLiteral("Computed diffs")); !refusal.isEmpty()) {
    reportError(QStringLiteral("Cannot compute a diff"), refusal);
    Q_EMIT runFinished(false);
    return;
  }
  DiffRequest request;
  request.backend = backend;
  request.reference = reference;
  request.precision = m_settings->precision();
  request.cuda = m_settings->cudaOptions();
  request.cudnn = m_settings->cudnnOptions();
  request.device = m_settings->device();
  // The input the run settings choose, as a Run takes it (startRun): the opened image, or the random tensor at
  // the chosen size.
  if (m_settings->useImage() && m_image) {
    request.input = m_image->input;
    request.inputName = QFileInfo(m_image->imagePath).fileName();
  } else {
    request.height = m_settings->inputSize().height();
    request.width = m_settings->inputSize().width();
    request.inputName = QStringLiteral("random(seed=1), %1×%2").arg(request.height).arg(request.width);
  }
  m_settings->setStatus(QStringLiteral("diff %1 vs %2…").arg(backend, reference));
  m_controller->diff(request);
}

void MainWindow::clearShown() {
  m_shown.clear();
  m_shownTitle.clear();
  m_layers->setReport(nullptr);
  m_timings->setReports({}, QStringLiteral("No run is shown: check one or more runs in the Runs panel."));
  showReliability({});
  m_graph->view()->setReport(nullptr);
  m_roofline->setReports({});
  m_timeline->setReports({});
  m_diffs->setSources(QStringLiteral("shown"), {}, false);
  m_shownOrigin.clear();
  m_statusShown->hide();
  updateTopologySummary();
  updateActions();
}

void MainWindow::showReliability(const std::vector<ReportPtr>& shown) {
  // One short line per shown run whose figures are not to be trusted (its first reason), at most two lines
  // so that a laptop screen keeps the pages; every reason is in the tooltip and the Runs panel.
  QStringList lines, full;
  for (const ReportPtr& r : shown) {
    const QStringList reasons = reliabilityReasons(*r);
    if (reasons.isEmpty()) continue;
    const std::optional<RunIdentity> id = m_catalog->identityOf(r);  // the run's name on the pages
    const QString head =
        (id ? id->name : runLabel(*r)) + QStringLiteral(" — ") + reliabilityMarker(*r) + QStringLiteral(": ");
    full << head + reasons.join(QStringLiteral("; "));
    lines
        << head + reasons.front() +
               (reasons.size() > 1
                    ? QStringLiteral(" (+%1 more: hover here, or the Runs panel's Reliability)").arg(reasons.size() - 1)
                    : QString());
  }
  if (lines.size() > 2) {
    const qsizetype more = lines.size() - 1;
    lines.resize(1);
    lines << QStringLiteral("and %1 more shown runs are unreliable (hover here)").arg(more);
  }
  m_reliability->setText(lines.join(QLatin1Char('\n')));
  m_reliability->setToolTip(full.join(QLatin1Char('\n')));
  m_reliability->setVisible(!lines.isEmpty());
}

void MainWindow::showReports(const std::vector<ReportPtr>& reports, const QString& title, const QString& origin) {
  if (reports.empty()) return;
  // Runs shown together must share the first one's network: others are left out, and the title says so.
  std::vector<ReportPtr> same;
  int left = 0;
  for (const ReportPtr& r : reports) {
    if (r == reports.front() || !mnv2::compare_settings(*reports.front(), *r).refused())
      same.push_back(r);
    else
      ++left;
  }
  m_shown = same;
  m_shownTitle = title;
  if (left > 0)
    m_shownTitle += QStringLiteral(
                        "<br><b style='color:#b02a37'>%1 checked run(s) of another network are not shown "
                        "beside the first: a layer-by-layer chart would pair unrelated layers.</b>")
                        .arg(left);
  // Each run under its one name and colour (the run history's), on every page.
  std::vector<RunIdentity> identities;
  for (const ReportPtr& r : same)
    if (std::optional<RunIdentity> id = m_catalog->identityOf(r)) identities.push_back(*id);
  if (identities.size() != same.size()) identities.clear();  // a run outside the history: labels as before
  m_layers->setReport(same.front());
  m_timings->setReports(same, m_shownTitle, identities);
  m_timeline->setReports(same, identities);
  m_graph->view()->setReport(same.front());
  m_roofline->setReports(same, identities);
  showReliability(same);
  // The status bar's other fields are this machine's; what the shown runs were measured on is said apart,
  // labelled with where they come from.
  const mnv2::RunReport& first = *same.front();
  m_shownOrigin = origin;
  m_statusShown->setText(
      QStringLiteral("shown: %1 — %2, cuDNN %3")
          .arg(origin, shownText(first.device),
               first.cudnn.empty() || first.cudnn == "none" ? QStringLiteral("none") : shownText(first.cudnn)));
  m_statusShown->setToolTip(QStringLiteral("The shown runs were measured on %1 (%2). The other fields of the status "
                                           "bar describe this machine.")
                                .arg(shownText(first.device), origin));
  m_statusShown->show();
  updateTopologySummary();
  updateActions();
}

void MainWindow::onProfiled(const ProfileResult& result) {
  m_currentRun.clear();
  for (const auto& r : result.reports) m_currentRun.push_back(std::make_shared<const mnv2::RunReport>(r));
  m_requested = result.requested;
  const int previous = m_catalog->count() - 1;        // the newest run before this one, if any
  const int first = m_catalog->addRun(m_currentRun);  // shows it (beside the baseline): showShown()
  if (result.ceilings || !result.ceilingsNote.isEmpty()) m_roofline->setCeilings(result.ceilings, result.ceilingsNote);

  // Compare the backends of a compare run; else this run against the pinned baseline, else the run before.
  const int baseline = m_catalog->baselineRow();
  if (m_currentRun.size() > 1)
    m_comparison->selectRuns(first, first + 1);
  else if (baseline >= 0 && baseline != first)
    m_comparison->selectRuns(baseline, first);
  else
    m_comparison->selectRuns(previous >= 0 ? previous : first, first);

  const mnv2::RunReport& r = *m_currentRun.front();
  m_settings->setFinished(true);
  m_settings->setStatus(QStringLiteral("done: %1 end to end %2 ms median; layers sum %3 ms")
                            .arg(runLabel(r))
                            .arg(r.end_to_end.host_ms.median, 0, 'f', 3)
                            .arg(r.sum_of_steps_ms, 0, 'f', 3));
  for (const ReportPtr& x : m_currentRun)
    for (const std::string& w : x->warnings)
      if (!m_model || !m_model->warnings.contains(QString::fromStdString(w)))
        statusBar()->showMessage(QString::fromStdString(x->backend + ": " + w), 15000);
  Q_EMIT runFinished(true);
}

void MainWindow::showShown() {
  const std::vector<int> rows = m_catalog->shownRows();
  std::vector<ReportPtr> reports;
  for (int row : rows) reports.push_back(m_catalog->report(row));
  if (reports.empty()) {
    clearShown();
    return;
  }
  // The title: the newest run alone reads as before; any other choice names its runs, and what differs.
  QString title;
  QString origin;  // for the status bar and the Topology page
  const std::vector<int> current = m_catalog->currentRows();
  QStringList shownNames;
  QString file = m_catalog->entry(rows.front()).origin;
  for (int row : rows) {
    shownNames << m_catalog->entry(row).name;
    if (m_catalog->entry(row).origin != file) file.clear();
  }
  if (rows == current)
    origin = QStringLiteral("current run (%1)").arg(m_catalog->entry(rows.front()).name);
  else if (!file.isEmpty())
    origin = QStringLiteral("report %1").arg(QFileInfo(file).fileName());
  else
    origin = QStringLiteral("runs %1").arg(shownNames.join(QStringLiteral(", ")));
  QStringList identities;  // each run's name on the pages
  for (int row : rows) identities << m_catalog->identity(row).name;
  if (rows == current) {
    title = QStringLiteral("Current run (%1): ").arg(m_catalog->entry(rows.front()).name.toHtmlEscaped()) +
            describeRun(reports, m_requested, identities);
  } else {
    QStringList names;
    for (int row : rows) names << m_catalog->entry(row).name.toHtmlEscaped();
    const QString named = names.size() > kRunsNamedInTitles
                              ? QStringLiteral("%1 … %2, %3 runs").arg(names.front(), names.back()).arg(names.size())
                              : names.join(QStringLiteral(", "));
    title = QStringLiteral("Runs %1: ").arg(named) + describeRun(reports, {}, identities);
    for (size_t i = 1; i < rows.size(); ++i) {
      const QString line = warningsLine(mnv2::compare_settings(*reports.front(), *reports[i]));
      if (!line.isEmpty())
        title += QStringLiteral("<br><b style='color:#9a6700'>%1 against %2: %3</b>")
                     .arg(m_catalog->entry(rows[i]).name.toHtmlEscaped(),
                          m_catalog->entry(rows.front()).name.toHtmlEscaped(), line.toHtmlEscaped());
    }
  }
  showReports(reports, title, origin);

  // The diffs of the shown runs. Every diff of a compare is against the reference of its own run, in the
  // mode that run ran.
  std::vector<DiffsPage::Source> diffs;
  for (int row : rows) {
    const ReportPtr& r = m_catalog->report(row);
    if (!r->diff) continue;
    mnv2::Precision referencePrecision = mnv2::Precision::fp32;
    for (int other : rows)
      if (m_catalog->entry(other).group == m_catalog->entry(row).group &&
          m_catalog->report(other)->backend == r->diff->reference)
        referencePrecision = m_catalog->report(other)->config.precision;
    const int classes = r->layer_stats.empty() ? 0 : static_cast<int>(r->layer_stats.back().output.c);
    diffs.push_back(
        // The run under its name on the other pages ("run 3.2 · cpu fp32 · b1 · 224×224"), then its reference.
        {QStringLiteral("%1 vs %2")
             .arg(m_catalog->identity(row).name,
                  runLabel(QString::fromStdString(r->diff->reference), referencePrecision)),
         QStringLiteral("shown"), std::make_shared<const mnv2::DiffReport>(*r->diff), r->topology,
         m_model ? m_model->numClasses : classes, r->config.precision, referencePrecision});
  }
  m_diffs->setSources(QStringLiteral("shown"), std::move(diffs), true);
}

bool MainWindow::saveSession(const QString& path) {
  if (m_catalog->count() == 0) {
    reportError(QStringLiteral("Nothing to save"), QStringLiteral("run something or open a report first"));
    return false;
  }
  try {
    mnv2::write_session_file(path.toStdString(), m_catalog->session());
  } catch (const std::exception& e) {
    reportError(QStringLiteral("Could not save the session"), QString::fromUtf8(e.what()));
    return false;
  }
  m_catalog->setSaved();
  setLastFolder(QStringLiteral("exports"), path);
  statusBar()->showMessage(QStringLiteral("Saved %1 run(s) to %2").arg(m_catalog->count()).arg(path), 10000);
  return true;
}

void MainWindow::saveSessionInteractive() {
  const QString path = QFileDialog::getSaveFileName(
      this, QStringLiteral("Save the session"),
      QDir(lastFolder(QStringLiteral("exports")))
          .filePath(QStringLiteral("mnv2-session-%1.json")
                        .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))),
      QStringLiteral("mnv2 reports (*.json)"));
  if (!path.isEmpty()) saveSession(path);
}

void MainWindow::onDiffed(const DiffResult& result) {
  const std::vector<mnv2::Layer> topology = m_model ? m_model->topology : std::vector<mnv2::Layer>{};
  std::vector<DiffsPage::Source> sources;
  sources.push_back(
      {QStringLiteral("%1 vs %2 (computed, %3)")
           .arg(runLabel(QString::fromStdString(result.diff.backend), result.precision),
                runLabel(QString::fromStdString(result.diff.reference), result.referencePrecision), result.inputName),
       QStringLiteral("computed-%1").arg(++m_diffCount), std::make_shared<const mnv2::DiffReport>(result.diff),
       topology, m_model ? m_model->numClasses : 0, result.precision, result.referencePrecision});
  // The origin is copied first: the order in which arguments are evaluated is unspecified, and moving
  // `sources` into the parameter before reading sources.front() read a destroyed element (a crash).
  const QString origin = sources.front().origin;
  m_diffs->setSources(origin, std::move(sources), true);
  m_settings->setFinished(true);
  m_settings->setStatus(QStringLiteral("diff done"));
  m_tabs->setCurrentWidget(m_diffs);
  Q_EMIT runFinished(true);
}

bool MainWindow::openReport(const QString& path) {
  // A bench or sweep file (mnv2.bench/1: `mnv2 bench --json`, the Sweep export, scripts/pytorch-anchor.py):
  // its results join the Sweep page's, beside the app's own sweep.
  if (mnv2::is_bench_file(path.toStdString())) {
    mnv2::BenchFile bench;
    try {
      bench = mnv2::read_bench_file(path.toStdString());
      if (bench.results.empty()) throw mnv2::Error(path.toStdString() + ": the bench file holds no results");
    } catch (const std::exception& e) {
      reportError(QStringLiteral("Could not open the report"), QString::fromUtf8(e.what()));
      return false;
    }
    const int n = static_cast<int>(bench.results.size());
    m_sweep->addSavedResults(std::move(bench.results), QFileInfo(path).fileName());
    m_tabs->setCurrentWidget(m_sweep);
    addRecent(kRecentReports, path);
    setLastFolder(QStringLiteral("reports"), path);
    statusBar()->showMessage(QStringLiteral("Opened %1 (%2 bench result(s), on the Sweep page)").arg(path).arg(n),
                             10000);
    return true;
  }
  mnv2::Session session;
  try {
    session = mnv2::read_session_file(path.toStdString());
    if (session.runs.empty()) throw mnv2::Error(path.toStdString() + ": the report holds no runs");
    for (const auto& run : session.runs) {
      const mnv2::RunReport& r = run.report;
      if (r.layers.empty() || r.steps.empty() || r.topology.size() != r.layers.size())
        throw mnv2::Error(path.toStdString() + ": a run of the report has no per-layer figures");
    }
  } catch (const std::exception& e) {
    reportError(QStringLiteral("Could not open the report"), QString::fromUtf8(e.what()));
    return false;
  }
  const int row = m_catalog->addSession(path, session);
  const int n = static_cast<int>(session.runs.size());
  // The file's runs are shown (its diffs go to the Diffs page with them).
  std::vector<int> rows;
  for (int i = 0; i < n; ++i) rows.push_back(row + i);
  m_catalog->setShown(rows);
  // Compare the newest run of this session with the report; without one, the report's first two runs.
  const int current = m_catalog->firstCurrentRow();
  if (current >= 0)
    m_comparison->selectRuns(current, row);
  else
    m_comparison->selectRuns(row, n > 1 ? row + 1 : row);
  addRecent(kRecentReports, path);
  setLastFolder(QStringLiteral("reports"), path);
  // Which baseline is pinned now: the one the user had (kept), or the session's.
  QString baseline;
  const int pinned = m_catalog->baselineRow();
  if (session.baseline >= 0 && session.baseline < n && pinned >= 0) {
    const QString own = m_catalog->entry(row + session.baseline).name;
    baseline = pinned == row + session.baseline
                   ? QStringLiteral("; its baseline %1 is pinned").arg(own)
                   : QStringLiteral(
                         "; the pinned baseline stays %1 (the session's, %2, is not pinned: pin it in the "
                         "Runs panel)")
                         .arg(m_catalog->entry(pinned).name, own);
  }
  statusBar()->showMessage(QStringLiteral("Opened %1 (%2 run(s))%3").arg(path).arg(n).arg(baseline), 10000);
  return true;
}

namespace {

// What the sweep and evaluation files say of the model: what the app knows of the loaded one.
mnv2::ReportModel reportModel(const std::optional<ModelInfo>& model) {
  mnv2::ReportModel m;
  if (!model) return m;
  m.source = model->source.toStdString();
  m.found_by = model->how.toStdString();
  m.checksum = model->checksum.toStdString();
  m.synthetic = model->synthetic;
  m.classes = model->numClasses;
  m.layers = static_cast<int64_t>(model->topology.size());
  for (const QString& w : model->warnings) m.warnings.push_back(w.toStdString());
  return m;
}

bool isProfileFormat(MainWindow::ExportFormat format) {
  return format == MainWindow::ExportFormat::Csv || format == MainWindow::ExportFormat::Json ||
         format == MainWindow::ExportFormat::Trace;
}

}  // namespace

bool MainWindow::canExport(ExportFormat format) const {
  switch (format) {
    case ExportFormat::Csv:
    case ExportFormat::Json:
    case ExportFormat::Trace:
      return !m_shown.empty();
    case ExportFormat::SweepCsv:
    case ExportFormat::SweepJson:
      return !m_sweep->results().empty();
    case ExportFormat::EvalCsv:
    case ExportFormat::EvalJson:
      return m_accuracy->record() != nullptr;
    case ExportFormat::RooflineCsv:
      return m_roofline->report() != nullptr;
    case ExportFormat::RooflineJson:
      return m_roofline->report() != nullptr && m_roofline->shownCeilings().has_value();
  }
  return false;
}

bool MainWindow::exportTo(ExportFormat format, const QString& path) {
  if (!canExport(format)) {
    const QString what = isProfileFormat(format) ? QStringLiteral("run a profile or open a report first")
                         : format == ExportFormat::SweepCsv || format == ExportFormat::SweepJson
                             ? QStringLiteral("run a sweep first")
                         : format == ExportFormat::EvalCsv || format == ExportFormat::EvalJson
                             ? QStringLiteral("run an evaluation first")
                             : QStringLiteral("profile a run with measured ceilings first");
    reportError(QStringLiteral("Nothing to export"), what);
    return false;
  }
  std::vector<mnv2::RunReport> reports;
  for (const ReportPtr& r : m_shown) reports.push_back(*r);
  const std::string file = path.toStdString();
  try {
    switch (format) {
      case ExportFormat::Csv:
        mnv2::write_output_file(file, mnv2::report_csv(reports), exportInputs());
        break;
      case ExportFormat::Json:
        mnv2::write_output_file(file, mnv2::reports_json_text(reports), exportInputs());
        break;
      case ExportFormat::Trace:
        mnv2::write_output_file(file, mnv2::trace_json(reports), exportInputs());
        break;
      case ExportFormat::SweepCsv:
        mnv2::write_output_file(file, mnv2::bench_csv(m_sweep->results()), exportInputs());
        break;
      case ExportFormat::SweepJson:
        mnv2::write_output_file(file, mnv2::bench_json(m_sweep->results(), reportModel(m_model)), exportInputs());
        break;
      case ExportFormat::EvalCsv:
        mnv2::write_output_file(file, evalCsv(*m_accuracy->record()), exportInputs());
        break;
      case ExportFormat::EvalJson: {
        const EvalRecord& record = *m_accuracy->record();
        mnv2::write_output_file(
            file, mnv2::eval_json(record.result, reportModel(m_model), mnv2::EvalSource{record.set.toStdString(), {}}),
            exportInputs());
        break;
      }
      case ExportFormat::RooflineCsv:
        mnv2::write_output_file(file, mnv2::roofline_csv(m_roofline->points()), exportInputs());
        break;
      case ExportFormat::RooflineJson:
        mnv2::write_output_file(file, mnv2::roofline_json(*m_roofline->shownCeilings(), *m_roofline->report()),
                                exportInputs());
        break;
    }
  } catch (const std::exception& e) {
    reportError(QStringLiteral("Export failed"), QString::fromUtf8(e.what()));
    return false;
  }
  setLastFolder(QStringLiteral("exports"), path);
  statusBar()->showMessage(QStringLiteral("Wrote %1").arg(path), 10000);
  return true;
}

void MainWindow::exportInteractive(ExportFormat format) {
  if (!canExport(format)) return;
  const QString now = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  QString stem =
      QStringLiteral("mnv2-%1-%2")
          .arg(format == ExportFormat::SweepCsv || format == ExportFormat::SweepJson ? QStringLiteral("sweep")
               : format == ExportFormat::EvalCsv || format == ExportFormat::EvalJson ? QStringLiteral("eval")
                                                                                     : QStringLiteral("roofline"),
               now);
  if (isProfileFormat(format)) {
    const mnv2::RunReport& r = *m_shown.front();
    stem = QStringLiteral("mnv2-%1-%2-b%3-%4")
               .arg(QString::fromStdString(r.backend), precisionName(r.config.precision))
               .arg(r.config.batch)
               .arg(r.origin.target.empty() ? now : QString::fromStdString(r.origin.target) + QLatin1Char('-') + now);
  }
  QString suffix, filter;
  switch (format) {
    case ExportFormat::SweepCsv:
    case ExportFormat::EvalCsv:
    case ExportFormat::RooflineCsv:
      suffix = QStringLiteral(".csv");
      filter = QStringLiteral("CSV (*.csv)");
      break;
    case ExportFormat::SweepJson:
    case ExportFormat::EvalJson:
    case ExportFormat::RooflineJson:
      suffix = QStringLiteral(".json");
      filter = QStringLiteral("JSON (*.json)");
      break;
    case ExportFormat::Csv:
      suffix = QStringLiteral(".csv");
      filter = QStringLiteral("CSV (*.csv)");
      break;
    case ExportFormat::Json:
      suffix = QStringLiteral(".json");
      filter = QStringLiteral("mnv2 JSON report (*.json)");
      break;
    case ExportFormat::Trace:
      suffix = QStringLiteral(".trace.json");
      filter = QStringLiteral("Chrome / Perfetto trace (*.json)");
      break;
  }
  const QString path = QFileDialog::getSaveFileName(
      this, QStringLiteral("Export"), QDir(lastFolder(QStringLiteral("exports"))).filePath(stem + suffix), filter);
  if (!path.isEmpty()) exportTo(format, path);
}

bool MainWindow::selectTab(const QString& name) {
  const QString n = name.toLower();
  QWidget* page = n == QLatin1String("topology")     ? static_cast<QWidget*>(m_topology)
                  : n == QLatin1String("timings")    ? static_cast<QWidget*>(m_timings)
                  : n == QLatin1String("timeline")   ? static_cast<QWidget*>(m_timeline)
                  : n == QLatin1String("diffs")      ? static_cast<QWidget*>(m_diffs)
                  : n == QLatin1String("comparison") ? static_cast<QWidget*>(m_comparison)
                  : n == QLatin1String("graph")      ? static_cast<QWidget*>(m_graph)
                  : n == QLatin1String("roofline")   ? static_cast<QWidget*>(m_roofline)
                  : n == QLatin1String("sweep")      ? static_cast<QWidget*>(m_sweep)
                  : n == QLatin1String("accuracy")   ? static_cast<QWidget*>(m_accuracy)
                  : n == QLatin1String("lab")        ? static_cast<QWidget*>(m_lab)
                  : n == QLatin1String("deepdive")   ? static_cast<QWidget*>(m_deepDive)
                                                     : nullptr;
  if (!page) return false;
  m_tabs->setCurrentWidget(page);
  return true;
}

void MainWindow::updateActions() {
  const bool running = m_controller->isRunning();
  for (QAction* a : m_exportActions) a->setEnabled(canExport(static_cast<ExportFormat>(a->data().toInt())));
  m_runAction->setEnabled(!running);
  m_compareAction->setEnabled(!running);
  m_cancelAction->setEnabled(running || m_lab->isRunning());
  updateLabActions();
}

void MainWindow::deepDive() {
  const bool comparison = m_tabs->currentWidget() == m_comparison && m_comparison->runA() >= 0;
  m_deepDive->diveInto(comparison ? std::vector<int>{m_comparison->runA(), m_comparison->runB()}
                                  : m_catalog->shownRows());
  m_tabs->setCurrentWidget(m_deepDive);
}

QAction* MainWindow::labAction(const QString& name) const {
  for (QAction* a : m_labActions)
    if (a->data().toString() == name) return a;
  return nullptr;
}

void MainWindow::updateLabActions() {
  // Ctrl+S is "save the session" on every page but the Kernel lab's, where it saves the kernel; two enabled
  // actions on one key would be ambiguous (neither fires), so the other one lets go of it.
  const bool lab = m_tabs->currentWidget() == m_lab;
  m_saveSessionAction->setShortcut(lab ? QKeySequence() : QKeySequence(QKeySequence::Save));
  const bool busy = m_lab->isRunning();
  for (QAction* a : m_labActions) {
    const QString name = a->data().toString();
    const bool job = name == QLatin1String("compile") || name == QLatin1String("check") ||
                     name == QLatin1String("run") || name == QLatin1String("template") || name == QLatin1String("open");
    const bool refused =
        name == QLatin1String("compile") || name == QLatin1String("check") || name == QLatin1String("run");
    a->setEnabled(name == QLatin1String("cancel") ? busy
                                                  : !(job && busy) && !(refused && !m_settings->runTarget().isEmpty()));
    // The job and file shortcuts act while the page is in front (Ctrl+R elsewhere would start a kernel job the
    // user does not see); the menu items work from anywhere and bring the page to the front.
    if (name == QLatin1String("save")) a->setShortcut(lab ? QKeySequence(QKeySequence::Save) : QKeySequence());
    a->setShortcutContext(lab ? Qt::WindowShortcut : Qt::WidgetShortcut);
  }
}

// ---- files, recent lists, settings -----------------------------------------------------------------

QString MainWindow::lastFolder(const QString& key) const {
  if (!m_options.useSettings) return QDir::currentPath();
  return QSettings().value(QStringLiteral("folders/") + key, QDir::homePath()).toString();
}

void MainWindow::setLastFolder(const QString& key, const QString& file) {
  if (m_options.useSettings) QSettings().setValue(QStringLiteral("folders/") + key, QFileInfo(file).absolutePath());
}

void MainWindow::addRecent(const QString& key, const QString& path) {
  if (!m_options.useSettings) return;
  QSettings s;
  QStringList list = s.value(key).toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  list.removeAll(absolute);
  list.prepend(absolute);
  while (list.size() > kMaxRecent) list.removeLast();
  s.setValue(key, list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  const QSettings s;
  const std::pair<QMenu*, QString> menus[] = {{m_recentImages, kRecentImages}, {m_recentReports, kRecentReports}};
  for (const auto& [menu, key] : menus) {
    menu->clear();
    const QStringList list = m_options.useSettings ? s.value(key).toStringList() : QStringList();
    for (const QString& path : list) {
      QAction* a = menu->addAction(QFileInfo(path).fileName());
      a->setToolTip(path);
      const bool report = key == kRecentReports;
      connect(a, &QAction::triggered, this, [this, path, report] {
        if (report)
          openReport(path);
        else
          openImage(path);
      });
    }
    menu->setEnabled(!list.isEmpty());
  }
}

void MainWindow::loadSettings() {
  QSettings s;
  m_settings->loadSettings(s);
  m_accuracy->loadSettings(s);
  restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(s.value(QStringLiteral("window/state")).toByteArray());
  m_tabs->setCurrentIndex(s.value(QStringLiteral("window/tab"), 0).toInt());
  m_timings->setLogScale(s.value(QStringLiteral("timings/log"), false).toBool());
  m_graph->setColorBy(static_cast<NetworkGraphView::ColorBy>(
      s.value(QStringLiteral("graph/colorBy"), static_cast<int>(NetworkGraphView::ColorBy::Time)).toInt()));
}

void MainWindow::saveSettings() {
  QSettings s;
  m_settings->saveSettings(s);
  m_accuracy->saveSettings(s);
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  s.setValue(QStringLiteral("window/tab"), m_tabs->currentIndex());
  s.setValue(QStringLiteral("timings/log"), m_timings->logScale());
  s.setValue(QStringLiteral("graph/colorBy"), static_cast<int>(m_graph->view()->colorBy()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!m_options.scripted && m_lab->isModified()) {
    const auto answer = QMessageBox::question(this, QStringLiteral("Unsaved kernel"),
                                              QStringLiteral("The Kernel lab's kernel has unsaved changes. Save them?"),
                                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (answer == QMessageBox::Cancel || (answer == QMessageBox::Save && !m_lab->save())) {
      event->ignore();
      return;
    }
  }
  if (!m_options.scripted && m_catalog->isModified()) {
    const auto answer = QMessageBox::question(
        this, QStringLiteral("Unsaved runs"),
        QStringLiteral("The run history has runs, names or notes that are not saved (%1 run(s) in the Runs panel). "
                       "Save the session?")
            .arg(m_catalog->count()),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
    if (answer == QMessageBox::Save) saveSessionInteractive();
    if (answer == QMessageBox::Cancel || (answer == QMessageBox::Save && m_catalog->isModified())) {
      event->ignore();
      return;
    }
  }
  if (m_options.useSettings) saveSettings();
  m_controller->cancel();
  m_controller->cancelProbes();
  m_controller->closeConnections();  // the master connections of the targets this session reached
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) {
    for (const QUrl& url : event->mimeData()->urls()) {
      if (url.isLocalFile()) {
        event->acceptProposedAction();
        return;
      }
    }
  }
}

void MainWindow::dropEvent(QDropEvent* event) {
  QString image;
  for (const QUrl& url : event->mimeData()->urls()) {
    if (!url.isLocalFile()) continue;
    const QString path = url.toLocalFile();
    if (path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive))
      openReport(path);
    else
      image = path;  // the last image dropped is the one shown
  }
  if (!image.isEmpty()) openImage(image);
  event->acceptProposedAction();
}

}  // namespace mnv2::ui
