// The app's command line and its scripted mode (see screenshot_script.h).
#include "screenshot_script.h"

#include <QApplication>
#include <QEventLoop>
#include <QImage>
#include <QPixmap>
#include <QRegularExpression>
#include <QTimer>
#include <cstdio>
#include <functional>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "models/layer_selection.h"
#include "models/targets_model.h"
#include "widgets/accuracy_page.h"
#include "widgets/comparison_page.h"
#include "widgets/deep_dive_page.h"
#include "widgets/kernel_lab_page.h"
#include "widgets/network_graph_view.h"
#include "widgets/roofline_page.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/targets_dialog.h"
#include "widgets/timings_page.h"

namespace mnv2::gui {

using mnv2::ui::MainWindow;

namespace {

void say(const QString& text) { std::fprintf(stderr, "mnv2-profiler: %s\n", qPrintable(text)); }

// Sleeps in the event loop until `done`: the worker's results arrive as events. (No timed processEvents
// loop: that would keep a core busy and slow the worker's OpenMP threads down.)
void waitUntil(const std::function<bool()>& done) {
  while (!done()) QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents | QEventLoop::AllEvents);
}

// Lets layouts settle and charts replot before a screenshot.
void settle(int ms) {
  QEventLoop loop;
  QTimer::singleShot(ms, &loop, &QEventLoop::quit);
  loop.exec();
}

}  // namespace

