// The whole window on the offscreen platform: open the shared model and cat.bmp, run the cpu backend,
// check what each page shows, export, open a report, errors, selection between table and chart, settings.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <functional>
#include <stdexcept>

#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/json_io.h"
#include "mnv2/options.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "models/diff_table_model.h"
#include "models/layer_selection.h"
#include "models/layer_table_model.h"
#include "models/report_access.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "models/totals_model.h"
#include "run_controller.h"
#include "ui_test_support.h"
#include "widgets/comparison_page.h"
#include "widgets/diffs_page.h"
#include "widgets/input_panel.h"
#include "widgets/main_window.h"
#include "widgets/network_graph_view.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/timeline_page.h"
#include "widgets/timings_page.h"
#include "widgets/topology_page.h"

using namespace mnv2::ui;

namespace {

constexpr int kTimeoutMs = 120000;

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private:
  MainWindow* m_window = nullptr;
  QTemporaryDir m_dir;

  bool waitRun(bool compare) {
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->startRun(compare);
    if (!finished.wait(kTimeoutMs)) return false;
    return finished.first().at(0).toBool();
  }

  void closeErrorBoxes() {
    for (QMessageBox* box : m_window->findChildren<QMessageBox*>()) box->close();
    QCoreApplication::processEvents();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    MainWindow::Options options;
    options.useSettings = false;
    m_window = new MainWindow(options);
    // The size these checks were written at (a first start now opens at nine tenths of the screen, and the
    // offscreen platform's default screen is 800×800): clicks on the Timings bars need bars a few pixels wide.
    m_window->resize(1500, 950);
    m_window->show();
    QVERIFY(test::startOnMainModel(*m_window, kTimeoutMs));
    QVERIFY(m_window->hasModel());
    m_window->runSettings()->setCounts(1, 1, 3);  // a short profile keeps the test quick
  }

  void cleanupTestCase() { delete m_window; }

  void topologyShows99Rows() {
    QCOMPARE(m_window->layerModel()->rowCount(), 99);
    QTableView* table = m_window->topologyPage()->view();
    QCOMPARE(table->model()->rowCount(), 99);
    QVERIFY(m_window->banner()->isHidden());  // a real model: no synthetic-weights banner
    QVERIFY(m_window->statusText().contains(QStringLiteral("mobilenet_v2_1.0_224.onnx")));
    QVERIFY(m_window->statusText().contains(QStringLiteral("GPU:")));
    QVERIFY(m_window->statusText().contains(QStringLiteral("driver")));
    // The architectures the GPU code carries (or that the build has none), as `mnv2 info` names them.
    const mnv2::CudaEnvironment& env = mnv2::cuda_environment();
    if (env.built_with_cuda) {
      QVERIFY2(m_window->statusText().contains(QStringLiteral("code ") + MainWindow::compactArchitectures()),
               qPrintable(m_window->statusText()));
      if (mnv2::built_cuda_architectures().size() > 1)
        QVERIFY(MainWindow::compactArchitectures().contains(QLatin1Char('/')));
    } else {
      QVERIFY2(m_window->statusText().contains(QStringLiteral("CUDA: not built")), qPrintable(m_window->statusText()));
    }
    QCOMPARE(m_window->graphPage()->view()->nodeCount(), 99);
    QCOMPARE(m_window->graphPage()->view()->residualEdgeCount(), 10);
    // The header says what the file declares, as `mnv2 info` does.
    QLabel* header = m_window->topologyPage()->modelHeader();
    QVERIFY(header->isVisibleTo(m_window->topologyPage()));
    for (const char* part :
         {"<b>mobilenet_v2_1.0_224.onnx</b>", "format: ONNX IR ", "classes: 1001",
          "labels: built-in ImageNet, 1001 classes (background first)", "checker: passed (ONNX 1.12.0 library)"})
      QVERIFY2(header->text().contains(QLatin1String(part)), qPrintable(header->text() + "\nmissing: " + part));
    QVERIFY(!header->text().contains(QStringLiteral("warning")));
    // Filtering by block through the page's own combo.
    QComboBox* blocks = m_window->topologyPage()->blockCombo();
    blocks->setCurrentIndex(blocks->findText(QStringLiteral("block3")));
    QCOMPARE(table->model()->rowCount(), 6);
    blocks->setCurrentIndex(0);
    QCOMPARE(table->model()->rowCount(), 99);
  }

  void gpuBackendsDisabledWithoutGpu() {
    if (!mnv2::cuda_environment().devices.empty()) QSKIP("this machine has a GPU");
    auto* combo = m_window->findChild<QComboBox*>(QStringLiteral("backendCombo"));
    QVERIFY(combo);
    auto* model = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(model);
    int gpu = 0;
    for (int i = 0; i < model->rowCount(); ++i) {
      QStandardItem* item = model->item(i);
      const QString name = item->data(Qt::UserRole).toString();
      if (mnv2::is_host_backend(name.toStdString())) {
        QVERIFY(item->isEnabled());
        continue;
      }
      ++gpu;
      QVERIFY2(!item->isEnabled(), qPrintable(name));
      QVERIFY2(item->toolTip().contains(QStringLiteral("unavailable")), qPrintable(item->toolTip()));
    }
    QVERIFY(gpu >= 1);
    QCOMPARE(m_window->runSettings()->backend(), QStringLiteral("cpu"));
    // The reference first: it is what a Compare's diffs are judged against.
    QCOMPARE(m_window->runSettings()->availableBackends(),
             (QStringList{QStringLiteral("cpu-ref"), QStringLiteral("cpu")}));
  }

  void opensTheCatAndPredictsEgyptianCat() {
    QSignalSpy image(m_window, &MainWindow::imageReady);
    m_window->openImage(test::imagePath(QStringLiteral("cat.bmp")));
    QVERIFY(image.wait(kTimeoutMs));
    QVERIFY(image.first().at(0).toBool());
    const auto& predictions = m_window->inputPanel()->predictions();
    QCOMPARE(static_cast<int>(predictions.size()), 5);
    QCOMPARE(QString::fromStdString(predictions.front().label), QStringLiteral("Egyptian cat"));
    QCPBars* bars = qobject_cast<QCPBars*>(m_window->inputPanel()->predictionsPlot()->plottable(0));
    QVERIFY(bars);
    QCOMPARE(bars->data()->size(), 5);
    QVERIFY(m_window->runSettings()->useImage());
  }

