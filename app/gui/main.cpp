// mnv2-profiler: the Qt desktop app. Without scripting options it opens the window; with them it runs a
// fixed sequence for automated screenshots and tests, driving the very same window and worker:
//   mnv2-profiler --model F --image IMG --backend B [--precision P] --run [--compare] [--screenshot FILE.png] [--quit]
//   mnv2-profiler --backend B [--precision P] --eval SET [--eval-images DIR] [--eval-batch N] --tab accuracy
//                 [--export-eval-csv F] [--screenshot FILE.png] [--quit]
//   mnv2-profiler --tab lab --lab-slot S (--lab-kernel F.cu | --lab-template) [--lab-precision P] [--lab-layers L]
//                 [--lab-batch N] [--lab-arch sm_XX] --lab compile|check|run [--lab-view V] [--screenshot F] [--quit]
//     (the Kernel lab runs `mnv2 lab` as a process: MNV2_CLI, else the mnv2 beside this program, else the PATH)
// Exit codes with --quit: 0 success, 1 a step failed (model, image, report, run, export, screenshot),
// 2 bad arguments.
#include <QApplication>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QRegularExpression>
#include <QTimer>
#include <cstdio>
#include <functional>
#include <memory>
#include <string_view>

#include "common/environment.h"
#include "common/omp_wait_policy.h"
#include "mnv2/error.h"
#include "models/layer_selection.h"
#include "widgets/accuracy_page.h"
#include "widgets/comparison_page.h"
#include "widgets/kernel_lab_page.h"
#include "widgets/main_window.h"
#include "widgets/network_graph_view.h"
#include "widgets/roofline_page.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/timings_page.h"

using mnv2::ui::MainWindow;