// Every option, in the order --help lists them.
struct ScreenshotScript::Options {
  const QCommandLineOption model{QStringLiteral("model"), QStringLiteral("ONNX model file."), QStringLiteral("F")};
  const QCommandLineOption image{QStringLiteral("image"), QStringLiteral("Image to open and classify."),
                                 QStringLiteral("IMG")};
  const QCommandLineOption backend{QStringLiteral("backend"), QStringLiteral("Backend: cpu, cudnn or cuda."),
                                   QStringLiteral("B")};
  const QCommandLineOption runOn{
      QStringLiteral("run-on"),
      QStringLiteral("Where Profile and Compare run: a target of the targets file (mnv2 targets), or local."),
      QStringLiteral("TARGET")};
  const QCommandLineOption probeTarget{
      QStringLiteral("probe-target"),
      QStringLiteral("Tools > Remote targets: probe this target and show what it has (or why not)."),
      QStringLiteral("TARGET")};
  const QCommandLineOption targetsScreenshot{QStringLiteral("targets-screenshot"),
                                             QStringLiteral("Save a picture of the Remote targets dialog."),
                                             QStringLiteral("FILE.png")};
  const QCommandLineOption precision{
      QStringLiteral("precision"),
      QStringLiteral("Arithmetic: fp32, tf32 or fp16 (runs, compare, diffs, sweep, eval); the backend must run it."),
      QStringLiteral("P")};
  const QCommandLineOption eval{QStringLiteral("eval"),
                                QStringLiteral("Accuracy: evaluate a folder of class folders, or a list file."),
                                QStringLiteral("PATH")};
  const QCommandLineOption evalImages{QStringLiteral("eval-images"),
                                      QStringLiteral("Accuracy: the images of a list file (default: its folder)."),
                                      QStringLiteral("DIR")};
  const QCommandLineOption evalBatch{QStringLiteral("eval-batch"), QStringLiteral("Accuracy: batch size."),
                                     QStringLiteral("N")};
  const QCommandLineOption evalThreads{QStringLiteral("eval-threads"),
                                       QStringLiteral("Accuracy: loader threads (0: min(4, cores))."),
                                       QStringLiteral("N")};
  const QCommandLineOption exportEvalCsv{QStringLiteral("export-eval-csv"),
                                         QStringLiteral("Write the evaluation's result as CSV."), QStringLiteral("F")};
  const QCommandLineOption timing{QStringLiteral("timing"), QStringLiteral("GPU timing: event or cupti."),
                                  QStringLiteral("T")};
  const QCommandLineOption batch{QStringLiteral("batch"), QStringLiteral("Batch size."), QStringLiteral("N")};
  const QCommandLineOption warmup{QStringLiteral("warmup"), QStringLiteral("Warm-up runs per phase."),
                                  QStringLiteral("N")};
  const QCommandLineOption iters{QStringLiteral("iters"), QStringLiteral("Timed runs per phase."), QStringLiteral("N")};
  const QCommandLineOption inputSize{QStringLiteral("input-size"),
                                     QStringLiteral("HxW of the random input (runs without --image)."),
                                     QStringLiteral("HxW")};
  const QCommandLineOption run{QStringLiteral("run"), QStringLiteral("Profile the backend.")};
  const QCommandLineOption compare{QStringLiteral("compare"),
                                   QStringLiteral("Profile every available backend and diff them.")};
  const QCommandLineOption report{QStringLiteral("report"), QStringLiteral("Open a JSON report (repeatable)."),
                                  QStringLiteral("F")};
  const QCommandLineOption diff{
      QStringLiteral("diff"), QStringLiteral("Compute the output diff of backend A against B."), QStringLiteral("A,B")};
  const QCommandLineOption tab{
      QStringLiteral("tab"),
      QStringLiteral("Tab to show: topology, timings, timeline, diffs, comparison, graph, roofline, "
                     "sweep, accuracy, lab, deepdive."),
      QStringLiteral("NAME")};
  const QCommandLineOption colorBy{
      QStringLiteral("color-by"), QStringLiteral("Graph colours: time, share, error or kind."), QStringLiteral("WHAT")};
  const QCommandLineOption logScale{QStringLiteral("log-scale"), QStringLiteral("Timings chart on a log scale.")};
  const QCommandLineOption runs{QStringLiteral("runs"),
                                QStringLiteral("Run comparison: rows A,B of the run list (0 = first run)."),
                                QStringLiteral("A,B")};
  const QCommandLineOption ceilings{QStringLiteral("ceilings"),
                                    QStringLiteral("Measure the roofline ceilings with the run (cached per device).")};
  const QCommandLineOption rooflineRun{QStringLiteral("roofline-run"),
                                       QStringLiteral("Roofline page: place run N of the shown runs (0 = first)."),
                                       QStringLiteral("N")};
  const QCommandLineOption sweep{QStringLiteral("sweep"), QStringLiteral("Run the Sweep page's sweep.")};
  const QCommandLineOption sweepBackends{QStringLiteral("sweep-backends"), QStringLiteral("Sweep: backends B1,B2."),
                                         QStringLiteral("LIST")};
  const QCommandLineOption sweepSizes{QStringLiteral("sweep-sizes"), QStringLiteral("Sweep: input sizes HxW,HxW."),
                                      QStringLiteral("LIST")};
  const QCommandLineOption sweepBatches{QStringLiteral("sweep-batches"), QStringLiteral("Sweep: batch sizes N,N."),
                                        QStringLiteral("LIST")};
  const QCommandLineOption sweepX{QStringLiteral("sweep-x"), QStringLiteral("Sweep charts' x axis: batch or size."),
                                  QStringLiteral("AXIS")};
  const QCommandLineOption selectLayer{QStringLiteral("select-layer"), QStringLiteral("Select a layer."),
                                       QStringLiteral("N")};
  const QCommandLineOption deepDive{
      QStringLiteral("deep-dive"),
      QStringLiteral("Deep dive (Nsight Compute: ncu on the PATH) into the --select-layer layer of the shown runs, or "
                     "of the --runs A,B pair with --tab comparison; then the Deep dive page is in front.")};
  const QCommandLineOption exportCsv{QStringLiteral("export-csv"), QStringLiteral("Write the shown runs as CSV."),
                                     QStringLiteral("F")};
  const QCommandLineOption exportJson{QStringLiteral("export-json"), QStringLiteral("Write the shown runs as JSON."),
                                      QStringLiteral("F")};
  const QCommandLineOption exportTrace{QStringLiteral("export-trace"), QStringLiteral("Write a Perfetto trace."),
                                       QStringLiteral("F")};
  const QCommandLineOption screenshot{QStringLiteral("screenshot"), QStringLiteral("Save a picture of the window."),
                                      QStringLiteral("FILE.png")};
  const QCommandLineOption size{QStringLiteral("size"), QStringLiteral("Window size, e.g. 1500x950."),
                                QStringLiteral("WxH")};
  const QCommandLineOption decoder{QStringLiteral("decoder"),
                                   QStringLiteral("Image decoder: auto (OpenCV when built with it), opencv, qimage."),
                                   QStringLiteral("D")};
  const QCommandLineOption labSlot{
      QStringLiteral("lab-slot"),
      QStringLiteral("Kernel lab: the slot (depthwise, pointwise, stem, pool, classifier)."), QStringLiteral("S")};
  const QCommandLineOption labKernel{QStringLiteral("lab-kernel"),
                                     QStringLiteral("Kernel lab: open this kernel source in the editor."),
                                     QStringLiteral("F.cu")};
  const QCommandLineOption labTemplate{
      QStringLiteral("lab-template"),
      QStringLiteral("Kernel lab: start from the slot's template (mnv2 lab --template).")};
  const QCommandLineOption labPrecision{QStringLiteral("lab-precision"), QStringLiteral("Kernel lab: fp32 or fp16."),
                                        QStringLiteral("P")};
  const QCommandLineOption labLayers{
      QStringLiteral("lab-layers"),
      QStringLiteral("Kernel lab: the layers to replace, e.g. 2,7 (default: all of the slot)."), QStringLiteral("L")};
  const QCommandLineOption labBatch{QStringLiteral("lab-batch"), QStringLiteral("Kernel lab: batch size."),
                                    QStringLiteral("N")};
  const QCommandLineOption labArch{
      QStringLiteral("lab-arch"),
      QStringLiteral("Kernel lab: compile for this architecture, e.g. sm_90 (no GPU here)."), QStringLiteral("ARCH")};
  const QCommandLineOption lab{QStringLiteral("lab"),
                               QStringLiteral("Kernel lab: compile, check or run the editor's kernel with mnv2 lab."),
                               QStringLiteral("ACTION")};
  const QCommandLineOption labView{
      QStringLiteral("lab-view"),
      QStringLiteral("Kernel lab: the view in front: chart, check, history, output, diagnostics, commands."),
      QStringLiteral("V")};
  const QCommandLineOption quit{QStringLiteral("quit"),
                                QStringLiteral("Quit when the script is done (exit 1 if a step failed).")};
};