  // Issue 35, defect 12: the greyed fields show what the run will use: the image's own size (not the random
  // tensor's last 160×160) and, on a cpu backend, the host clock (not a greyed "cudaEvent").
  void greyedFieldsShowWhatTheRunUses() {
    RunSettingsPanel* settings = m_window->runSettings();
    auto* input = settings->findChild<QComboBox*>(QStringLiteral("inputCombo"));
    auto* height = settings->findChild<QSpinBox*>(QStringLiteral("heightSpin"));
    auto* width = settings->findChild<QSpinBox*>(QStringLiteral("widthSpin"));
    auto* size = settings->findChild<QLabel*>(QStringLiteral("imageSizeLabel"));
    QVERIFY(input && height && width);
    input->setCurrentIndex(1);
    height->setValue(160);
    width->setValue(160);
    input->setCurrentIndex(0);  // the cat, 224×224 after the model's preprocessing
    QVERIFY(settings->useImage());
    const auto shown = [&] {
      return size && !size->isHidden() ? size->text()
                                       : QStringLiteral("%1×%2").arg(height->value()).arg(width->value());
    };
    QVERIFY2(shown().contains(QStringLiteral("224×224")), qPrintable(shown()));
    QVERIFY2(height->isHidden() || !shown().contains(QStringLiteral("160")), qPrintable(shown()));
    input->setCurrentIndex(1);
    QVERIFY(!height->isHidden() && height->isEnabled());
    QCOMPARE(settings->inputSize(), QSize(160, 160));  // the random tensor's size is kept
    input->setCurrentIndex(0);
    settings->setModelInputSize(224, 224);

    auto* timer = settings->findChild<QComboBox*>(QStringLiteral("timerCombo"));
    QVERIFY(settings->selectBackend(QStringLiteral("cpu")));
    QVERIFY(!timer->isEnabled());
    QCOMPARE(timer->currentText(), QStringLiteral("host clock"));
    QCOMPARE(settings->timer(), mnv2::TimerKind::cuda_event);  // the GPU backends' choice stays as it was
  }

  // The default backend, oneDNN: a bar per step, each convolution with its ReLU6 / residual add.
  void runsTheOnednnCpuBackendFused() {
    QCOMPARE(m_window->runSettings()->backend(), QStringLiteral("cpu"));
    QVERIFY(waitRun(false));
    const mnv2::RunReport& r = *m_window->shownReports().front();
    QCOMPARE(r.backend, std::string("cpu"));
    QVERIFY(r.steps.size() <= 54);  // fused: at most 54 steps for the 99 layers
    QCOMPARE(m_window->timingsPage()->barCount(), static_cast<int>(r.steps.size()));
    QVERIFY(!m_window->layerModel()->index(0, LayerTableModel::Median).data().toString().isEmpty());
    // The rest of this suite counts one bar and one step per layer: the reference.
    QVERIFY(m_window->runSettings()->selectBackend(QStringLiteral("cpu-ref")));
  }

  void runsTheCpuBackend() {
    QVERIFY(waitRun(false));
    TimingsPage* timings = m_window->timingsPage();
    QCOMPARE(timings->seriesCount(), 1);
    QCOMPARE(timings->barCount(), 99);
    QCOMPARE(m_window->shownReports().size(), size_t(1));
    const mnv2::RunReport& r = *m_window->shownReports().front();
    QCOMPARE(r.backend, std::string("cpu-ref"));
    QVERIFY(QString::fromStdString(r.config.input_name).endsWith(QStringLiteral("cat.bmp")));
    // The table now carries the timings, the graph its colours.
    QVERIFY(!m_window->layerModel()->index(0, LayerTableModel::Median).data().toString().isEmpty());
    QVERIFY(m_window->graphPage()->view()->legendText().contains(QStringLiteral("µs")));
    QVERIFY(m_window->statusText().contains(QStringLiteral("cuDNN")));
    // Totals per kind, with a bar per kind.
    QVERIFY(m_window->timingsPage()->totalsModel()->rowCount() >= 5);
  }

  void logScaleToggles() {
    TimingsPage* timings = m_window->timingsPage();
    timings->setLogScale(true);
    QCOMPARE(timings->plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(timings->plot()->yAxis->range().lower > 0);
    timings->setLogScale(false);
    QCOMPARE(timings->plot()->yAxis->scaleType(), QCPAxis::stLinear);
  }

  void selectingARowHighlightsItsBar() {
    m_window->selectTab(QStringLiteral("topology"));
    QTableView* table = m_window->topologyPage()->view();
    table->selectRow(12);
    QCOMPARE(m_window->selection()->currentLayer(), 12);
    QCPBars* bars = qobject_cast<QCPBars*>(m_window->timingsPage()->plot()->plottable(0));
    QVERIFY(bars);
    const QCPDataSelection sel = bars->selection();
    QCOMPARE(sel.dataRangeCount(), 1);
    QCOMPARE(static_cast<int>(bars->data()->at(sel.dataRange().begin())->key), 12);
  }

  void clickingABarSelectsTheRow() {
    m_window->selectTab(QStringLiteral("timings"));
    QCustomPlot* plot = m_window->timingsPage()->plot();
    plot->replot();
    QCPBars* bars = qobject_cast<QCPBars*>(plot->plottable(0));
    // The tallest bar other than the selected one, clicked half-way up: well clear of the axis.
    int layer = 0;
    for (int i = 0; i < bars->data()->size(); ++i)
      if (i != 12 && bars->data()->at(i)->value > bars->data()->at(layer)->value) layer = i;
    const double value = bars->data()->at(layer)->value;
    const QPoint pos(qRound(plot->xAxis->coordToPixel(layer)), qRound(plot->yAxis->coordToPixel(value * 0.5)));
    QCOMPARE(m_window->timingsPage()->layerAt(pos), layer);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, pos);
    QCOMPARE(m_window->selection()->currentLayer(), layer);
    const QModelIndex current = m_window->topologyPage()->view()->currentIndex();
    QCOMPARE(current.data(LayerTableModel::LayerRole).toInt(), layer);
  }