namespace {

void say(const QString& text) { std::fprintf(stderr, "mnv2-profiler: %s\n", qPrintable(text)); }

// What the window reported so far; the script waits on these counters.
struct Events {
  int environment = 0;
  int model = 0, image = 0, run = 0, eval = 0;
  int lab = 0;
  bool modelOk = false, imageOk = false, runOk = false, evalOk = false, labOk = false;
};

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

// Idle OpenMP threads spin briefly, then sleep, unless the user chose a policy (set before libgomp starts).
MNV2_DEFAULT_OMP_WAIT_POLICY();

int main(int argc, char** argv) {
  // --help and --version print and exit before any window system is needed: a QCoreApplication for them (a
  // QApplication aborts without a display), the QApplication otherwise.
  bool textOnly = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    if (a == "--") break;
    if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version") textOnly = true;
  }
  std::unique_ptr<QCoreApplication> app;
  if (textOnly)
    app = std::make_unique<QCoreApplication>(argc, argv);
  else
    app = std::make_unique<QApplication>(argc, argv);
  QCoreApplication::setOrganizationName(QStringLiteral("mnv2"));
  QCoreApplication::setApplicationName(QStringLiteral("mnv2-profiler"));
  QCoreApplication::setApplicationVersion(QStringLiteral(MNV2_VERSION));
  if (!textOnly) QApplication::setWindowIcon(QIcon(QStringLiteral(":/mnv2/mnv2-profiler.png")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "A visual profiler for MobileNetV2 inference. The model is --model F, else $MNV2_MODEL, else a weights/ "
      "folder next to the program, else the built-in topology with synthetic weights."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("ONNX model file."), QStringLiteral("F"));
  const QCommandLineOption image(QStringLiteral("image"), QStringLiteral("Image to open and classify."),
                                 QStringLiteral("IMG"));
  const QCommandLineOption backend(QStringLiteral("backend"), QStringLiteral("Backend: cpu, cudnn or cuda."),
                                   QStringLiteral("B"));
  const QCommandLineOption precision(
      QStringLiteral("precision"),
      QStringLiteral("Arithmetic: fp32, tf32 or fp16 (runs, compare, diffs, sweep, eval); the backend must run it."),
      QStringLiteral("P"));
  const QCommandLineOption eval(QStringLiteral("eval"),
                                QStringLiteral("Accuracy: evaluate a folder of class folders, or a list file."),
                                QStringLiteral("PATH"));
  const QCommandLineOption evalImages(QStringLiteral("eval-images"),
                                      QStringLiteral("Accuracy: the images of a list file (default: its folder)."),
                                      QStringLiteral("DIR"));
  const QCommandLineOption evalBatch(QStringLiteral("eval-batch"), QStringLiteral("Accuracy: batch size."),
                                     QStringLiteral("N"));
  const QCommandLineOption evalThreads(QStringLiteral("eval-threads"),
                                       QStringLiteral("Accuracy: loader threads (0: min(4, cores))."),
                                       QStringLiteral("N"));
  const QCommandLineOption exportEvalCsv(QStringLiteral("export-eval-csv"),
                                         QStringLiteral("Write the evaluation's result as CSV."), QStringLiteral("F"));
  const QCommandLineOption timing(QStringLiteral("timing"), QStringLiteral("GPU timing: event or cupti."),
                                  QStringLiteral("T"));
  const QCommandLineOption batch(QStringLiteral("batch"), QStringLiteral("Batch size."), QStringLiteral("N"));
  const QCommandLineOption warmup(QStringLiteral("warmup"), QStringLiteral("Warm-up runs per phase."),
                                  QStringLiteral("N"));
  const QCommandLineOption iters(QStringLiteral("iters"), QStringLiteral("Timed runs per phase."), QStringLiteral("N"));
  const QCommandLineOption inputSize(QStringLiteral("input-size"),
                                     QStringLiteral("HxW of the random input (runs without --image)."),
                                     QStringLiteral("HxW"));
  const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Profile the backend."));
  const QCommandLineOption compare(QStringLiteral("compare"),
                                   QStringLiteral("Profile every available backend and diff them."));
  const QCommandLineOption report(QStringLiteral("report"), QStringLiteral("Open a JSON report (repeatable)."),
                                  QStringLiteral("F"));
  const QCommandLineOption diff(
      QStringLiteral("diff"), QStringLiteral("Compute the output diff of backend A against B."), QStringLiteral("A,B"));
  const QCommandLineOption tab(
      QStringLiteral("tab"),
      QStringLiteral("Tab to show: topology, timings, timeline, diffs, comparison, graph, roofline, "
                     "sweep, accuracy, lab."),
      QStringLiteral("NAME"));
  const QCommandLineOption colorBy(
      QStringLiteral("color-by"), QStringLiteral("Graph colours: time, share, error or kind."), QStringLiteral("WHAT"));
  const QCommandLineOption logScale(QStringLiteral("log-scale"), QStringLiteral("Timings chart on a log scale."));
  const QCommandLineOption runs(QStringLiteral("runs"),
                                QStringLiteral("Run comparison: rows A,B of the run list (0 = first run)."),
                                QStringLiteral("A,B"));
  const QCommandLineOption ceilings(QStringLiteral("ceilings"),
                                    QStringLiteral("Measure the roofline ceilings with the run (cached per device)."));
  const QCommandLineOption rooflineRun(QStringLiteral("roofline-run"),
                                       QStringLiteral("Roofline page: place run N of the shown runs (0 = first)."),
                                       QStringLiteral("N"));
  const QCommandLineOption sweep(QStringLiteral("sweep"), QStringLiteral("Run the Sweep page's sweep."));
  const QCommandLineOption sweepBackends(QStringLiteral("sweep-backends"), QStringLiteral("Sweep: backends B1,B2."),
                                         QStringLiteral("LIST"));
  const QCommandLineOption sweepSizes(QStringLiteral("sweep-sizes"), QStringLiteral("Sweep: input sizes HxW,HxW."),
                                      QStringLiteral("LIST"));
  const QCommandLineOption sweepBatches(QStringLiteral("sweep-batches"), QStringLiteral("Sweep: batch sizes N,N."),
                                        QStringLiteral("LIST"));
  const QCommandLineOption sweepX(QStringLiteral("sweep-x"), QStringLiteral("Sweep charts' x axis: batch or size."),
                                  QStringLiteral("AXIS"));
  const QCommandLineOption selectLayer(QStringLiteral("select-layer"), QStringLiteral("Select a layer."),
                                       QStringLiteral("N"));
  const QCommandLineOption exportCsv(QStringLiteral("export-csv"), QStringLiteral("Write the shown runs as CSV."),
                                     QStringLiteral("F"));
  const QCommandLineOption exportJson(QStringLiteral("export-json"), QStringLiteral("Write the shown runs as JSON."),
                                      QStringLiteral("F"));
  const QCommandLineOption exportTrace(QStringLiteral("export-trace"), QStringLiteral("Write a Perfetto trace."),
                                       QStringLiteral("F"));
  const QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save a picture of the window."),
                                      QStringLiteral("FILE.png"));
  const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1500x950."),
                                QStringLiteral("WxH"));
  const QCommandLineOption decoder(QStringLiteral("decoder"),
                                   QStringLiteral("Image decoder: auto (OpenCV when built with it), opencv, qimage."),
                                   QStringLiteral("D"));
  const QCommandLineOption labSlot(
      QStringLiteral("lab-slot"),
      QStringLiteral("Kernel lab: the slot (depthwise, pointwise, stem, pool, classifier)."), QStringLiteral("S"));
  const QCommandLineOption labKernel(QStringLiteral("lab-kernel"),
                                     QStringLiteral("Kernel lab: open this kernel source in the editor."),
                                     QStringLiteral("F.cu"));
  const QCommandLineOption labTemplate(
      QStringLiteral("lab-template"),
      QStringLiteral("Kernel lab: start from the slot's template (mnv2 lab --template)."));
  const QCommandLineOption labPrecision(QStringLiteral("lab-precision"), QStringLiteral("Kernel lab: fp32 or fp16."),
                                        QStringLiteral("P"));
  const QCommandLineOption labLayers(
      QStringLiteral("lab-layers"),
      QStringLiteral("Kernel lab: the layers to replace, e.g. 2,7 (default: all of the slot)."), QStringLiteral("L"));
  const QCommandLineOption labBatch(QStringLiteral("lab-batch"), QStringLiteral("Kernel lab: batch size."),
                                    QStringLiteral("N"));
  const QCommandLineOption labArch(
      QStringLiteral("lab-arch"),
      QStringLiteral("Kernel lab: compile for this architecture, e.g. sm_90 (no GPU here)."), QStringLiteral("ARCH"));
  const QCommandLineOption lab(QStringLiteral("lab"),
                               QStringLiteral("Kernel lab: compile, check or run the editor's kernel with mnv2 lab."),
                               QStringLiteral("ACTION"));
  const QCommandLineOption labView(
      QStringLiteral("lab-view"),
      QStringLiteral("Kernel lab: the view in front: chart, check, history, output, diagnostics, commands."),
      QStringLiteral("V"));
  const QCommandLineOption quit(QStringLiteral("quit"),
                                QStringLiteral("Quit when the script is done (exit 1 if a step failed)."));
  parser.addOptions({model,      image,        backend,     timing,    batch,       warmup,      iters,
                     inputSize,  run,          compare,     report,    diff,        tab,         colorBy,
                     logScale,   runs,         selectLayer, ceilings,  rooflineRun, sweep,       sweepBackends,
                     sweepSizes, sweepBatches, sweepX,      exportCsv, exportJson,  exportTrace, screenshot,
                     size,       decoder,      quit});
  parser.addOptions({precision, eval, evalImages, evalBatch, evalThreads, exportEvalCsv});
  parser.addOptions({labSlot, labKernel, labTemplate, labPrecision, labLayers, labBatch, labArch, lab, labView});
  // The desktop entry's "Exec=mnv2-profiler %f": a file manager opens an image with the app.
  parser.addPositionalArgument(QStringLiteral("image"), QStringLiteral("An image to open (the same as --image IMG)."),
                               QStringLiteral("[IMAGE]"));
  parser.process(*app);  // --help, --version: printed, exit 0
  {
    // The engine's process-wide settings (model lookup's $MNV2_MODEL, caches, CUPTI switch, the kernel lab's
    // folder, the cpu backends' default threads) from the environment, as the CLI takes them.
    mnv2::OptionValues values;
    try {
      mnv2::frontend::offer_environment(values);
    } catch (const mnv2::Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
    mnv2::set_process_settings(mnv2::frontend::process_settings_of(values));
  }
  if (textOnly) return 0;  // not reached: process() exits for them

  auto usage = [](const QString& text) {
    say(QStringLiteral("error: ") + text);
    return 2;
  };
  auto toInt = [&](const QCommandLineOption& o, int lo, int hi, int* out) {
    if (!parser.isSet(o)) return true;
    bool ok = false;
    const int v = parser.value(o).toInt(&ok);
    if (!ok || v < lo || v > hi) return false;
    *out = v;
    return true;
  };
  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) return usage(QStringLiteral("at most one image may be given"));
  if (!positional.isEmpty() && parser.isSet(image))
    return usage(QStringLiteral("give the image either as --image IMG or as the argument, not both"));
  const QString imageValue = positional.isEmpty() ? parser.value(image) : positional.front();
  const bool imageSet = !imageValue.isEmpty();
  int batchValue = -1, warmupValue = -1, itersValue = -1, layerValue = -1, evalBatchValue = -1, evalThreadsValue = -1;
  if (!toInt(evalBatch, 1, 4096, &evalBatchValue))
    return usage(QStringLiteral("--eval-batch must be an integer in 1..4096"));
  if (!toInt(evalThreads, 0, 64, &evalThreadsValue))
    return usage(QStringLiteral("--eval-threads must be an integer in 0..64"));
  if (parser.isSet(evalImages) && !parser.isSet(eval)) return usage(QStringLiteral("--eval-images needs --eval LIST"));
  mnv2::Precision precisionValue = mnv2::Precision::fp32;
  if (parser.isSet(precision)) {
    try {
      precisionValue = mnv2::parse_precision(parser.value(precision).toStdString());
    } catch (const mnv2::Error&) {
      return usage(QStringLiteral("--precision must be fp32, tf32 or fp16"));
    }
  }
  if (!toInt(batch, 1, 65536, &batchValue)) return usage(QStringLiteral("--batch must be an integer in 1..65536"));
  if (!toInt(warmup, 0, 1000000, &warmupValue))
    return usage(QStringLiteral("--warmup must be an integer in 0..1000000"));
  if (!toInt(iters, 1, 1000000, &itersValue)) return usage(QStringLiteral("--iters must be an integer in 1..1000000"));
  if (!toInt(selectLayer, 0, 100000, &layerValue)) return usage(QStringLiteral("--select-layer must be a layer index"));
  const QStringList diffPair = parser.value(diff).split(QLatin1Char(','));
  const QStringList runPair = parser.value(runs).split(QLatin1Char(','));
  if (parser.isSet(runs) && (runPair.size() != 2 || runPair[0].toInt() < 0 || runPair[1].toInt() < 0))
    return usage(QStringLiteral("--runs takes two row numbers: A,B"));
  if (parser.isSet(diff) && diffPair.size() != 2) return usage(QStringLiteral("--diff takes two backends: A,B"));
  const QRegularExpression sizePattern(QStringLiteral("^(\\d+)x(\\d+)$"));
  const auto windowSize = sizePattern.match(parser.value(size));
  if (parser.isSet(size) && !windowSize.hasMatch()) return usage(QStringLiteral("--size must look like 1500x950"));
  const auto inputMatch = sizePattern.match(parser.value(inputSize));
  if (parser.isSet(inputSize) && !inputMatch.hasMatch())
    return usage(QStringLiteral("--input-size must look like 224x224"));
  mnv2::ui::ImageDecoder decoderValue = mnv2::ui::ImageDecoder::Auto;
  if (parser.isSet(decoder)) {
    const QString d = parser.value(decoder);
    if (d == QLatin1String("opencv"))
      decoderValue = mnv2::ui::ImageDecoder::OpenCv;
    else if (d == QLatin1String("qimage"))
      decoderValue = mnv2::ui::ImageDecoder::QtImage;
    else if (d != QLatin1String("auto"))
      return usage(QStringLiteral("--decoder must be auto, opencv or qimage"));
  }
  mnv2::TimerKind timerValue = mnv2::TimerKind::cuda_event;
  if (parser.isSet(timing)) {
    const QString t = parser.value(timing);
    if (t == QLatin1String("cupti"))
      timerValue = mnv2::TimerKind::cupti_kernel;
    else if (t != QLatin1String("event"))
      return usage(QStringLiteral("--timing must be event or cupti"));
  }
  const QString labAction = parser.value(lab);
  if (parser.isSet(lab) && labAction != QLatin1String("compile") && labAction != QLatin1String("check") &&
      labAction != QLatin1String("run"))
    return usage(QStringLiteral("--lab must be compile, check or run"));
  if (parser.isSet(labPrecision) && parser.value(labPrecision) != QLatin1String("fp32") &&
      parser.value(labPrecision) != QLatin1String("fp16"))
    return usage(QStringLiteral("--lab-precision must be fp32 or fp16"));
  int labBatchValue = -1;
  if (!toInt(labBatch, 1, 4096, &labBatchValue))
    return usage(QStringLiteral("--lab-batch must be an integer in 1..4096"));
  if (parser.isSet(labKernel) && parser.isSet(labTemplate))
    return usage(QStringLiteral("give the Kernel lab either --lab-kernel F or --lab-template, not both"));
  if (parser.isSet(lab) && !parser.isSet(labKernel) && !parser.isSet(labTemplate))
    return usage(QStringLiteral("--lab needs a source: --lab-kernel F.cu or --lab-template"));
  const QString colorValue = parser.value(colorBy);
  const QStringList colors = {QStringLiteral("time"), QStringLiteral("share"), QStringLiteral("error"),
                              QStringLiteral("kind")};
  if (parser.isSet(colorBy) && !colors.contains(colorValue))
    return usage(QStringLiteral("--color-by must be time, share, error or kind"));

  // Any scripting option makes the run reproducible: no saved settings, errors on stderr instead of boxes.
  const bool scripted = parser.isSet(run) || parser.isSet(compare) || parser.isSet(screenshot) || parser.isSet(quit) ||
                        parser.isSet(exportCsv) || parser.isSet(exportJson) || parser.isSet(exportTrace) ||
                        parser.isSet(diff) || parser.isSet(sweep) || parser.isSet(eval) ||
                        parser.isSet(exportEvalCsv) || parser.isSet(lab) || parser.isSet(labTemplate);
  MainWindow::Options options;
  options.scripted = scripted;
  options.useSettings = !scripted;
  options.decoder = decoderValue;
  MainWindow window(options);
  if (windowSize.hasMatch()) window.resize(windowSize.captured(1).toInt(), windowSize.captured(2).toInt());
  window.show();

  Events events;
  QObject::connect(&window, &MainWindow::environmentReady, &window, [&] { ++events.environment; });
  QObject::connect(&window, &MainWindow::modelReady, &window, [&](bool ok) {
    ++events.model;
    events.modelOk = ok;
  });
  QObject::connect(&window, &MainWindow::imageReady, &window, [&](bool ok) {
    ++events.image;
    events.imageOk = ok;
  });
  QObject::connect(&window, &MainWindow::runFinished, &window, [&](bool ok) {
    ++events.run;
    events.runOk = ok;
  });
  QObject::connect(&window, &MainWindow::evalFinished, &window, [&](bool ok) {
    ++events.eval;
    events.evalOk = ok;
  });

  mnv2::ui::KernelLabPage* labPage = window.kernelLabPage();
  QObject::connect(labPage, &mnv2::ui::KernelLabPage::finished, &window, [&](bool ok) {
    ++events.lab;
    events.labOk = ok;
  });

  window.start(parser.value(model));
  // The Kernel lab's fields (no job yet): interactive sessions start with them too (scripts/screenshots.sh).
  bool labFieldsOk = true;
  if (parser.isSet(labSlot) && !labPage->selectSlot(parser.value(labSlot))) {
    say(QStringLiteral("--lab-slot: '%1' is not a slot the lab runs (depthwise, pointwise, stem, pool, classifier)")
            .arg(parser.value(labSlot)));
    labFieldsOk = false;
  }
  if (parser.isSet(labPrecision)) labPage->setPrecision(parser.value(labPrecision));
  if (parser.isSet(labLayers)) labPage->setLayers(parser.value(labLayers));
  if (labBatchValue > 0) labPage->setBatch(labBatchValue);
  if (parser.isSet(labArch) && !labPage->setArch(parser.value(labArch))) {
    say(QStringLiteral("--lab-arch: '%1' is not offered (sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)")
            .arg(parser.value(labArch)));
    labFieldsOk = false;
  }
  if (parser.isSet(labKernel) && !labPage->openFile(parser.value(labKernel))) {
    say(QStringLiteral("--lab-kernel: %1").arg(labPage->statusText()));
    labFieldsOk = false;
  }
  mnv2::ui::RunSettingsPanel* settings = window.runSettings();
  settings->setCounts(batchValue, warmupValue, itersValue);
  if (parser.isSet(ceilings)) window.rooflinePage()->setMeasureCeilings(true);
  window.sweepPage()->setFields(parser.value(sweepBackends), parser.value(sweepSizes), parser.value(sweepBatches));
  if (parser.isSet(sweepX)) window.sweepPage()->setXAxis(parser.value(sweepX) == QLatin1String("size"));
  if (parser.isSet(timing)) settings->setTimer(timerValue);
  mnv2::ui::AccuracyPage* accuracy = window.accuracyPage();
  accuracy->setSet(parser.value(eval), parser.value(evalImages));
  if (evalBatchValue > 0) accuracy->setBatch(evalBatchValue);
  if (evalThreadsValue >= 0) accuracy->setLoaderThreads(evalThreadsValue);

  if (!scripted) {
    if (parser.isSet(tab)) window.selectTab(parser.value(tab));
    if (parser.isSet(backend)) settings->selectBackend(parser.value(backend));
    if (parser.isSet(precision)) settings->setPrecision(precisionValue);
    if (imageSet) window.openImage(imageValue);
    for (const QString& r : parser.values(report)) window.openReport(r);
    return QApplication::exec();
  }

  bool failed = !labFieldsOk;
  waitUntil([&] { return events.environment > 0 && events.model > 0; });
  if (!events.modelOk) failed = true;
  if (parser.isSet(backend) && !settings->selectBackend(parser.value(backend))) {
    say(QStringLiteral("backend '%1' cannot run here (see `mnv2 info`)").arg(parser.value(backend)));
    failed = true;
  }
  if (parser.isSet(backend)) accuracy->selectBackend(parser.value(backend));
  if (parser.isSet(precision)) {
    // Asked of the backend (Backend::supports), never assumed: a mode it does not run is an error here.
    const QString chosen = settings->backend();
    if ((parser.isSet(run) || parser.isSet(compare) || parser.isSet(diff)) && !settings->setPrecision(precisionValue)) {
      say(QStringLiteral("backend '%1' does not run %2").arg(chosen, parser.value(precision)));
      failed = true;
    }
    if (parser.isSet(sweep) && !window.sweepPage()->setPrecision(precisionValue)) {
      say(QStringLiteral("a backend of the sweep does not run %1").arg(parser.value(precision)));
      failed = true;
    }
    if (parser.isSet(eval) && !accuracy->setPrecision(precisionValue)) {
      say(QStringLiteral("backend '%1' does not run %2").arg(chosen, parser.value(precision)));
      failed = true;
    }
    settings->setPrecision(precisionValue);  // shown, where the backend runs it, even without a run
  }
  if (imageSet && events.modelOk) {
    const int before = events.image;
    window.openImage(imageValue);
    waitUntil([&] { return events.image > before; });
    if (!events.imageOk) failed = true;
  }
  if (inputMatch.hasMatch()) {
    settings->setModelInputSize(inputMatch.captured(1).toInt(), inputMatch.captured(2).toInt());
  }
  for (const QString& r : parser.values(report))
    if (!window.openReport(r)) failed = true;
  if ((parser.isSet(run) || parser.isSet(compare)) && events.modelOk && !failed) {
    const int before = events.run;
    window.startRun(parser.isSet(compare));
    waitUntil([&] { return events.run > before; });
    if (!events.runOk) failed = true;
  }
  if (parser.isSet(sweep) && events.modelOk && !failed) {
    const int before = events.run;
    if (window.startSweep()) {
      waitUntil([&] { return events.run > before; });
      if (!events.runOk) failed = true;
    } else {
      failed = true;
    }
  }
  if (parser.isSet(diff) && events.modelOk && !failed) {
    const int before = events.run;
    window.computeDiff(diffPair[0], diffPair[1]);
    waitUntil([&] { return events.run > before; });
    if (!events.runOk) failed = true;
  }
  if (parser.isSet(eval) && events.modelOk && !failed) {
    const int before = events.eval;
    if (window.startEval()) {
      waitUntil([&] { return events.eval > before; });
      if (!events.evalOk) failed = true;
    } else {
      failed = true;
    }
  }
  // The Kernel lab: a template, then the job. A compile error or a failed check is a result like any other
  // (what a screenshot of the page may want to show); no result at all (no mnv2, a refused request) fails.
  if (parser.isSet(labTemplate) && labFieldsOk) {
    const int before = events.lab;
    if (labPage->newFromTemplate()) {
      waitUntil([&] { return events.lab > before; });
      if (!events.labOk) failed = true;
    } else {
      failed = true;
    }
    if (failed) say(QStringLiteral("--lab-template: %1").arg(labPage->statusText()));
  }
  if (parser.isSet(lab) && labFieldsOk && !failed) {
    window.selectTab(QStringLiteral("lab"));  // in front while it runs: its output scrolls as it comes
    const int before = events.lab;
    const bool started = labAction == QLatin1String("compile") ? labPage->compile()
                         : labAction == QLatin1String("check") ? labPage->check()
                                                               : labPage->run();
    if (started) waitUntil([&] { return events.lab > before; });
    if (!started || !events.labOk) failed = true;
    say(QStringLiteral("lab %1: %2").arg(labAction, labPage->statusText()));
  }
  if (parser.isSet(labView) && !labPage->showView(parser.value(labView))) {
    say(QStringLiteral("unknown --lab-view '%1'").arg(parser.value(labView)));
    failed = true;
  }
  if (parser.isSet(exportEvalCsv)) {
    if (window.exportEvalCsv(parser.value(exportEvalCsv)))
      say(QStringLiteral("wrote %1").arg(parser.value(exportEvalCsv)));
    else
      failed = true;
  }
  const std::pair<const QCommandLineOption*, MainWindow::ExportFormat> exports[] = {
      {&exportCsv, MainWindow::ExportFormat::Csv},
      {&exportJson, MainWindow::ExportFormat::Json},
      {&exportTrace, MainWindow::ExportFormat::Trace}};
  for (const auto& [option, format] : exports) {
    if (!parser.isSet(*option)) continue;
    if (window.exportTo(format, parser.value(*option)))
      say(QStringLiteral("wrote %1").arg(parser.value(*option)));
    else
      failed = true;
  }
  if (parser.isSet(tab) && !window.selectTab(parser.value(tab))) {
    say(QStringLiteral("unknown tab '%1'").arg(parser.value(tab)));
    failed = true;
  }
  if (parser.isSet(colorBy))
    window.graphPage()->setColorBy(static_cast<mnv2::ui::NetworkGraphView::ColorBy>(colors.indexOf(colorValue)));
  if (parser.isSet(logScale)) window.timingsPage()->setLogScale(true);
  if (parser.isSet(runs)) window.comparisonPage()->selectRuns(runPair[0].toInt(), runPair[1].toInt());
  if (parser.isSet(rooflineRun) && !window.rooflinePage()->selectRun(parser.value(rooflineRun).toInt())) {
    say(QStringLiteral("--roofline-run: no run %1 is shown").arg(parser.value(rooflineRun)));
    failed = true;
  }
  if (layerValue >= 0) window.selection()->setCurrentLayer(layerValue);

  if (parser.isSet(screenshot)) {
    settle(400);
    const QString path = parser.value(screenshot);
    if (window.grab().save(path)) {
      say(QStringLiteral("wrote %1").arg(path));
    } else {
      say(QStringLiteral("could not write the screenshot %1").arg(path));
      failed = true;
    }
  }
  if (parser.isSet(quit)) return failed ? 1 : 0;
  return QApplication::exec();
}