// What check() made of the values, and what the window reported so far (the script waits on these counters).
struct ScreenshotScript::Values {
  QString imageValue;
  bool imageSet = false;
  int batchValue = -1, warmupValue = -1, itersValue = -1, layerValue = -1, evalBatchValue = -1, evalThreadsValue = -1;
  int labBatchValue = -1;
  mnv2::Precision precisionValue = mnv2::Precision::fp32;
  QStringList diffPair, runPair;
  QRegularExpressionMatch windowSize, inputMatch;
  mnv2::ui::ImageDecoder decoderValue = mnv2::ui::ImageDecoder::Auto;
  mnv2::TimerKind timerValue = mnv2::TimerKind::cuda_event;
  QString labAction;
  QString colorValue;
  const QStringList colors = {QStringLiteral("time"), QStringLiteral("share"), QStringLiteral("error"),
                              QStringLiteral("kind")};
  bool scripted = false;
  struct Events {
    int environment = 0;
    int model = 0, image = 0, run = 0, eval = 0;
    int lab = 0;
    bool modelOk = false, imageOk = false, runOk = false, evalOk = false, labOk = false;
  } events;
};

ScreenshotScript::ScreenshotScript(QCommandLineParser& parser)
    : m_parser(parser), m_options(std::make_unique<Options>()), m_values(std::make_unique<Values>()) {
  const Options& o = *m_options;
  m_parser.addOptions({o.model,       o.image,      o.backend,       o.timing,     o.batch,        o.warmup,
                       o.iters,       o.inputSize,  o.run,           o.compare,    o.report,       o.diff,
                       o.tab,         o.colorBy,    o.logScale,      o.runs,       o.selectLayer,  o.ceilings,
                       o.rooflineRun, o.sweep,      o.sweepBackends, o.sweepSizes, o.sweepBatches, o.sweepX,
                       o.exportCsv,   o.exportJson, o.exportTrace,   o.screenshot, o.size,         o.decoder,
                       o.quit});
  m_parser.addOptions({o.precision, o.eval, o.evalImages, o.evalBatch, o.evalThreads, o.exportEvalCsv});
  m_parser.addOptions({o.runOn, o.probeTarget, o.targetsScreenshot, o.deepDive});
  m_parser.addOptions(
      {o.labSlot, o.labKernel, o.labTemplate, o.labPrecision, o.labLayers, o.labBatch, o.labArch, o.lab, o.labView});
  // The desktop entry's "Exec=mnv2-profiler %f": a file manager opens an image with the app.
  m_parser.addPositionalArgument(QStringLiteral("image"), QStringLiteral("An image to open (the same as --image IMG)."),
                                 QStringLiteral("[IMAGE]"));
}