  void exportsParseableCsvJsonAndTrace() {
    const QString csv = m_dir.filePath(QStringLiteral("profile.csv"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Csv, csv));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
    QStringList lines;
    for (const QString& l : QString::fromUtf8(f.readAll()).split(QLatin1Char('\n')))
      if (!l.isEmpty() && !l.startsWith(QLatin1Char('#'))) lines << l;
    QCOMPARE(lines.size(), 1 + 99);  // header + one row per layer
    const QStringList header = test::csvFields(lines.front());
    const int backend = header.indexOf(QStringLiteral("backend"));
    QVERIFY(backend >= 0);
    for (int i = 1; i < lines.size(); ++i) {
      const QStringList row = test::csvFields(lines[i]);
      QCOMPARE(row.size(), header.size());
      QCOMPARE(row[backend], QStringLiteral("cpu-ref"));
    }

    const QString json = m_dir.filePath(QStringLiteral("profile.json"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Json, json));
    const auto runs = mnv2::read_reports_file(json.toStdString());
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(runs.front().steps.size(), size_t(99));

    const QString trace = m_dir.filePath(QStringLiteral("profile.trace.json"));
    QVERIFY(m_window->exportTo(MainWindow::ExportFormat::Trace, trace));
    QVERIFY(mnv2::json::parse_file(trace.toStdString()).contains("traceEvents"));

    // The Timeline tab shows the run's timeline: the host lane (cpu-ref adds worker lanes) and the summary.
    QVERIFY(runs.front().timeline.has_value());
    QVERIFY(m_window->selectTab(QStringLiteral("timeline")));
    QVERIFY(m_window->timelinePage()->laneCount() >= 2);
    QVERIFY(m_window->timelinePage()->barCount() >= 2 * 99);
    QVERIFY(m_window->selectTab(QStringLiteral("timings")));
  }

