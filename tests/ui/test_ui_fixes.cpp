// Issue 15's rough edges, each with a check that failed on the code before the fix: layouts that fit a laptop
// (every page at 1280×720 and 1024×700 keeps Run, Compare, Cancel and the progress bar in view), Tab leaving
// the tables, Ctrl+F to the name filter, stale panels and progress, the About box's licences.
#include <qcustomplot.h>
#include <QAbstractButton>
#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "mnv2/report.h"
#include "mnv2/roofline.h"
#include "models/eval_result_model.h"
#include "models/layer_selection.h"
#include "models/layer_table_model.h"
#include "run_controller.h"
#include "ui_test_support.h"
#include "widgets/accuracy_page.h"
#include "widgets/main_window.h"
#include "widgets/network_graph_view.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/timings_page.h"
#include "widgets/topology_page.h"

using namespace mnv2::ui;

namespace {

constexpr int kTimeoutMs = 120000;

// The part of `w` the user can see, in window coordinates; empty when it is scrolled or clipped away.
bool visibleInWindow(QWidget* w, QWidget* window, QString* why) {
  const QRect r(w->mapTo(window, QPoint(0, 0)), w->size());
  if (!w->isVisible()) {
    *why = w->objectName() + QStringLiteral(" hidden");
    return false;
  }
  if (!window->rect().contains(r)) {
    *why = QStringLiteral("%1 at %2,%3 %4×%5 outside the window %6×%7")
               .arg(w->objectName())
               .arg(r.x())
               .arg(r.y())
               .arg(r.width())
               .arg(r.height())
               .arg(window->width())
               .arg(window->height());
    return false;
  }
  if (w->visibleRegion().isEmpty()) {
    *why = w->objectName() + QStringLiteral(": scrolled or clipped out of view");
    return false;
  }
  return true;
}

}  // namespace

class UiFixesTest : public QObject {
  Q_OBJECT

 private:
  MainWindow* m_window = nullptr;
  QTemporaryDir m_dir;

  bool waitRun() {
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->startRun(false);
    if (!finished.wait(kTimeoutMs)) return false;
    return finished.first().at(0).toBool();
  }

 private Q_SLOTS:
  void initTestCase() {
    MainWindow::Options options;
    options.useSettings = false;
    options.scripted = true;
    m_window = new MainWindow(options);
    m_window->show();
    QVERIFY(test::startOnMainModel(*m_window, kTimeoutMs));
  }

  void cleanupTestCase() { delete m_window; }