ScreenshotScript::~ScreenshotScript() = default;

bool ScreenshotScript::check() {
  const Options& o = *m_options;
  Values& v = *m_values;
  auto usage = [](const QString& text) {
    say(QStringLiteral("error: ") + text);
    return false;
  };
  auto toInt = [&](const QCommandLineOption& option, int lo, int hi, int* out) {
    if (!m_parser.isSet(option)) return true;
    bool ok = false;
    const int n = m_parser.value(option).toInt(&ok);
    if (!ok || n < lo || n > hi) return false;
    *out = n;
    return true;
  };
  const QStringList positional = m_parser.positionalArguments();
  if (positional.size() > 1) return usage(QStringLiteral("at most one image may be given"));
  if (!positional.isEmpty() && m_parser.isSet(o.image))
    return usage(QStringLiteral("give the image either as --image IMG or as the argument, not both"));
  v.imageValue = positional.isEmpty() ? m_parser.value(o.image) : positional.front();
  v.imageSet = !v.imageValue.isEmpty();
  if (!toInt(o.evalBatch, 1, 4096, &v.evalBatchValue))
    return usage(QStringLiteral("--eval-batch must be an integer in 1..4096"));
  if (!toInt(o.evalThreads, 0, 64, &v.evalThreadsValue))
    return usage(QStringLiteral("--eval-threads must be an integer in 0..64"));
  if (m_parser.isSet(o.evalImages) && !m_parser.isSet(o.eval))
    return usage(QStringLiteral("--eval-images needs --eval LIST"));
  if (m_parser.isSet(o.precision)) {
    try {
      v.precisionValue = mnv2::parse_precision(m_parser.value(o.precision).toStdString());
    } catch (const mnv2::Error&) {
      return usage(QStringLiteral("--precision must be fp32, tf32 or fp16"));
    }
  }
  if (!toInt(o.batch, 1, 65536, &v.batchValue)) return usage(QStringLiteral("--batch must be an integer in 1..65536"));
  if (!toInt(o.warmup, 0, 1000000, &v.warmupValue))
    return usage(QStringLiteral("--warmup must be an integer in 0..1000000"));
  if (!toInt(o.iters, 1, 1000000, &v.itersValue))
    return usage(QStringLiteral("--iters must be an integer in 1..1000000"));
  if (!toInt(o.selectLayer, 0, 100000, &v.layerValue))
    return usage(QStringLiteral("--select-layer must be a layer index"));
  v.diffPair = m_parser.value(o.diff).split(QLatin1Char(','));
  v.runPair = m_parser.value(o.runs).split(QLatin1Char(','));
  if (m_parser.isSet(o.runs) && (v.runPair.size() != 2 || v.runPair[0].toInt() < 0 || v.runPair[1].toInt() < 0))
    return usage(QStringLiteral("--runs takes two row numbers: A,B"));
  if (m_parser.isSet(o.diff) && v.diffPair.size() != 2) return usage(QStringLiteral("--diff takes two backends: A,B"));
  const QRegularExpression sizePattern(QStringLiteral("^(\\d+)x(\\d+)$"));
  v.windowSize = sizePattern.match(m_parser.value(o.size));
  if (m_parser.isSet(o.size) && !v.windowSize.hasMatch())
    return usage(QStringLiteral("--size must look like 1500x950"));
  v.inputMatch = sizePattern.match(m_parser.value(o.inputSize));
  if (m_parser.isSet(o.inputSize) && !v.inputMatch.hasMatch())
    return usage(QStringLiteral("--input-size must look like 224x224"));
  if (m_parser.isSet(o.decoder)) {
    const QString d = m_parser.value(o.decoder);
    if (d == QLatin1String("opencv"))
      v.decoderValue = mnv2::ui::ImageDecoder::OpenCv;
    else if (d == QLatin1String("qimage"))
      v.decoderValue = mnv2::ui::ImageDecoder::QtImage;
    else if (d != QLatin1String("auto"))
      return usage(QStringLiteral("--decoder must be auto, opencv or qimage"));
  }
  if (m_parser.isSet(o.timing)) {
    const QString t = m_parser.value(o.timing);
    if (t == QLatin1String("cupti"))
      v.timerValue = mnv2::TimerKind::cupti_kernel;
    else if (t != QLatin1String("event"))
      return usage(QStringLiteral("--timing must be event or cupti"));
  }
  v.labAction = m_parser.value(o.lab);
  if (m_parser.isSet(o.lab) && v.labAction != QLatin1String("compile") && v.labAction != QLatin1String("check") &&
      v.labAction != QLatin1String("run"))
    return usage(QStringLiteral("--lab must be compile, check or run"));
  if (m_parser.isSet(o.labPrecision) && m_parser.value(o.labPrecision) != QLatin1String("fp32") &&
      m_parser.value(o.labPrecision) != QLatin1String("fp16"))
    return usage(QStringLiteral("--lab-precision must be fp32 or fp16"));
  if (!toInt(o.labBatch, 1, 4096, &v.labBatchValue))
    return usage(QStringLiteral("--lab-batch must be an integer in 1..4096"));
  if (m_parser.isSet(o.labKernel) && m_parser.isSet(o.labTemplate))
    return usage(QStringLiteral("give the Kernel lab either --lab-kernel F or --lab-template, not both"));
  if (m_parser.isSet(o.lab) && !m_parser.isSet(o.labKernel) && !m_parser.isSet(o.labTemplate))
    return usage(QStringLiteral("--lab needs a source: --lab-kernel F.cu or --lab-template"));
  v.colorValue = m_parser.value(o.colorBy);
  if (m_parser.isSet(o.colorBy) && !v.colors.contains(v.colorValue))
    return usage(QStringLiteral("--color-by must be time, share, error or kind"));

  // Any scripting option makes the run reproducible: no saved settings, errors on stderr instead of boxes.
  v.scripted = m_parser.isSet(o.run) || m_parser.isSet(o.compare) || m_parser.isSet(o.screenshot) ||
               m_parser.isSet(o.quit) || m_parser.isSet(o.exportCsv) || m_parser.isSet(o.exportJson) ||
               m_parser.isSet(o.exportTrace) || m_parser.isSet(o.diff) || m_parser.isSet(o.sweep) ||
               m_parser.isSet(o.eval) || m_parser.isSet(o.exportEvalCsv) || m_parser.isSet(o.lab) ||
               m_parser.isSet(o.labTemplate) || m_parser.isSet(o.probeTarget) || m_parser.isSet(o.targetsScreenshot);
  return true;
}