  void opensAReportAndComparesItWithTheCurrentRun() {
    const QString json = m_dir.filePath(QStringLiteral("profile.json"));
    const int before = m_window->catalog()->count();  // every run of the session so far is kept
    QVERIFY(m_window->openReport(json));
    QCOMPARE(m_window->catalog()->count(), before + 1);  // and the report's run joins them
    ComparisonPage* page = m_window->comparisonPage();
    QCOMPARE(page->runA(), m_window->catalog()->firstCurrentRow());
    QVERIFY(page->runB() != page->runA());
    QAbstractItemModelTester tester(page->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(page->model()->rowCount(), 99);
    QVERIFY(page->summaryText().contains(QStringLiteral("rows differ beyond the noise")));
    // Sortable by the difference.
    page->view()->sortByColumn(RunComparisonModel::Delta, Qt::DescendingOrder);
    const double first =
        page->proxy()->index(0, RunComparisonModel::Delta).data(RunComparisonModel::SortRole).toDouble();
    const double last =
        page->proxy()->index(98, RunComparisonModel::Delta).data(RunComparisonModel::SortRole).toDouble();
    QVERIFY(first >= last);
    // The opened report is what the timings page shows now.
    QCOMPARE(m_window->timingsPage()->barCount(), 99);
  }

  void diffShownForTwoRuns() {
    // On the CPU, oneDNN against the float32 reference exercises the diff page end to end.
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->computeDiff(QStringLiteral("cpu"), QStringLiteral("cpu-ref"));
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY(finished.first().at(0).toBool());
    DiffsPage* diffs = m_window->diffsPage();
    QVERIFY(diffs->currentDiff());
    QCOMPARE(diffs->model()->rowCount(), 99);
    QVERIFY(diffs->summaryText().contains(QStringLiteral("top-5 agrees")));
    m_window->graphPage()->setColorBy(NetworkGraphView::ColorBy::Error);
    QVERIFY(m_window->graphPage()->view()->legendText().contains(QStringLiteral("rel L2")));
    m_window->graphPage()->setColorBy(NetworkGraphView::ColorBy::Time);
    // A second diff joins the first in the list (this crashed once: the page read a moved-from source).
    const int before = diffs->sourceCount();
    m_window->computeDiff(QStringLiteral("cpu-ref"), QStringLiteral("cpu"));
    QVERIFY(finished.wait(kTimeoutMs));
    QCOMPARE(diffs->sourceCount(), before + 1);
    QVERIFY(diffs->currentDiff());
  }

  // Issue 35, defect 10: Compute diff follows the Input setting: with an image open but the random tensor
  // chosen at 160×160, it diffs that tensor, not the photograph.
  void computedDiffFollowsTheInputSetting() {
    RunSettingsPanel* settings = m_window->runSettings();
    QVERIFY(settings->useImage());  // the cat is open
    auto* input = settings->findChild<QComboBox*>(QStringLiteral("inputCombo"));
    QVERIFY(input);
    input->setCurrentIndex(1);
    settings->findChild<QSpinBox*>(QStringLiteral("heightSpin"))->setValue(160);
    settings->findChild<QSpinBox*>(QStringLiteral("widthSpin"))->setValue(160);
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->computeDiff(QStringLiteral("cpu"), QStringLiteral("cpu-ref"));
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY(finished.first().at(0).toBool());
    const QString source = m_window->diffsPage()->findChild<QComboBox*>(QStringLiteral("diffSource"))->currentText();
    QVERIFY2(source.contains(QStringLiteral("random(seed=1), 160×160")), qPrintable(source));
    QVERIFY2(!source.contains(QStringLiteral("cat.bmp")), qPrintable(source));
    // With the image chosen again, the photograph.
    input->setCurrentIndex(0);
    m_window->computeDiff(QStringLiteral("cpu"), QStringLiteral("cpu-ref"));
    QVERIFY(finished.wait(kTimeoutMs));
    const QString image = m_window->diffsPage()->findChild<QComboBox*>(QStringLiteral("diffSource"))->currentText();
    QVERIFY2(image.contains(QStringLiteral("cat.bmp")), qPrintable(image));
    settings->setModelInputSize(224, 224);
  }

  void badImageShowsAnErrorAndTheAppKeepsWorking() {
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    QSignalSpy image(m_window, &MainWindow::imageReady);
    const QString bad = m_dir.filePath(QStringLiteral("broken.jpg"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("\xff\xd8\xff\xe0 not really a jpeg");
    f.close();
    m_window->openImage(bad);
    QVERIFY(image.wait(kTimeoutMs));
    QVERIFY(!image.first().at(0).toBool());
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.first().at(0).toString().contains(bad));
    QTRY_VERIFY(!m_window->findChildren<QMessageBox*>().isEmpty());
    QMessageBox* box = m_window->findChildren<QMessageBox*>().first();
    QVERIFY(box->isVisible());
    QVERIFY(!box->isModal());
    closeErrorBoxes();
    // Still working: the previous image stays, a new one opens, a run completes.
    QCOMPARE(QString::fromStdString(m_window->inputPanel()->predictions().front().label),
             QStringLiteral("Egyptian cat"));
    image.clear();
    m_window->openImage(test::imagePath(QStringLiteral("hot_dog.jpg")));
    QVERIFY(image.wait(kTimeoutMs));
    QVERIFY(image.first().at(0).toBool());
    QVERIFY(QString::fromStdString(m_window->inputPanel()->predictions().front().label)
                .startsWith(QStringLiteral("hotdog")));
    QVERIFY(waitRun(false));
  }

  void badReportShowsAnError() {
    const QString bad = m_dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"schema\": ");
    f.close();
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    QVERIFY(!m_window->openReport(bad));
    QCOMPARE(errors.count(), 1);
    closeErrorBoxes();
  }

  void malformedNewerAndOutOfRangeReportsShowAnError() {
    // Each refused with one message naming the file; the report shown before stays, a good one still opens.
    const QString good = m_dir.filePath(QStringLiteral("profile.json"));
    const QString csv = m_dir.filePath(QStringLiteral("profile.csv"));  // the app reads JSON reports only
    auto mutated = [&](const QString& name, const std::function<void(mnv2::json::Json&)>& change) {
      mnv2::json::Json doc = mnv2::json::parse_file(good.toStdString());
      change(doc);
      const QString path = m_dir.filePath(name);
      QFile f(path);
      if (f.open(QIODevice::WriteOnly)) f.write(QByteArray::fromStdString(mnv2::json::dump(doc, 1)));
      return path;
    };
    auto metadata = [](mnv2::json::Json& doc) -> mnv2::json::Json& { return doc.at("runs").at(0).at("metadata"); };
    const std::pair<QString, QString> cases[] = {
        {mutated(QStringLiteral("newer.json"), [](auto& doc) { doc["schema_version"] = 2; }), "newer"},
        {mutated(QStringLiteral("newer_run.json"), [&](auto& doc) { metadata(doc)["schema_version"] = 7; }), "newer"},
        {mutated(QStringLiteral("huge_batch.json"), [&](auto& doc) { metadata(doc)["batch"] = int64_t(1) << 40; }),
         "out of range"},
        {mutated(QStringLiteral("typed.json"), [&](auto& doc) { metadata(doc)["iterations"] = "many"; }),
         "expected a number"},
        {csv, "JSON"},
    };
    const int shown = m_window->catalog()->count();
    for (const auto& [path, expected] : cases) {
      QSignalSpy errors(m_window, &MainWindow::errorReported);
      QVERIFY2(!m_window->openReport(path), qPrintable(path));
      QCOMPARE(errors.count(), 1);
      const QString message = errors.first().at(0).toString();
      QVERIFY2(message.contains(path) && message.contains(expected, Qt::CaseInsensitive), qPrintable(message));
      QVERIFY2(!message.contains(QLatin1Char('\n')), qPrintable(message));
      closeErrorBoxes();
    }
    QCOMPARE(m_window->catalog()->count(), shown);
    QCOMPARE(m_window->timingsPage()->barCount(), 99);
    QVERIFY(m_window->openReport(good));  // the same file again: it replaces its earlier entry
    QCOMPARE(m_window->catalog()->count(), shown);
  }

  void badModelsShowAnErrorAndTheAppKeepsRunning() {
    // A model that fails to load leaves the window without a model but working: a message naming the file,
    // runs refused until a model is there, reports still open.
    QFile real(test::mainModelPath());
    QVERIFY(real.open(QIODevice::ReadOnly));
    QByteArray noise(4096, Qt::Uninitialized);
    for (int i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 7919 + 13) % 251);
    const std::pair<QString, QByteArray> cases[] = {
        {QStringLiteral("truncated.onnx"), real.read(100000)},
        {QStringLiteral("random.onnx"), noise},
        {QStringLiteral("text.onnx"), QByteArray("this is not a model\n")},
        {QStringLiteral("empty.onnx"), QByteArray()},
    };
    for (const auto& [name, bytes] : cases) {
      const QString path = m_dir.filePath(name);
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
      f.close();
      MainWindow::Options options;
      options.useSettings = false;
      MainWindow window(options);
      window.show();
      QSignalSpy model(&window, &MainWindow::modelReady);
      QSignalSpy errors(&window, &MainWindow::errorReported);
      window.start(path);
      QTRY_VERIFY_WITH_TIMEOUT(model.count() == 1, kTimeoutMs);
      QVERIFY(!model.first().at(0).toBool());
      QVERIFY(!window.hasModel());
      QCOMPARE(errors.count(), 1);
      const QString message = errors.first().at(0).toString();
      QVERIFY2(message.contains(path), qPrintable(message));
      QVERIFY(window.statusText().contains(QStringLiteral("load failed")));
      auto* box = window.findChild<QMessageBox*>(QStringLiteral("errorMessage"));
      QVERIFY(box && box->isVisible() && !box->isModal());
      box->close();
      // Nothing to run without a model: refused with a message, no crash.
      QSignalSpy finished(&window, &MainWindow::runFinished);
      window.startRun(false);
      QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1 || errors.count() == 2, kTimeoutMs);
      // Still working: a report opens and shows its layers.
      QVERIFY(window.openReport(m_dir.filePath(QStringLiteral("profile.json"))));
      QCOMPARE(window.timingsPage()->barCount(), 99);
    }
  }

  // File > Open report on a mnv2.bench/1 file (the PyTorch anchor's): its results go to the Sweep page beside
  // the app's own; a bad one is refused with a message naming the file and the key, and changes nothing.
  void openReportAddsBenchFilesToTheSweepPage() {
    MainWindow::Options options;
    options.useSettings = false;
    MainWindow window(options);
    window.show();
    const QString anchor = QStringLiteral(MNV2_TEST_DATA_DIR "/bench/pytorch-anchor-h200-excerpt.json");
    QVERIFY(window.openReport(anchor));
    QCOMPARE(window.sweepPage()->results().size(), size_t{4});
    QCOMPARE(window.sweepPage()->results().front().config.backend, std::string("pytorch"));
    QCOMPARE(window.sweepPage()->lineCount(), 2);  // pytorch fp32 and fp16
    QCOMPARE(window.findChild<QTabWidget*>()->currentWidget(), static_cast<QWidget*>(window.sweepPage()));

    mnv2::json::Json j = mnv2::json::parse_file(anchor.toStdString());
    j["results"][2].erase("device_resident_p90_ms");
    const QString bad = m_dir.filePath(QStringLiteral("bad-bench.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(mnv2::json::dump(j, 2)));
    f.close();
    QSignalSpy errors(&window, &MainWindow::errorReported);
    QVERIFY(!window.openReport(bad));
    QCOMPARE(errors.count(), 1);
    const QString message = errors.first().at(0).toString();
    QVERIFY2(message.contains(bad) && message.contains(QStringLiteral("result 2")) &&
                 message.contains(QStringLiteral("device_resident_p90_ms")),
             qPrintable(message));
    QCOMPARE(window.sweepPage()->results().size(), size_t{4});
    for (QMessageBox* box : window.findChildren<QMessageBox*>()) box->close();
  }

  // Every run option round-trips CLI -> report -> the app's run settings -> saved settings -> a report: the
  // CLI's half is tests/cli/test_cli_options.cpp; here the app takes a CLI report's options, saves and restores
  // them, and the run it would make records the same values.
  void everyOptionRoundTripsFromACliReportThroughTheAppsSettings() {
    QTemporaryDir dir;
    const QString report = dir.filePath(QStringLiteral("cli.json"));
    QStringList args = {QStringLiteral("profile"),
                        QStringLiteral("--model"),
                        mnv2::ui::test::mainModelPath(),
                        QStringLiteral("--backend"),
                        QStringLiteral("cpu-ref"),
                        QStringLiteral("--json"),
                        report};
    for (const mnv2::OptionSpec& spec : mnv2::option_table()) {
      if (!spec.per_run || spec.name == "backend" || spec.name == "exec" || spec.name == "precision") continue;
      QString value;
      if (spec.type == mnv2::OptionType::choice) {
        for (const std::string& c : spec.choices)
          if (c != spec.default_value) {
            value = QString::fromStdString(c);
            break;
          }
      } else if (spec.type == mnv2::OptionType::integer) {
        value = spec.name == "iters" ? QStringLiteral("2") : QStringLiteral("1");
      } else if (spec.type == mnv2::OptionType::size) {
        value = QStringLiteral("64x48");
      } else if (spec.type == mnv2::OptionType::text) {
        value = QStringLiteral("128x64");
      }
      if (!value.isEmpty()) args << QStringLiteral("--") + QString::fromStdString(spec.name) << value;
    }
    QProcess cli;
    cli.start(QStringLiteral(MNV2_CLI_PATH), args);
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    const mnv2::OptionValues fromCli = mnv2::read_reports_file(report.toStdString()).at(0).options;

    QSettings settings(dir.filePath(QStringLiteral("app.ini")), QSettings::IniFormat);
    {
      RunSettingsPanel panel;
      panel.setOptions(fromCli);
      const mnv2::OptionValues shown = panel.options();
      for (const mnv2::OptionSpec& spec : mnv2::option_table())
        if (spec.per_run)  // values and sources kept
          QVERIFY2(
              shown.at(spec.name) == fromCli.at(spec.name),
              (spec.name + ": " + shown.value(spec.name) + " (" + mnv2::to_string(shown.at(spec.name).source) +
               ") against " + fromCli.value(spec.name) + " (" + mnv2::to_string(fromCli.at(spec.name).source) + ")")
                  .c_str());
      panel.saveSettings(settings);
    }
    settings.sync();
    RunSettingsPanel restored;
    restored.loadSettings(settings);
    const mnv2::OptionValues app = restored.options();
    // The run the app makes from them (MainWindow::startRun's configuration), recorded in a report.
    mnv2::ProfileConfig c;
    const mnv2::PrepareConfig p = mnv2::prepare_config_of(app, {224, 224});
    c.backend = app.value("backend");
    c.batch = p.batch;
    c.height = p.height;
    c.width = p.width;
    c.warmup = static_cast<int>(app.integer("warmup"));
    c.iters = static_cast<int>(app.integer("iters"));
    c.timer = restored.timer();
    c.precision = restored.precision();
    c.cuda = restored.cudaOptions();
    c.cudnn = restored.cudnnOptions();
    c.cpu_threads = restored.cpuThreads();
    c.options = app;
    mnv2::RunReport r;
    r.backend = c.backend;
    r.timer = "host_clock";
    r.config = c;
    r.options = mnv2::options_of(c);
    const mnv2::OptionValues again =
        mnv2::reports_from_json(mnv2::json::Json::parse(mnv2::reports_json_text({r}))).at(0).options;
    for (const mnv2::OptionSpec& spec : mnv2::option_table()) {
      if (!spec.per_run) continue;
      const mnv2::OptionValue& before = fromCli.at(spec.name);
      QVERIFY2(again.at(spec.name).value == before.value,
               (spec.name + ": " + again.value(spec.name) + " against " + before.value).c_str());
      // A value the CLI was given (or took from the environment) comes back from the app's saved settings.
      if (before.source != mnv2::OptionSource::default_value)
        QCOMPARE(again.at(spec.name).source, mnv2::OptionSource::saved);
    }
  }

  // Issue 35, defect 14: the app's run settings start at the engine's option table (the CLI's defaults), with
  // its ranges and its help, so that the app and the CLI cannot disagree.
  void defaultsRangesAndToolTipsComeFromTheOptionTable() {
    const QTemporaryDir dir;
    QSettings empty(dir.filePath(QStringLiteral("fresh.ini")), QSettings::IniFormat);
    RunSettingsPanel fresh, loaded;
    loaded.loadSettings(empty);  // nothing saved yet
    for (const char* name : {"warmup", "iters"}) {
      const mnv2::OptionSpec& spec = *mnv2::find_option(name);
      for (RunSettingsPanel* panel : {&fresh, &loaded}) {
        QCOMPARE(panel->options().value(name), spec.default_value);
        auto* spin = panel->findChild<QSpinBox*>(QString::fromLatin1(name) == QLatin1String("warmup")
                                                     ? QStringLiteral("warmupSpin")
                                                     : QStringLiteral("itersSpin"));
        QVERIFY(spin);
        QCOMPARE(spin->value(), std::stoi(spec.default_value));
        QCOMPARE(spin->minimum(), static_cast<int>(spec.min));
        QCOMPARE(spin->maximum(), static_cast<int>(spec.max));
        QVERIFY2(spin->toolTip().contains(QString::fromStdString(spec.help)), qPrintable(spin->toolTip()));
      }
    }
    QCOMPARE(fresh.warmup(), 10);  // the CLI's, as its help says
    QCOMPARE(fresh.iterations(), 100);
    // The fusion choice says what the table says (auto by default; block is not fp16-only).
    auto* fusion = fresh.findChild<QComboBox*>(QStringLiteral("cudaFusionCombo"));
    QVERIFY(fusion);
    const mnv2::OptionSpec& f = *mnv2::find_option("cuda-fusion");
    QCOMPARE(fusion->currentText(), QString::fromStdString(f.default_value));
    QVERIFY2(fusion->toolTip().startsWith(QString::fromStdString(f.help)), qPrintable(fusion->toolTip()));
    QVERIFY2(!fusion->toolTip().contains(QStringLiteral("fp16")), qPrintable(fusion->toolTip()));
  }

  // Issue 35, defect 12: a typed iteration count above the maximum is refused with a message, not silently cut
  // to another count.
  void aTypedCountAboveTheMaximumIsRefusedWithAMessage() {
    RunSettingsPanel panel;
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* iters = panel.findChild<QSpinBox*>(QStringLiteral("itersSpin"));
    auto* status = panel.findChild<QLabel*>(QStringLiteral("runStatus"));
    QVERIFY(iters && status);
    iters->setValue(100);
    iters->setFocus();
    iters->selectAll();
    QTest::keyClicks(iters, QStringLiteral("5000000"));
    QTest::keyClick(iters, Qt::Key_Return);
    QCOMPARE(panel.iterations(), 100);  // neither 1000000 nor the 500000 of the digits that fitted
    const QString said = status->text();
    QVERIFY2(said.contains(QStringLiteral("5000000")) && said.contains(QStringLiteral("1000000")), qPrintable(said));
    // A count in range is taken as typed.
    iters->selectAll();
    QTest::keyClicks(iters, QStringLiteral("250"));
    QTest::keyClick(iters, Qt::Key_Return);
    QCOMPARE(panel.iterations(), 250);
  }

  void outOfRangeValuesAreClampedOrRefused() {
    RunSettingsPanel* settings = m_window->runSettings();
    // Values the panel cannot hold are ignored (counts) or clamped (spin boxes) rather than sent on.
    settings->setCounts(2, 1, 3);
    settings->setCounts(0, -1, -5);
    QCOMPARE(settings->batch(), 2);
    QCOMPARE(settings->warmup(), 1);
    QCOMPARE(settings->iterations(), 3);
    auto* batch = m_window->findChild<QSpinBox*>(QStringLiteral("batchSpin"));
    QVERIFY(batch);
    batch->setValue(1000000);
    QCOMPARE(settings->batch(), 4096);
    // A hand-edited settings file with nonsense in it.
    {
      QSettings s;
      s.setValue(QStringLiteral("run/batch"), -7);
      s.setValue(QStringLiteral("run/iterations"), QStringLiteral("lots"));
      s.setValue(QStringLiteral("run/height"), 999999);
      s.setValue(QStringLiteral("run/width"), -3);
      s.setValue(QStringLiteral("run/backend"), QStringLiteral("warp-drive"));
      RunSettingsPanel panel;
      panel.loadSettings(s);
      QVERIFY(panel.batch() >= 1 && panel.batch() <= 4096);
      QVERIFY(panel.iterations() >= 1);
      QCOMPARE(panel.inputSize(), QSize(32, 4096));
      s.clear();
    }
    // The cuda options survive a restart; a hand-edited nonsense value keeps the panel's values.
    {
      QSettings s;
      RunSettingsPanel panel;
      mnv2::CudaOptions o;
      o.variant = mnv2::CudaOptions::Variant::baseline;
      o.fusion = mnv2::CudaOptions::Fusion::expand_dw;
      o.graph = mnv2::CudaOptions::Graph::off;
      o.gemm_tile = "128x64";
      panel.setCudaOptions(o);
      panel.saveSettings(s);
      RunSettingsPanel restored;
      restored.loadSettings(s);
      QVERIFY(restored.cudaOptions() == o);
      // Saved under the option's name (options/cuda-graph); a nonsense value there is skipped, option by option.
      s.setValue(QStringLiteral("options/cuda-graph"), QStringLiteral("sometimes"));
      RunSettingsPanel defaults;
      defaults.loadSettings(s);
      mnv2::CudaOptions kept = o;
      kept.graph = mnv2::CudaOptions::Graph::automatic;
      QVERIFY(defaults.cudaOptions() == kept);
      s.clear();
    }
    // The cudnn options too: combos in the panel, saved and restored, a bad saved value keeps the defaults.
    {
      QSettings s;
      RunSettingsPanel panel;
      QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("cudnnVariantCombo")));
      QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("cudnnGraphCombo")));
      QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("cudnnLayoutCombo")));
      QVERIFY(panel.cudnnOptions() == mnv2::CudnnOptions{});
      mnv2::CudnnOptions o;
      o.variant = mnv2::CudnnOptions::Variant::naive;
      o.graph = mnv2::CudnnOptions::Graph::on;
      o.layout = mnv2::CudnnOptions::Layout::nhwc;
      panel.setCudnnOptions(o);
      panel.saveSettings(s);
      RunSettingsPanel restored;
      restored.loadSettings(s);
      QVERIFY(restored.cudnnOptions() == o);
      s.setValue(QStringLiteral("options/cudnn-variant"), QStringLiteral("turbo"));
      RunSettingsPanel defaults;
      defaults.loadSettings(s);
      mnv2::CudnnOptions kept = o;
      kept.variant = mnv2::CudnnOptions::Variant::fused;
      QVERIFY(defaults.cudnnOptions() == kept);
      s.clear();
    }
    // The largest run the panel allows (batch 4096 at 4096x4096) is refused before anything is allocated,
    // with a message; a normal run follows in the same process.
    auto* input = m_window->findChild<QComboBox*>(QStringLiteral("inputCombo"));
    QVERIFY(input);
    input->setCurrentIndex(1);  // random tensor: the size boxes apply
    settings->setModelInputSize(4096, 4096);
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    QVERIFY(!waitRun(false));
    QCOMPARE(errors.count(), 1);
    const QString message = errors.first().at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("out of host memory for batch 4096 at 4096x4096")), qPrintable(message));
    closeErrorBoxes();
    settings->setModelInputSize(224, 224);
    settings->setCounts(1, 1, 3);
    input->setCurrentIndex(0);
    QVERIFY(waitRun(false));
  }

  void cancelFromTheWindow() {
    m_window->runSettings()->setCounts(1, 0, 1000000);
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    QSignalSpy progress(m_window->controller(), &RunController::progress);
    m_window->startRun(false);
    QVERIFY(progress.wait(kTimeoutMs));
    QVERIFY(m_window->findChild<QPushButton*>(QStringLiteral("cancelButton"))->isEnabled());
    m_window->cancelRun();
    QVERIFY(finished.wait(kTimeoutMs));
    QVERIFY(!finished.first().at(0).toBool());
    m_window->runSettings()->setCounts(1, 1, 3);
    QVERIFY(waitRun(true));  // compare: every available backend (only cpu without a GPU)
  }

  void topologyHeaderShowsAPytorchExport() {
    // PyTorch 2.11's default export (IR 10, opset 20, external data): its facts, the checker skipped, and
    // the warning that says so.
    MainWindow::Options options;
    options.useSettings = false;
    MainWindow window(options);
    QSignalSpy model(&window, &MainWindow::modelReady);
    window.start(QString::fromUtf8(MNV2_TEST_DATA_DIR) + QStringLiteral("/pytorch_export/tv_w035_96_c10_default.onnx"));
    QTRY_VERIFY_WITH_TIMEOUT(model.count() == 1, kTimeoutMs);
    QVERIFY(model.first().at(0).toBool());
    QCOMPARE(window.layerModel()->rowCount(), 99);
    const QString text = window.topologyPage()->modelHeader()->text();
    for (const char* part : {"<b>tv_w035_96_c10_default.onnx</b>", "format: ONNX IR 10, opset 20",
                             "producer: pytorch 2.11.0+cu130", "input: x [2, 3, 96, 96]", "classes: 10",
                             "labels: generated names", "checker: skipped: the model is newer than the ONNX 1.12.0",
                             "external data: tv_w035_96_c10_default.onnx.data (1604544 bytes read)",
                             "warning: the ONNX 1.12.0 library's checker was skipped"})
      QVERIFY2(text.contains(QLatin1String(part)), qPrintable(text + "\nmissing: " + part));
  }

  void topologyHeaderEscapesWhatTheFileSays() {
    // Producer strings and input names come from the file: shown as text, never as markup.
    MainWindow::Options options;
    options.useSettings = false;
    MainWindow window(options);
    const mnv2::Model builtin = mnv2::builtin_mobilenet_v2();
    ModelInfo info;
    info.source = QStringLiteral("/models/evil.onnx");
    info.topology = builtin.layers;
    info.stats = mnv2::analyse(builtin, 1, 224, 224);
    info.fileFacts = {{QStringLiteral("producer"), QStringLiteral("<img src=x>")},
                      {QStringLiteral("input"), QStringLiteral("a&b [N, 3, 224, 224]")}};
    info.warnings = {QStringLiteral("<b>bold</b>")};
    Q_EMIT window.controller()->modelLoaded(info);
    const QString text = window.topologyPage()->modelHeader()->text();
    QVERIFY2(text.contains(QStringLiteral("producer: &lt;img src=x&gt;")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("input: a&amp;b [N, 3, 224, 224]")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("warning: &lt;b&gt;bold&lt;/b&gt;")), qPrintable(text));
    QVERIFY(!text.contains(QStringLiteral("<img")));
    // No facts and no warnings: no header.
    window.topologyPage()->setModelHeader(QStringLiteral("x"), {}, {});
    QVERIFY(window.topologyPage()->modelHeader()->isHidden());
  }

  // A report whose figures are unreliable is marked over the tabs with its reasons; a clean one is not.
  void unreliableReportShowsMarkerAndReason() {
    std::vector<mnv2::RunReport> runs =
        mnv2::read_reports_file(m_dir.filePath(QStringLiteral("profile.json")).toStdString());
    QVERIFY(!runs.empty());
    runs.front().reliability.findings = {
        {"e2e_cv", mnv2::Verdict::unreliable, "end-to-end CV 80% (> 10%)", 0.8, 0.1},
        {"host_busy", mnv2::Verdict::unreliable,
         "host busy: other processes used 1.9 of 2 cores while the run kept 2 threads busy (0 free)", 1.9, 0.5}};
    const QString noisy = m_dir.filePath(QStringLiteral("noisy.json"));
    mnv2::write_json_report(noisy.toStdString(), runs);
    QVERIFY(m_window->openReport(noisy));
    QLabel* banner = m_window->reliabilityBanner();
    QVERIFY(banner->isVisible());
    // One line per run with its first reason; every reason in the tooltip.
    QVERIFY2(banner->text().contains(QStringLiteral("⚠ unreliable: end-to-end CV 80% (> 10%) (+1 more")),
             qPrintable(banner->text()));
    QVERIFY(!banner->text().contains(QLatin1Char('\n')));
    QVERIFY2(banner->toolTip().contains(QStringLiteral("⚠ unreliable: end-to-end CV 80% (> 10%); host busy: other "
                                                       "processes used 1.9 of 2 cores")),
             qPrintable(banner->toolTip()));
    // The run under its name on the pages: "noisy.json · cpu-ref fp32 · b1 · 224×224".
    QVERIFY2(
        banner->text().startsWith(QStringLiteral("noisy.json · ") + runLabel(runs.front()) + QStringLiteral(" · ")),
        qPrintable(banner->text()));
    // The banner does not push the window past a 1280×720 screen (700 px under a title bar), nor widen it.
    QString heights;  // what asks for the height, when too much
    for (QWidget* w :
         {m_window->centralWidget(), m_window->findChild<QWidget*>(QStringLiteral("inputDock")),
          m_window->findChild<QWidget*>(QStringLiteral("runsDock")), static_cast<QWidget*>(m_window->statusBar()),
          static_cast<QWidget*>(m_window->menuBar()), static_cast<QWidget*>(banner)})
      heights += QStringLiteral(" %1=%2")
                     .arg(w ? w->objectName() : QStringLiteral("?"))
                     .arg(w ? w->minimumSizeHint().height() : -1);
    if (auto* tabs = m_window->findChild<QTabWidget*>(QStringLiteral("tabs")))
      for (int i = 0; i < tabs->count(); ++i)
        heights += QStringLiteral(" %1=%2").arg(tabs->tabText(i)).arg(tabs->widget(i)->minimumSizeHint().height());
    QVERIFY2(m_window->minimumSizeHint().height() <= 700,
             qPrintable(QStringLiteral("minimum height %1:%2").arg(m_window->minimumSizeHint().height()).arg(heights)));
    QVERIFY2(m_window->minimumSizeHint().width() <= 1024,
             qPrintable(QString::number(m_window->minimumSizeHint().width())));
    QVERIFY(reportSummary(runs.front()).endsWith(QStringLiteral(" · ⚠ unreliable")));

    runs.front().reliability.findings = {{"host_busy", mnv2::Verdict::unknown, "unknown", 0, 0.5}};
    const QString clean = m_dir.filePath(QStringLiteral("clean.json"));
    mnv2::write_json_report(clean.toStdString(), runs);
    QVERIFY(m_window->openReport(clean));
    QVERIFY(banner->isHidden());  // an unknown check alone does not mark the run
  }

  // The run settings' thread count reaches the engine and comes back in the report and its summary.
  void cpuThreadsSettingIsUsedAndShown() {
    auto* spin = m_window->runSettings()->findChild<QSpinBox*>(QStringLiteral("cpuThreadsSpin"));
    QVERIFY(spin);
    QCOMPARE(spin->text(), QStringLiteral("default"));
    spin->setValue(1);
    QVERIFY(m_window->runSettings()->selectBackend(QStringLiteral("cpu")));
    QVERIFY(waitRun(false));
    const ReportPtr r = m_window->shownReports().front();
    QCOMPARE(r->config.cpu_threads, 1);
    QVERIFY2(reportSummary(*r).contains(QStringLiteral(" · 1 thread")), qPrintable(reportSummary(*r)));
    spin->setValue(0);
  }

  void syntheticWeightsShowABanner() {
    // What the worker sends when no model file is found: the built-in topology with synthetic weights.
    MainWindow::Options options;
    options.useSettings = false;
    MainWindow window(options);
    const mnv2::Model builtin = mnv2::builtin_mobilenet_v2();
    ModelInfo info;
    info.synthetic = builtin.synthetic;
    info.source = QString::fromStdString(builtin.source);
    for (const auto& w : builtin.warnings) info.warnings << QString::fromStdString(w);
    info.topology = builtin.layers;
    info.stats = mnv2::analyse(builtin, 1, 224, 224);
    info.numBlocks = builtin.num_blocks;
    QVERIFY(info.synthetic);
    Q_EMIT window.controller()->modelLoaded(info);
    QVERIFY(!window.banner()->isHidden());
    QVERIFY(window.banner()->text().contains(QStringLiteral("Synthetic weights")));
    QCOMPARE(window.layerModel()->rowCount(), 99);
  }

  void settingsPersist() {
    QSettings().clear();
    MainWindow::Options options;
    {
      MainWindow first(options);
      first.runSettings()->setCounts(2, 4, 33);
      first.close();
    }
    MainWindow second(options);
    QCOMPARE(second.runSettings()->iterations(), 33);
    QCOMPARE(second.runSettings()->warmup(), 4);
    QCOMPARE(second.runSettings()->batch(), 2);
    QSettings().clear();
  }
};

MNV2_UI_SUITE(MainWindowTest);
#include "test_main_window.moc"