  // Every page at 1280×720 and 1024×700: the run controls stay inside the window and are not scrolled away;
  // the window can be 1024 px wide.
  void runControlsVisibleOnEveryPageAtLaptopSizes() {
    QString widths;  // what asks for the width, when too much
    auto* tabWidget = m_window->findChild<QTabWidget*>(QStringLiteral("tabs"));
    for (int i = 0; tabWidget && i < tabWidget->count(); ++i)
      widths +=
          QStringLiteral(" %1=%2").arg(tabWidget->tabText(i)).arg(tabWidget->widget(i)->minimumSizeHint().width());
    if (auto* dock = m_window->findChild<QWidget*>(QStringLiteral("inputDock")))
      widths += QStringLiteral(" dock=%1").arg(dock->minimumSizeHint().width());
    QVERIFY2(m_window->minimumSizeHint().width() <= 1024,
             qPrintable(QStringLiteral("minimum width %1:%2").arg(m_window->minimumSizeHint().width()).arg(widths)));
    QVERIFY2(m_window->minimumSize().width() <= 1024, qPrintable(QString::number(m_window->minimumSize().width())));
    auto* tabs = m_window->findChild<QTabWidget*>(QStringLiteral("tabs"));
    QVERIFY(tabs);
    QWidget* controls[] = {m_window->findChild<QPushButton*>(QStringLiteral("runButton")),
                           m_window->findChild<QPushButton*>(QStringLiteral("compareButton")),
                           m_window->findChild<QPushButton*>(QStringLiteral("cancelButton")),
                           m_window->runSettings()->progressBar()};
    for (QWidget* w : controls) QVERIFY(w);
    for (const QSize size : {QSize(1280, 720), QSize(1024, 700)}) {
      m_window->resize(size);
      QCoreApplication::processEvents();
      QTRY_COMPARE(m_window->size(), size);
      for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        QCoreApplication::processEvents();
        // The input column never scrolls sideways (its content fits beside the vertical scroll bar).
        auto* inputScroll = m_window->findChild<QScrollArea*>(QStringLiteral("inputScroll"));
        QVERIFY(inputScroll);
        QVERIFY2(inputScroll->horizontalScrollBar()->maximum() == 0,
                 qPrintable(QStringLiteral("%1×%2: the input column scrolls sideways by %3 px")
                                .arg(size.width())
                                .arg(size.height())
                                .arg(inputScroll->horizontalScrollBar()->maximum())));
        for (QWidget* w : controls) {
          QString why;
          QVERIFY2(visibleInWindow(w, m_window, &why), qPrintable(QStringLiteral("%1×%2, page %3: %4")
                                                                      .arg(size.width())
                                                                      .arg(size.height())
                                                                      .arg(tabs->tabText(i), why)));
        }
      }
    }
    tabs->setCurrentIndex(0);
  }

  // Issue 35, defect 12: Tab walks the run settings in the order they are laid out (top to bottom, then left to
  // right), from Run on to the last backend option, then Run, Compare and Cancel; it jumped from Precision to
  // every cuda/cudnn field and back up to Input.
  void runSettingsTabOrderFollowsTheLayout() {
    RunSettingsPanel* panel = m_window->runSettings();
    auto* first = panel->findChild<QWidget*>(QStringLiteral("runOnCombo"));
    QVERIFY(first);
    auto tabStop = [](QWidget* w) { return w->isVisible() && w->isEnabled() && (w->focusPolicy() & Qt::TabFocus); };
    // A spin box's line edit is its focus proxy: the spin box stands for it.
    auto inPanel = [panel](QWidget* w) {
      return panel->isAncestorOf(w) && !(w->parentWidget() && w->parentWidget()->focusProxy() == w);
    };
    std::vector<QWidget*> chain;
    QWidget* w = first;
    do {
      if (inPanel(w) && tabStop(w)) chain.push_back(w);
      w = w->nextInFocusChain();
    } while (w != first && chain.size() < 200);
    QVERIFY2(chain.size() >= 10, qPrintable(QString::number(chain.size())));
    // The visual order: by row (the top edge in the window, a few pixels of slack), then from the left.
    std::vector<QWidget*> visual = chain;
    auto at = [this](QWidget* x) { return x->mapTo(m_window, QPoint(0, 0)); };
    std::stable_sort(visual.begin(), visual.end(), [&](QWidget* a, QWidget* b) {
      const QPoint pa = at(a), pb = at(b);
      if (qAbs(pa.y() - pb.y()) > 4) return pa.y() < pb.y();
      return pa.x() < pb.x();
    });
    auto names = [](const std::vector<QWidget*>& ws) {
      QStringList out;
      for (QWidget* x : ws)
        out << (x->objectName().isEmpty() ? QLatin1String(x->metaObject()->className()) : x->objectName());
      return out.join(QStringLiteral(" → "));
    };
    QVERIFY2(chain == visual, qPrintable(QStringLiteral("Tab: %1\nlaid out: %2").arg(names(chain), names(visual))));
    // Backend, then Precision, then (Timing when enabled) Input: as the form reads.
    const QStringList order = names(chain).split(QStringLiteral(" → "));
    QVERIFY(order.indexOf(QStringLiteral("backendCombo")) < order.indexOf(QStringLiteral("precisionCombo")));
    QVERIFY(order.indexOf(QStringLiteral("precisionCombo")) < order.indexOf(QStringLiteral("inputCombo")));
  }

  // Issue 35, defect 12: in every menu each mnemonic reaches one item (Alt+F then E reached "Recent reports", not
  // Export).
  void everyMenuHasUniqueMnemonics() {
    std::vector<QWidget*> menus{m_window->menuBar()};
    QString clashes;
    for (size_t i = 0; i < menus.size(); ++i) {
      QMap<int, QString> keys;
      for (QAction* a : menus[i]->actions()) {
        if (a->isSeparator() || !a->isVisible()) continue;
        if (a->menu()) menus.push_back(a->menu());
        const int key = QKeySequence::mnemonic(a->text())[0].toCombined();
        if (key == 0) continue;
        if (keys.contains(key))
          clashes += QStringLiteral("%1: \"%2\" and \"%3\"; ").arg(menus[i]->objectName(), keys[key], a->text());
        keys[key] = a->text();
      }
    }
    QVERIFY2(menus.size() >= 6, qPrintable(QString::number(menus.size())));
    QVERIFY2(clashes.isEmpty(), qPrintable(clashes));
    // Alt+F, then E: the Export menu.
    QMenu* file = nullptr;
    for (QAction* a : m_window->menuBar()->actions())
      if (QKeySequence::mnemonic(a->text()) == QKeySequence(Qt::ALT | Qt::Key_F)) file = a->menu();
    QVERIFY(file);
    QAction* e = nullptr;
    for (QAction* a : file->actions())
      if (QKeySequence::mnemonic(a->text()) == QKeySequence(Qt::ALT | Qt::Key_E)) e = a;
    QVERIFY(e && e->menu());
    QCOMPARE(e->text(), QStringLiteral("&Export"));
  }

  // Tab moves focus out of a table (arrows move between cells); every table of the window says so.
  void tabLeavesTables() {
    const auto tables = m_window->findChildren<QTableView*>();
    QVERIFY(tables.size() >= 5);
    for (QTableView* t : tables)
      QVERIFY2(
          !t->tabKeyNavigation(),
          qPrintable(QStringLiteral("%1 in %2").arg(t->objectName(), t->parentWidget()->metaObject()->className())));
    m_window->selectTab(QStringLiteral("topology"));
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window));
    QTableView* table = m_window->topologyPage()->view();
    table->setFocus(Qt::OtherFocusReason);
    QTRY_VERIFY(table->hasFocus());
    table->setCurrentIndex(table->model()->index(0, 0));
    QTest::keyClick(table, Qt::Key_Tab);
    QVERIFY2(!table->hasFocus(), "Tab stayed in the table");
    QCOMPARE(table->currentIndex().column(), 0);
  }

  // Find (Ctrl+F) from any page: the Topology page's name filter, with the focus.
  void findFocusesTheNameFilter() {
    m_window->selectTab(QStringLiteral("timings"));
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window));
    QLineEdit* filter = m_window->topologyPage()->nameFilter();
    QVERIFY(filter);
    QVERIFY(!filter->hasFocus());
    QTest::keySequence(m_window, QKeySequence(QKeySequence::Find));
    QTRY_VERIFY(filter->hasFocus());
    QVERIFY(m_window->topologyPage()->isVisible());
  }

  // The About box names the project's licence, every third-party library with its licence, and the docs.
  void aboutNamesEveryLicence() {
    const QString about = MainWindow::aboutText();
    for (const char* part : {"GPL-3.0-or-later",
                             "Qt",
                             "LGPL-3.0",
                             "QCustomPlot",
                             "OpenCV",
                             "ONNX",
                             "protobuf",
                             "BSD-3-Clause",
                             "oneDNN",
                             "Apache-2.0",
                             "nlohmann-json",
                             "MIT",
                             "CLI11",
                             "CUDA runtime",
                             "cuDNN",
                             "cuBLAS",
                             "CUPTI",
                             "NVIDIA CUDA Toolkit EULA",
                             "README",
                             "https://"})
      QVERIFY2(about.contains(QLatin1String(part)), part);
  }

  // After a run, the Graph page's detail panel shows the new run's figures of the selected layer at once.
  void graphDetailsFollowANewRun() {
    QVERIFY(m_window->runSettings()->selectBackend(QStringLiteral("cpu-ref")));  // one step per layer
    m_window->runSettings()->setCounts(1, 1, 3);
    m_window->selection()->setCurrentLayer(5);
    QLabel* details = m_window->graphPage()->details();
    const QString before = details->text();
    QVERIFY(waitRun());
    const QString expected = m_window->graphPage()->view()->layerDetails(5);
    QVERIFY(!expected.isEmpty());
    QVERIFY(expected != before);  // the run added timings
    QCOMPARE(details->text(), expected);
    // The Topology page says whose timings it shows.
    auto* summary = m_window->findChild<QLabel*>(QStringLiteral("topologySummary"));
    QVERIFY(summary);
    QVERIFY2(summary->text().contains(QStringLiteral("Timings from the current run")), qPrintable(summary->text()));
    QCOMPARE(m_window->runSettings()->progressBar()->value(), m_window->runSettings()->progressBar()->maximum());
  }

  // One GFLOP/s everywhere: each step's figure (the report, its CSV, the Topology table) equals the roofline's,
  // ReLU6 included (it was 0.0 in the table and the CSV, 32.6 in the roofline's tool-tip); the CSV has p10 and
  // p90 and writes no "0.00" kernel count for a host-timed run.
  void oneGflopsDefinitionAndCsvColumns() {
    const mnv2::RunReport& r = *m_window->shownReports().front();
    QCOMPARE(r.steps.size(), r.topology.size());
    mnv2::Ceilings ceilings;
    ceilings.bandwidth_gb_s = 100;
    ceilings.gflop_s = 1000;
    const std::vector<mnv2::RooflinePoint> points = mnv2::roofline_points(r, ceilings);
    QVERIFY(!points.empty());
    bool relu6 = false;
    for (const mnv2::RooflinePoint& p : points) {
      const mnv2::StepProfile& step = r.steps.at(static_cast<size_t>(p.step));
      QVERIFY2(std::abs(step.gflops - p.gflop_s) <= 1e-9 * std::max(1.0, p.gflop_s), step.name.c_str());
      if (p.kind == "ReLU6") {
        relu6 = true;
        QVERIFY2(step.gflops > 0, step.name.c_str());
      }
    }
    QVERIFY(relu6);
    const QStringList lines = QString::fromStdString(mnv2::report_csv({r})).split(QLatin1Char('\n'));
    const QStringList header = test::csvFields(lines.front());
    const int p10 = header.indexOf(QStringLiteral("p10_ns")), p90 = header.indexOf(QStringLiteral("p90_ns"));
    const int median = header.indexOf(QStringLiteral("median_ns"));
    QVERIFY(p10 >= 0 && p90 >= 0 && median >= 0);
    const int kernels = header.indexOf(QStringLiteral("kernels_per_iter"));
    QVERIFY(kernels >= 0);
    const QStringList row = test::csvFields(lines.at(1));
    QVERIFY(row.at(p10).toDouble() <= row.at(median).toDouble());
    QVERIFY(row.at(median).toDouble() <= row.at(p90).toDouble());
    QVERIFY2(row.at(kernels).isEmpty(), qPrintable(row.at(kernels)));  // the host clock records no kernels
  }

  // The wheel zooms the Timings chart along the layers only; Ctrl+wheel zooms the time axis.
  void wheelZoomsLayersOnly() {
    LayerSelection selection;
    TimingsPage page(&selection);
    page.setReports({std::make_shared<const mnv2::RunReport>(
                        test::syntheticReport(test::mainModel().layers, "cpu", 5000, 0.1, false))},
                    QStringLiteral("synthetic"));
    page.resize(1000, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QCustomPlot* plot = page.plot();
    plot->replot();
    const QPointF centre = plot->axisRect()->rect().center();
    auto wheel = [&](Qt::KeyboardModifiers modifiers) {
      QWheelEvent event(centre, plot->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, modifiers,
                        Qt::NoScrollPhase, false);
      QCoreApplication::sendEvent(plot, &event);
    };
    const QCPRange x0 = plot->xAxis->range(), y0 = plot->yAxis->range();
    wheel(Qt::NoModifier);
    QVERIFY(plot->xAxis->range().size() < x0.size());  // zoomed in along the layers
    QCOMPARE(plot->yAxis->range().lower, y0.lower);    // the floor stays
    QCOMPARE(plot->yAxis->range().upper, y0.upper);
    const QCPRange x1 = plot->xAxis->range();
    wheel(Qt::ControlModifier);
    QVERIFY(plot->yAxis->range().size() < y0.size());
    QCOMPARE(plot->xAxis->range().lower, x1.lower);
    QCOMPARE(plot->xAxis->range().upper, x1.upper);
  }

  // Timings: no ticks but a sentence before a run; the legend of three runs outside the plot area; per-block
  // totals labels slanted so that "stem" and "b1" do not run together.
  void timingsEmptyStateLegendAndBlockLabels() {
    LayerSelection selection;
    TimingsPage page(&selection);
    page.resize(1000, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QCustomPlot* plot = page.plot();
    QVERIFY(!plot->xAxis->ticks() && !plot->yAxis->tickLabels());
    bool sentence = false;
    for (int i = 0; i < plot->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)))
        sentence = t->text().contains(QStringLiteral("No timings"));
    QVERIFY(sentence);
    const auto& layers = test::mainModel().layers;
    std::vector<ReportPtr> runs;
    for (const char* backend : {"cpu", "cudnn", "cuda"})
      runs.push_back(std::make_shared<const mnv2::RunReport>(test::syntheticReport(layers, backend, 3000, 0.1, false)));
    page.setReports(runs, QStringLiteral("three runs"));
    plot->replot();
    QVERIFY(plot->xAxis->ticks() && plot->yAxis->tickLabels());
    QVERIFY(plot->legend->visible());
    QVERIFY2(!plot->legend->outerRect().intersects(plot->axisRect()->rect()), "the legend covers the plot area");
    auto* grouping = page.findChild<QComboBox*>(QStringLiteral("totalsGrouping"));
    QVERIFY(grouping);
    grouping->setCurrentIndex(1);  // per block
    QVERIFY(page.totalsPlot()->xAxis->tickLabelRotation() != 0);
    grouping->setCurrentIndex(0);
    QCOMPARE(page.totalsPlot()->xAxis->tickLabelRotation(), 0.0);
  }

  // The Sweep page: a sentence instead of empty axes before a sweep; then ticks at the batch sizes swept (no
  // "1 2 2 3 3"), lines in clearly different colours, a tool-tip per point and a table of every figure.
  void sweepTicksColoursTipsAndTable() {
    SweepPage page;
    page.resize(1000, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QCustomPlot* plot = page.latencyPlot();
    QVERIFY(!page.emptyText(plot).isEmpty());
    QVERIFY(!plot->xAxis->visible());
    std::vector<mnv2::BenchResult> results;
    for (const char* backend : {"cpu", "cpu-ref"})
      for (int batch : {1, 2, 4}) {
        mnv2::BenchResult r;
        r.config.backend = backend;
        r.config.batch = batch;
        r.config.height = r.config.width = 224;
        r.latency_ms.median = batch * (backend == std::string("cpu") ? 10.0 : 30.0);
        r.latency_ms.p10 = r.latency_ms.median * 0.9;
        r.latency_ms.p90 = r.latency_ms.median * 1.1;
        r.latency_ms.n = 5;
        r.images_per_s = batch * 1000.0 / r.latency_ms.median;
        results.push_back(r);
      }
    page.setResults(results);
    plot->replot();
    QVERIFY(page.emptyText(plot).isEmpty());
    QVERIFY(plot->xAxis->visible());
    QCOMPARE(page.lineCount(), 2);
    // Ticks: exactly the batch sizes.
    auto ticker = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QStringList labels;
    for (auto it = ticker->ticks().constBegin(); it != ticker->ticks().constEnd(); ++it) labels << it.value();
    QCOMPARE(labels, (QStringList{QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("4")}));
    // Colours far apart (the old shades of one hue were not).
    const QColor a = plot->graph(0)->pen().color(), b = plot->graph(1)->pen().color();
    const int distance = std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
    QVERIFY2(distance > 150, qPrintable(QString::number(distance)));
    // A tool-tip on a point, none far from every point.
    const QPointF point(plot->xAxis->coordToPixel(2), plot->yAxis->coordToPixel(20.0));
    const QString tip = page.toolTipAt(plot, point);
    QVERIFY2(tip.contains(QStringLiteral("batch 2")) && tip.contains(QStringLiteral("20.000")), qPrintable(tip));
    QVERIFY(page.toolTipAt(plot, QPointF(-100, -100)).isEmpty());
    // The table.
    QCOMPARE(page.table()->rowCount(), 6);
    QVERIFY(!page.table()->tabKeyNavigation());
    auto* exportButton = page.findChild<QPushButton*>(QStringLiteral("sweepExport"));
    QVERIFY(exportButton && exportButton->isEnabled());
    QSignalSpy exported(&page, &SweepPage::exportRequested);
    exportButton->click();
    QCOMPARE(exported.count(), 1);
  }

  // A cancelled run leaves the progress bar empty, not full.
  void progressEmptyAfterCancel() {
    m_window->runSettings()->setCounts(1, 1, 100000);
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    QSignalSpy progress(m_window->controller(), &RunController::progress);
    m_window->startRun(false);
    QVERIFY(progress.wait(kTimeoutMs));
    m_window->cancelRun();
    QVERIFY(finished.wait(kTimeoutMs));
    QCOMPARE(finished.first().at(0).toBool(), false);
    QCoreApplication::processEvents();
    QCOMPARE(m_window->runSettings()->progressBar()->value(), 0);
    m_window->runSettings()->setCounts(1, 1, 3);
  }

  // An image that could not be opened: its message goes when the next image opens.
  void imageErrorGoesWithTheNextImage() {
    QSignalSpy image(m_window, &MainWindow::imageReady);
    const QString notes = m_dir.filePath(QStringLiteral("notes.txt"));
    {
      QFile f(notes);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("not an image\n");
    }
    m_window->openImage(notes);
    QVERIFY(image.wait(kTimeoutMs));
    QCOMPARE(image.takeFirst().at(0).toBool(), false);
    QVERIFY(m_window->statusBar()->currentMessage().contains(QStringLiteral("Could not open")));
    m_window->openImage(test::imagePath(QStringLiteral("cat.bmp")));
    QVERIFY(image.wait(kTimeoutMs));
    QCOMPARE(image.takeFirst().at(0).toBool(), true);
    QVERIFY2(!m_window->statusBar()->currentMessage().contains(QStringLiteral("Could not open")),
             qPrintable(m_window->statusBar()->currentMessage()));
    auto* caption = m_window->findChild<QLabel*>(QStringLiteral("imageCaption"));
    QVERIFY(caption && !caption->text().contains(QStringLiteral("Could not open")));
  }

  // A misclassified row of the Accuracy page: double-clicking it opens and classifies its image.
  void accuracyRowOpensItsImage() {
    EvalOutcome outcome;
    outcome.record.set = QStringLiteral("a set");
    outcome.record.numClasses = 1001;
    mnv2::EvalMiss miss;
    miss.path = test::imagePath(QStringLiteral("cat.bmp")).toStdString();
    miss.label = 1;
    miss.top5 = {286, 285, 281, 282, 287};
    outcome.record.result.images = 1;
    outcome.record.result.misclassified = {miss};
    m_window->accuracyPage()->setOutcome(outcome);
    QAbstractItemModelTester tester(m_window->accuracyPage()->misclassifiedModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QModelIndex index = m_window->accuracyPage()->misclassifiedModel()->index(0, 1);
    QCOMPARE(index.data(EvalResultModel::PathRole).toString(), test::imagePath(QStringLiteral("cat.bmp")));
    m_window->selectTab(QStringLiteral("accuracy"));
    auto* view = m_window->findChild<QTableView*>(QStringLiteral("evalMisclassified"));
    QVERIFY(view);
    QCoreApplication::processEvents();
    QSignalSpy image(m_window, &MainWindow::imageReady);
    Q_EMIT view->doubleClicked(index);  // what a double-click on the row sends
    QVERIFY(image.wait(kTimeoutMs));
    QVERIFY(image.takeFirst().at(0).toBool());
    auto* caption = m_window->findChild<QLabel*>(QStringLiteral("imageCaption"));
    QVERIFY2(caption->text().contains(QStringLiteral("cat.bmp")), qPrintable(caption->text()));
    // The context menu's action does the same for the current row.
    auto* action = view->findChild<QAction*>(QStringLiteral("openMisclassifiedImage"));
    QVERIFY(action && view->actions().contains(action));
    view->setCurrentIndex(index);
    action->trigger();
    QVERIFY(image.wait(kTimeoutMs));
    QVERIFY(image.takeFirst().at(0).toBool());
  }

  // An opened report's environment is labelled as the report's; this machine's fields keep this machine's.
  void reportEnvironmentLabelledApart() {
    auto* cudnn = m_window->findChild<QLabel*>(QStringLiteral("statusCudnn"));
    QVERIFY(cudnn);
    const QString local = cudnn->text();
    mnv2::RunReport r = test::syntheticReport(test::mainModel().layers, "cudnn", 20000, 0.1, false);
    r.device = "Imaginary GPU 9000";
    r.cudnn = "7.7.7";
    const QString path = m_dir.filePath(QStringLiteral("other-machine.json"));
    try {
      mnv2::write_json_report(path.toStdString(), {r});
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY(m_window->openReport(path));
    QCOMPARE(cudnn->text(), local);
    QVERIFY2(!m_window->statusText().contains(QStringLiteral("cuDNN 7.7.7 |")), qPrintable(m_window->statusText()));
    auto* shown = m_window->findChild<QLabel*>(QStringLiteral("statusShown"));
    QVERIFY(shown && shown->isVisibleTo(m_window));
    QVERIFY2(shown->text().contains(QStringLiteral("report other-machine.json")) &&
                 shown->text().contains(QStringLiteral("Imaginary GPU 9000")) &&
                 shown->text().contains(QStringLiteral("cuDNN 7.7.7")),
             qPrintable(shown->text()));
    auto* summary = m_window->findChild<QLabel*>(QStringLiteral("topologySummary"));
    QVERIFY2(summary->text().contains(QStringLiteral("Timings from the report other-machine.json")),
             qPrintable(summary->text()));
  }
};

MNV2_UI_SUITE(UiFixesTest);

#include "test_ui_fixes.moc"