MainWindow::Options ScreenshotScript::windowOptions() const {
  MainWindow::Options options;
  options.scripted = m_values->scripted;
  options.useSettings = !m_values->scripted;
  options.decoder = m_values->decoderValue;
  return options;
}

std::optional<int> ScreenshotScript::run(MainWindow& window) {
  const Options& o = *m_options;
  Values& v = *m_values;
  if (v.windowSize.hasMatch()) window.resize(v.windowSize.captured(1).toInt(), v.windowSize.captured(2).toInt());
  window.show();

  // The counters outlive this call (an interactive session goes on in the event loop): the lambdas hold them
  // by pointer, the window is their context.
  Values::Events* events = &v.events;
  QObject::connect(&window, &MainWindow::environmentReady, &window, [events] { ++events->environment; });
  QObject::connect(&window, &MainWindow::modelReady, &window, [events](bool ok) {
    ++events->model;
    events->modelOk = ok;
  });
  QObject::connect(&window, &MainWindow::imageReady, &window, [events](bool ok) {
    ++events->image;
    events->imageOk = ok;
  });
  QObject::connect(&window, &MainWindow::runFinished, &window, [events](bool ok) {
    ++events->run;
    events->runOk = ok;
  });
  QObject::connect(&window, &MainWindow::evalFinished, &window, [events](bool ok) {
    ++events->eval;
    events->evalOk = ok;
  });

  mnv2::ui::KernelLabPage* labPage = window.kernelLabPage();
  QObject::connect(labPage, &mnv2::ui::KernelLabPage::finished, &window, [events](bool ok) {
    ++events->lab;
    events->labOk = ok;
  });

  window.start(m_parser.value(o.model));
  // The Kernel lab's fields (no job yet): interactive sessions start with them too (scripts/screenshots.sh).
  bool labFieldsOk = true;
  if (m_parser.isSet(o.labSlot) && !labPage->selectSlot(m_parser.value(o.labSlot))) {
    say(QStringLiteral("--lab-slot: '%1' is not a slot the lab runs (depthwise, pointwise, stem, pool, classifier)")
            .arg(m_parser.value(o.labSlot)));
    labFieldsOk = false;
  }
  if (m_parser.isSet(o.labPrecision)) labPage->setPrecision(m_parser.value(o.labPrecision));
  if (m_parser.isSet(o.labLayers)) labPage->setLayers(m_parser.value(o.labLayers));
  if (v.labBatchValue > 0) labPage->setBatch(v.labBatchValue);
  if (m_parser.isSet(o.labArch) && !labPage->setArch(m_parser.value(o.labArch))) {
    say(QStringLiteral("--lab-arch: '%1' is not offered (sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)")
            .arg(m_parser.value(o.labArch)));
    labFieldsOk = false;
  }
  if (m_parser.isSet(o.labKernel) && !labPage->openFile(m_parser.value(o.labKernel))) {
    say(QStringLiteral("--lab-kernel: %1").arg(labPage->statusText()));
    labFieldsOk = false;
  }
  mnv2::ui::RunSettingsPanel* settings = window.runSettings();
  settings->setCounts(v.batchValue, v.warmupValue, v.itersValue);
  if (m_parser.isSet(o.ceilings)) window.rooflinePage()->setMeasureCeilings(true);
  window.sweepPage()->setFields(m_parser.value(o.sweepBackends), m_parser.value(o.sweepSizes),
                                m_parser.value(o.sweepBatches));
  if (m_parser.isSet(o.sweepX)) window.sweepPage()->setXAxis(m_parser.value(o.sweepX) == QLatin1String("size"));
  if (m_parser.isSet(o.timing)) settings->setTimer(v.timerValue);
  mnv2::ui::AccuracyPage* accuracy = window.accuracyPage();
  accuracy->setSet(m_parser.value(o.eval), m_parser.value(o.evalImages));
  if (v.evalBatchValue > 0) accuracy->setBatch(v.evalBatchValue);
  if (v.evalThreadsValue >= 0) accuracy->setLoaderThreads(v.evalThreadsValue);

  if (!v.scripted) {
    if (m_parser.isSet(o.tab)) window.selectTab(m_parser.value(o.tab));
    if (m_parser.isSet(o.runOn))
      settings->setRunTarget(m_parser.value(o.runOn) == QLatin1String("local") ? QString() : m_parser.value(o.runOn));
    if (m_parser.isSet(o.backend)) settings->selectBackend(m_parser.value(o.backend));
    if (m_parser.isSet(o.precision)) settings->setPrecision(v.precisionValue);
    if (v.imageSet) window.openImage(v.imageValue);
    for (const QString& r : m_parser.values(o.report)) window.openReport(r);
    return std::nullopt;
  }

  bool failed = !labFieldsOk;
  waitUntil([&] { return v.events.environment > 0 && v.events.model > 0; });
  if (!v.events.modelOk) failed = true;
  // Where runs go, before the backend is chosen: a target offers its own backends.
  if (m_parser.isSet(o.runOn)) {
    const QString target = m_parser.value(o.runOn);
    if (target == QLatin1String("local")) {
      settings->setRunTarget(QString());
    } else if (window.targets()->find(target) == nullptr) {
      say(QStringLiteral("--run-on: no target '%1' in %2").arg(target, window.targets()->path()));
      failed = true;
    } else {
      settings->setRunTarget(target);
    }
  }
  if (m_parser.isSet(o.backend) && !settings->selectBackend(m_parser.value(o.backend))) {
    say(QStringLiteral("backend '%1' cannot run here (see `mnv2 info`)").arg(m_parser.value(o.backend)));
    failed = true;
  }
  if (m_parser.isSet(o.backend)) accuracy->selectBackend(m_parser.value(o.backend));
  if (m_parser.isSet(o.precision)) {
    // Asked of the backend (Backend::supports), never assumed: a mode it does not run is an error here.
    const QString chosen = settings->backend();
    if ((m_parser.isSet(o.run) || m_parser.isSet(o.compare) || m_parser.isSet(o.diff)) &&
        !settings->setPrecision(v.precisionValue)) {
      say(QStringLiteral("backend '%1' does not run %2").arg(chosen, m_parser.value(o.precision)));
      failed = true;
    }
    if (m_parser.isSet(o.sweep) && !window.sweepPage()->setPrecision(v.precisionValue)) {
      say(QStringLiteral("a backend of the sweep does not run %1").arg(m_parser.value(o.precision)));
      failed = true;
    }
    if (m_parser.isSet(o.eval) && !accuracy->setPrecision(v.precisionValue)) {
      say(QStringLiteral("backend '%1' does not run %2").arg(chosen, m_parser.value(o.precision)));
      failed = true;
    }
    settings->setPrecision(v.precisionValue);  // shown, where the backend runs it, even without a run
  }
  if (v.imageSet && v.events.modelOk) {
    const int before = v.events.image;
    window.openImage(v.imageValue);
    waitUntil([&] { return v.events.image > before; });
    if (!v.events.imageOk) failed = true;
  }
  if (v.inputMatch.hasMatch()) {
    settings->setModelInputSize(v.inputMatch.captured(1).toInt(), v.inputMatch.captured(2).toInt());
  }
  for (const QString& r : m_parser.values(o.report))
    if (!window.openReport(r)) failed = true;
  if ((m_parser.isSet(o.run) || m_parser.isSet(o.compare)) && v.events.modelOk && !failed) {
    const int before = v.events.run;
    window.startRun(m_parser.isSet(o.compare));
    waitUntil([&] { return v.events.run > before; });
    if (!v.events.runOk) failed = true;
  }
  if (m_parser.isSet(o.sweep) && v.events.modelOk && !failed) {
    const int before = v.events.run;
    if (window.startSweep()) {
      waitUntil([&] { return v.events.run > before; });
      if (!v.events.runOk) failed = true;
    } else {
      failed = true;
    }
  }
  if (m_parser.isSet(o.diff) && v.events.modelOk && !failed) {
    const int before = v.events.run;
    window.computeDiff(v.diffPair[0], v.diffPair[1]);
    waitUntil([&] { return v.events.run > before; });
    if (!v.events.runOk) failed = true;
  }
  if (m_parser.isSet(o.eval) && v.events.modelOk && !failed) {
    const int before = v.events.eval;
    if (window.startEval()) {
      waitUntil([&] { return v.events.eval > before; });
      if (!v.events.evalOk) failed = true;
    } else {
      failed = true;
    }
  }
  // The Kernel lab: a template, then the job. A compile error or a failed check is a result like any other
  // (what a screenshot of the page may want to show); no result at all (no mnv2, a refused request) fails.
  if (m_parser.isSet(o.labTemplate) && labFieldsOk) {
    const int before = v.events.lab;
    if (labPage->newFromTemplate()) {
      waitUntil([&] { return v.events.lab > before; });
      if (!v.events.labOk) failed = true;
    } else {
      failed = true;
    }
    if (failed) say(QStringLiteral("--lab-template: %1").arg(labPage->statusText()));
  }
  if (m_parser.isSet(o.lab) && labFieldsOk && !failed) {
    window.selectTab(QStringLiteral("lab"));  // in front while it runs: its output scrolls as it comes
    const int before = v.events.lab;
    const bool started = v.labAction == QLatin1String("compile") ? labPage->compile()
                         : v.labAction == QLatin1String("check") ? labPage->check()
                                                                 : labPage->run();
    if (started) waitUntil([&] { return v.events.lab > before; });
    if (!started || !v.events.labOk) failed = true;
    say(QStringLiteral("lab %1: %2").arg(v.labAction, labPage->statusText()));
  }
  if (m_parser.isSet(o.labView) && !labPage->showView(m_parser.value(o.labView))) {
    say(QStringLiteral("unknown --lab-view '%1'").arg(m_parser.value(o.labView)));
    failed = true;
  }
  if (m_parser.isSet(o.exportEvalCsv)) {
    if (window.exportEvalCsv(m_parser.value(o.exportEvalCsv)))
      say(QStringLiteral("wrote %1").arg(m_parser.value(o.exportEvalCsv)));
    else
      failed = true;
  }
  const std::pair<const QCommandLineOption*, MainWindow::ExportFormat> exports[] = {
      {&o.exportCsv, MainWindow::ExportFormat::Csv},
      {&o.exportJson, MainWindow::ExportFormat::Json},
      {&o.exportTrace, MainWindow::ExportFormat::Trace}};
  for (const auto& [option, format] : exports) {
    if (!m_parser.isSet(*option)) continue;
    if (window.exportTo(format, m_parser.value(*option)))
      say(QStringLiteral("wrote %1").arg(m_parser.value(*option)));
    else
      failed = true;
  }
  if (m_parser.isSet(o.tab) && !window.selectTab(m_parser.value(o.tab))) {
    say(QStringLiteral("unknown tab '%1'").arg(m_parser.value(o.tab)));
    failed = true;
  }
  if (m_parser.isSet(o.colorBy))
    window.graphPage()->setColorBy(static_cast<mnv2::ui::NetworkGraphView::ColorBy>(v.colors.indexOf(v.colorValue)));
  if (m_parser.isSet(o.logScale)) window.timingsPage()->setLogScale(true);
  if (m_parser.isSet(o.runs)) window.comparisonPage()->selectRuns(v.runPair[0].toInt(), v.runPair[1].toInt());
  if (m_parser.isSet(o.rooflineRun) && !window.rooflinePage()->selectRun(m_parser.value(o.rooflineRun).toInt())) {
    say(QStringLiteral("--roofline-run: no run %1 is shown").arg(m_parser.value(o.rooflineRun)));
    failed = true;
  }
  if (v.layerValue >= 0) window.selection()->setCurrentLayer(v.layerValue);
  if (m_parser.isSet(o.deepDive)) {
    mnv2::ui::DeepDivePage* page = window.deepDivePage();
    bool done = false;
    QObject::connect(page, &mnv2::ui::DeepDivePage::diveFinished, page, [&done] { done = true; });
    window.deepDive();
    if (page->isRunning()) waitUntil([&] { return done; });
    say(QStringLiteral("deep dive: %1").arg(page->message()));
    const auto& columns = page->model()->columns();
    failed = failed || columns.empty();
    for (const auto& c : columns) {
      say(QStringLiteral("deep dive %1: %2").arg(c.run, c.result ? QStringLiteral("profiled") : c.status));
      failed = failed || !c.result;
    }
  }

  // Tools > Remote targets: a probe's answer (or the engine's error: a result like any other), its picture.
  if (m_parser.isSet(o.probeTarget) || m_parser.isSet(o.targetsScreenshot)) {
    mnv2::ui::TargetsDialog* dialog = window.targetsDialog(true);
    const QString shown = m_parser.isSet(o.probeTarget) ? m_parser.value(o.probeTarget) : settings->runTarget();
    if (!shown.isEmpty()) dialog->selectTarget(shown);
    if (m_parser.isSet(o.probeTarget)) {
      bool done = false;
      QObject::connect(dialog, &mnv2::ui::TargetsDialog::probeFinished, dialog, [&done] { done = true; });
      if (window.targets()->find(shown) == nullptr || !dialog->probeSelected()) {
        say(QStringLiteral("--probe-target: no target '%1' in %2").arg(shown, window.targets()->path()));
        failed = true;
      } else {
        waitUntil([&] { return done; });
        say(QStringLiteral("probe %1: %2").arg(shown, dialog->probeText().left(2000)));
      }
    }
    if (m_parser.isSet(o.targetsScreenshot)) {
      settle(400);
      const QString path = m_parser.value(o.targetsScreenshot);
      if (dialog->grab().save(path)) {
        say(QStringLiteral("wrote %1").arg(path));
      } else {
        say(QStringLiteral("could not write the screenshot %1").arg(path));
        failed = true;
      }
    }
  }
  if (m_parser.isSet(o.screenshot)) {
    settle(400);
    const QString path = m_parser.value(o.screenshot);
    if (window.grab().save(path)) {
      say(QStringLiteral("wrote %1").arg(path));
    } else {
      say(QStringLiteral("could not write the screenshot %1").arg(path));
      failed = true;
    }
  }
  if (m_parser.isSet(o.quit)) return failed ? 1 : 0;
  return std::nullopt;
}

}  // namespace mnv2::gui
