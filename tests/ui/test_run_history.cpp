// The run history as a user works with it: three cpu runs with different settings are all kept in the Runs
// panel; two of them compared state what differs (batch); a pinned baseline is shown and compared beside every
// new run; notes and names are edited; the session is saved and reopened with its names, notes and baseline;
// runs of another network are refused a layer-by-layer comparison; runs are removed.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "mnv2/report.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "models/totals_model.h"
#include "ui_test_support.h"
#include "widgets/comparison_page.h"
#include "widgets/diffs_page.h"
#include "widgets/main_window.h"
#include "widgets/roofline_page.h"
#include "widgets/run_settings_panel.h"
#include "widgets/runs_panel.h"
#include "widgets/timeline_page.h"
#include "widgets/timings_page.h"

using namespace mnv2::ui;

namespace {
constexpr int kTimeoutMs = 120000;

std::vector<mnv2::Layer> smallTopology() {
  std::vector<mnv2::Layer> t;
  for (int i = 0; i < 4; ++i) {
    mnv2::Layer l;
    l.index = i;
    l.kind = i % 2 == 0 ? mnv2::LayerKind::Conv2d : mnv2::LayerKind::ReLU6;
    l.name = "layer" + std::to_string(i);
    t.push_back(l);
  }
  return t;
}
}  // namespace

class RunHistoryTest : public QObject {
  Q_OBJECT

 private:
  MainWindow* m_window = nullptr;
  QTemporaryDir m_dir;

  bool run(int batch, int size) {
    m_window->runSettings()->setCounts(batch, 0, 2);
    m_window->runSettings()->findChild<QSpinBox*>(QStringLiteral("heightSpin"))->setValue(size);
    m_window->runSettings()->findChild<QSpinBox*>(QStringLiteral("widthSpin"))->setValue(size);
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    m_window->startRun(false);
    if (!finished.wait(kTimeoutMs)) return false;
    return finished.first().at(0).toBool();
  }

  ReportCatalog* catalog() const { return m_window->catalog(); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    MainWindow::Options options;
    options.useSettings = false;
    options.scripted = true;  // errors on stderr, no message boxes
    m_window = new MainWindow(options);
    m_window->resize(1280, 720);
    m_window->show();
    QVERIFY(test::startOnMainModel(*m_window, kTimeoutMs, false));
    QVERIFY(m_window->runSettings()->selectBackend(QStringLiteral("cpu")));
  }

  void cleanupTestCase() { delete m_window; }

  void everyRunIsKeptWithItsSettings() {
    QAbstractItemModelTester tester(catalog(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(run(1, 64));
    QVERIFY(run(2, 64));
    QVERIFY(run(1, 96));
    QCOMPARE(catalog()->count(), 3);  // nothing replaced
    QTableView* table = m_window->runsPanel()->view();
    QCOMPARE(table->model()->rowCount(), 3);
    QVERIFY(m_window->runsDock()->isVisible());
    QCOMPARE(catalog()->index(0, ReportCatalog::Batch).data().toInt(), 1);
    QCOMPARE(catalog()->index(1, ReportCatalog::Batch).data().toInt(), 2);
    QCOMPARE(catalog()->index(2, ReportCatalog::Size).data().toString(), QStringLiteral("96×96"));
    QCOMPARE(catalog()->index(0, ReportCatalog::Backend).data().toString(), QStringLiteral("cpu"));
    QVERIFY(catalog()->index(2, ReportCatalog::Name).data().toString().contains(QStringLiteral("run 3")));
    // The newest run alone is shown, and the comparison is against the run before it.
    QCOMPARE(catalog()->shownRows(), std::vector<int>{2});
    QCOMPARE(m_window->shownReports().size(), size_t{1});
    QCOMPARE(m_window->comparisonPage()->runA(), 1);
    QCOMPARE(m_window->comparisonPage()->runB(), 2);
    // A comparison states every setting that differs: run 2 (batch 2, 64) against run 3 (batch 1, 96).
    const QString summary = m_window->comparisonPage()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("batch 2 → 1")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("input size 64×64 → 96×96")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("per image")), qPrintable(summary));
  }

  void twoChosenRunsAreComparedAndShownTogether() {
    // Check runs 1 and 2: both are shown on the pages, the title says what differs.
    catalog()->setData(catalog()->index(0, ReportCatalog::Name), Qt::Checked, Qt::CheckStateRole);
    catalog()->setData(catalog()->index(1, ReportCatalog::Name), Qt::Checked, Qt::CheckStateRole);
    catalog()->setData(catalog()->index(2, ReportCatalog::Name), Qt::Unchecked, Qt::CheckStateRole);
    QCOMPARE(m_window->shownReports().size(), size_t{2});
    QCOMPARE(m_window->shownReports()[1]->config.batch, 2);
    const QString title = m_window->timingsPage()->title();
    QVERIFY2(title.contains(QStringLiteral("batch 1 → 2")), qPrintable(title));
    // Compare two (the checked ones, none selected) puts them in the Run comparison.
    RunsPanel* panel = m_window->runsPanel();
    panel->view()->clearSelection();
    auto* compare = panel->findChild<QPushButton*>(QStringLiteral("runsCompare"));
    QVERIFY(compare->isEnabled());
    compare->click();
    QCOMPARE(m_window->comparisonPage()->runA(), 0);
    QCOMPARE(m_window->comparisonPage()->runB(), 1);
    const QString summary = m_window->comparisonPage()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("batch 1 → 2")), qPrintable(summary));
    QVERIFY2(!summary.contains(QStringLiteral("input size")), qPrintable(summary));
    QVERIFY(m_window->comparisonPage()->model()->rowCount() > 0);
  }

  void aPinnedBaselineIsShownBesideEveryNewRun() {
    RunsPanel* panel = m_window->runsPanel();
    panel->view()->selectRow(0);
    panel->findChild<QPushButton*>(QStringLiteral("runsBaseline"))->click();
    QCOMPARE(catalog()->baselineRow(), 0);
    QVERIFY(catalog()->index(0, ReportCatalog::Name).data().toString().startsWith(QStringLiteral("★")));
    QVERIFY(run(1, 64));
    QCOMPARE(catalog()->count(), 4);
    QCOMPARE(catalog()->shownRows(), (std::vector<int>{0, 3}));
    QCOMPARE(m_window->comparisonPage()->runA(), 0);
    QCOMPARE(m_window->comparisonPage()->runB(), 3);
    const QString summary = m_window->comparisonPage()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("same settings")) || !summary.contains(QStringLiteral("batch")),
             qPrintable(summary));
  }

  void theSessionIsSavedAndReopenedWithNamesNotesAndBaseline() {
    QVERIFY(catalog()->setData(catalog()->index(1, ReportCatalog::Note), QStringLiteral("before the tile change")));
    QVERIFY(catalog()->setData(catalog()->index(1, ReportCatalog::Name), QStringLiteral("b2 baseline")));
    QVERIFY(!catalog()->setData(catalog()->index(1, ReportCatalog::Name), QStringLiteral("   ")));  // no empty names
    const QString path = m_dir.filePath(QStringLiteral("session.json"));
    QVERIFY(m_window->saveSession(path));
    const mnv2::Session saved = mnv2::read_session_file(path.toStdString());
    QCOMPARE(saved.runs.size(), size_t{4});
    QCOMPARE(saved.baseline, 0);
    QCOMPARE(QString::fromStdString(saved.runs[1].note), QStringLiteral("before the tile change"));

    // Remove everything, then reopen: the runs come back with their names, notes and the baseline.
    catalog()->remove({0, 1, 2, 3});
    QCOMPARE(catalog()->count(), 0);
    QCOMPARE(catalog()->baselineRow(), -1);
    QVERIFY(m_window->shownReports().empty());
    QVERIFY(m_window->openReport(path));
    QCOMPARE(catalog()->count(), 4);
    QCOMPARE(catalog()->index(1, ReportCatalog::Note).data().toString(), QStringLiteral("before the tile change"));
    QCOMPARE(catalog()->index(1, ReportCatalog::Name).data(Qt::EditRole).toString(), QStringLiteral("b2 baseline"));
    QCOMPARE(catalog()->baselineRow(), 0);
    QCOMPARE(catalog()->index(2, ReportCatalog::Source).data().toString(), QStringLiteral("session.json"));
  }

  // Issue 35, defect 11: opening a session keeps the baseline the user pinned, and the status bar says so.
  void openingASessionKeepsThePinnedBaseline() {
    const QString path = m_dir.filePath(QStringLiteral("session.json"));
    QCOMPARE(mnv2::read_session_file(path.toStdString()).baseline, 0);  // the session has a baseline of its own
    const int pinned = catalog()->addRun({std::make_shared<const mnv2::RunReport>(
        test::syntheticReport(test::mainModel().layers, "cpu", 1000, 0.01, false))});
    catalog()->setBaseline(pinned);
    const int id = catalog()->index(pinned, 0).data(ReportCatalog::IdRole).toInt();
    const QString name = catalog()->entry(pinned).name;
    QVERIFY(m_window->openReport(path));
    QCOMPARE(catalog()->baselineRow(), catalog()->rowOfId(id));
    const QString said = m_window->statusBar()->currentMessage();
    QVERIFY2(said.contains(QStringLiteral("baseline")) && said.contains(name), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("b2 baseline")) || said.contains(QStringLiteral("run 1")), qPrintable(said));
    // Put back what the next tests expect: the session's runs first, its first run the baseline.
    catalog()->remove({catalog()->rowOfId(id)});
    catalog()->setBaseline(0);
  }

  // Issue 35, defect 12: closing the window with runs that were never saved asks, as an unsaved kernel does;
  // once the session is saved it does not.
  void closingWithUnsavedRunsAsks() {
    MainWindow::Options options;
    options.useSettings = false;  // not scripted: the questions are asked
    MainWindow window(options);
    window.show();
    QVERIFY(window.close());  // nothing run: nothing to lose
    window.show();
    window.catalog()->addRun(
        {std::make_shared<const mnv2::RunReport>(test::syntheticReport(smallTopology(), "cpu", 1000, 0.01, false))});
    QString asked;
    auto answer = [&](QMessageBox::StandardButton button) {
      QTimer::singleShot(0, &window, [&, button] {
        for (QWidget* w : QApplication::topLevelWidgets())
          if (auto* box = qobject_cast<QMessageBox*>(w); box && box->isVisible()) {
            asked = box->text();
            box->button(button)->click();
          }
      });
    };
    answer(QMessageBox::Cancel);
    QVERIFY(!window.close());  // Cancel keeps the window
    QVERIFY2(asked.contains(QStringLiteral("run")), qPrintable(asked));
    QVERIFY(window.saveSession(m_dir.filePath(QStringLiteral("closing.json"))));
    asked.clear();
    QVERIFY(window.close());  // saved: no question
    QVERIFY2(asked.isEmpty(), qPrintable(asked));
  }

  // Issue 35, defect 4: three cpu fp32 runs shown together are told apart on every page: each has one name and
  // one colour, the same in the timings legend, the totals table and chart, and the roofline's run picker.
  void shownRunsKeepOneNameAndOneColourAcrossPages() {
    std::vector<int> rows;
    for (int batch : {1, 2, 4}) {
      mnv2::RunReport r = test::syntheticReport(test::mainModel().layers, "cpu", 1000 * batch, 0.01, false);
      r.config.batch = batch;
      rows.push_back(catalog()->addRun({std::make_shared<const mnv2::RunReport>(r)}));
    }
    catalog()->setShown(rows);
    TimingsPage* timings = m_window->timingsPage();
    QCOMPARE(timings->seriesCount(), 3);
    QSet<QString> legend, colours, totals, picker;
    QStringList said;
    for (int i = 0; i < 3; ++i) {
      const auto* bars = qobject_cast<QCPBars*>(timings->plot()->plottable(i));
      const auto* total = qobject_cast<QCPBars*>(timings->totalsPlot()->plottable(i));
      QVERIFY(bars && total);
      const QString name = catalog()->entry(rows[static_cast<size_t>(i)]).name;
      QVERIFY2(bars->name().startsWith(name + QStringLiteral(" · ")), qPrintable(bars->name()));
      QVERIFY2(total->name().startsWith(name + QStringLiteral(" · ")), qPrintable(total->name()));
      QCOMPARE(total->brush().color(), bars->brush().color());  // one colour per run on both charts
      legend << bars->name();
      colours << bars->brush().color().name();
      const QString header = timings->totalsModel()->headerData(1 + 2 * i, Qt::Horizontal).toString();
      QVERIFY2(header.startsWith(name + QStringLiteral(" · ")), qPrintable(header));
      totals << header;
      said << bars->name();
    }
    QVERIFY2(legend.size() == 3 && totals.size() == 3, qPrintable(said.join(QStringLiteral(" | "))));
    QCOMPARE(colours.size(), 3);
    auto* runs = m_window->rooflinePage()->findChild<QComboBox*>(QStringLiteral("rooflineRun"));
    QVERIFY(runs);
    QCOMPARE(runs->count(), 3);
    for (int i = 0; i < 3; ++i) {
      QVERIFY2(
          runs->itemText(i).startsWith(catalog()->entry(rows[static_cast<size_t>(i)]).name + QStringLiteral(" · ")),
          qPrintable(runs->itemText(i)));
      picker << runs->itemText(i);
    }
    QCOMPARE(picker.size(), 3);
    // The Timeline's run picker: each run under its name, with its colour.
    auto* timeline = m_window->timelinePage()->findChild<QComboBox*>(QStringLiteral("timelineRun"));
    QVERIFY(timeline);
    QCOMPARE(timeline->count(), 3);
    for (int i = 0; i < 3; ++i) {
      const RunIdentity id = catalog()->identity(rows[static_cast<size_t>(i)]);
      QCOMPARE(timeline->itemText(i), id.name);
      QCOMPARE(timeline->itemData(i, Qt::DecorationRole).value<QColor>(), id.colour);
    }
    // The Run comparison says which run is A and which B by the same names, in its summary and its headers.
    m_window->comparisonPage()->selectRuns(rows[0], rows[1]);
    const QString nameA = catalog()->identity(rows[0]).name, nameB = catalog()->identity(rows[1]).name;
    const QString summary = m_window->comparisonPage()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("A is <b>") + nameA.toHtmlEscaped() + QStringLiteral("</b>, B is <b>") +
                              nameB.toHtmlEscaped()),
             qPrintable(summary));
    const QAbstractItemModel* compared = m_window->comparisonPage()->model();
    QVERIFY(compared->headerData(RunComparisonModel::MedianA, Qt::Horizontal).toString().contains(nameA));
    QVERIFY(compared->headerData(RunComparisonModel::MedianB, Qt::Horizontal).toString().contains(nameB));
    // The Timings title's line of each run begins with the same name.
    const QString title = m_window->timingsPage()->title();
    for (int row : rows) {
      const QString name = catalog()->identity(row).name;
      QVERIFY2(title.contains(QStringLiteral("<br>") + name.toHtmlEscaped() + QStringLiteral(" on ")) ||
                   title.contains(QStringLiteral(" — ") + name.toHtmlEscaped() + QStringLiteral(" on ")),
               qPrintable(title));
    }
    catalog()->remove(rows);
  }

  void runsOfAnotherNetworkAreNotComparedLayerByLayer() {
    const auto other =
        std::make_shared<const mnv2::RunReport>(test::syntheticReport(smallTopology(), "cpu", 1000, 0.1, false));
    const int row = catalog()->addFile(m_dir.filePath(QStringLiteral("tiny.json")), {other});
    m_window->comparisonPage()->selectRuns(0, row);
    QCOMPARE(m_window->comparisonPage()->model()->rowCount(), 0);
    const QString summary = m_window->comparisonPage()->summaryText();
    QVERIFY2(summary.contains(QStringLiteral("not compared")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("unrelated layers")), qPrintable(summary));
    // Checked beside a MobileNetV2 run, it is left out of the charts, and the title says so.
    catalog()->setShown({0, row});
    QCOMPARE(m_window->shownReports().size(), size_t{1});
  }

  // Issue 35, defect 2: runs of owl.jpg at batch 1 and 2 and of a random 160×160 tensor at batch 2, shown
  // together: the Timings title states as shared only what the engine's comparability rule finds the same, and
  // each run's own input, batch and size where they differ.
  void theTimingsTitleNamesWhatDiffersBetweenTheShownRuns() {
    auto make = [](const char* input, int batch, int size) {
      mnv2::RunReport r = test::syntheticReport(test::mainModel().layers, "cpu", 1000, 0.01, false);
      r.config.input_name = input;
      r.config.batch = batch;
      r.config.height = r.config.width = size;
      r.input_checksum = input;
      return std::make_shared<const mnv2::RunReport>(r);
    };
    const int first = catalog()->addRun({make("owl.jpg", 1, 224)});
    catalog()->addRun({make("owl.jpg", 2, 224)});
    catalog()->addRun({make("random(seed=1)", 2, 160)});
    catalog()->setShown({first, first + 1, first + 2});
    const QString title = m_window->timingsPage()->title();
    // The first line (what all share) says no input, batch or size: they differ.
    const QString head = title.section(QStringLiteral("<br>"), 0, 0);
    QVERIFY2(!head.contains(QStringLiteral("input")) && !head.contains(QStringLiteral("batch")), qPrintable(title));
    QVERIFY2(!head.contains(QStringLiteral("224×224")), qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("input random(seed=1), batch 2, input size 160×160")), qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("input owl.jpg, batch 1, input size 224×224")), qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("input owl.jpg, batch 2, input size 224×224")), qPrintable(title));
    // What they share is said once.
    QVERIFY2(title.contains(QStringLiteral("10 warm-up + 100 timed runs per phase")), qPrintable(title));
    // Shown alone, a run's title names its input.
    catalog()->setShown({first + 2});
    const QString alone = m_window->timingsPage()->title();
    QVERIFY2(alone.contains(QStringLiteral("input random(seed=1), batch 2, 160×160")), qPrintable(alone));
    catalog()->remove({first, first + 1, first + 2});
  }

  // Issue 35, defect 4: the Diffs page names a shown run's diff by the run's name on the other pages.
  void theDiffsPageNamesTheRunAsThePagesDo() {
    const auto& topology = test::mainModel().layers;
    mnv2::RunReport reference = test::syntheticReport(topology, "cpu-ref", 4000, 0.01, false);
    mnv2::RunReport tested = test::syntheticReport(topology, "cpu", 2000, 0.01, false);
    mnv2::DiffReport d;
    d.backend = "cpu";
    d.reference = "cpu-ref";
    for (size_t l = 0; l < topology.size(); ++l) {
      mnv2::LayerDiff ld;
      ld.layer = static_cast<int>(l);
      ld.compared = true;
      d.layers.push_back(ld);
    }
    tested.diff = d;
    const int first = catalog()->addRun(
        {std::make_shared<const mnv2::RunReport>(reference), std::make_shared<const mnv2::RunReport>(tested)});
    catalog()->setShown({first, first + 1});
    auto* sources = m_window->diffsPage()->findChild<QComboBox*>(QStringLiteral("diffSource"));
    QVERIFY(sources);
    QStringList texts;
    for (int i = 0; i < sources->count(); ++i) texts << sources->itemText(i);
    const QString name = catalog()->identity(first + 1).name;
    QVERIFY2(texts.filter(name).size() == 1,
             qPrintable(name + QStringLiteral(" in: ") + texts.join(QStringLiteral(" | "))));
    catalog()->remove({first, first + 1});
  }

  void removingRunsKeepsTheRestAndTheirIds() {
    const int n = catalog()->count();
    const int lastId = catalog()->index(n - 1, 0).data(ReportCatalog::IdRole).toInt();
    RunsPanel* panel = m_window->runsPanel();
    panel->view()->clearSelection();
    panel->view()->selectRow(0);
    panel->findChild<QPushButton*>(QStringLiteral("runsRemove"))->click();
    QCOMPARE(catalog()->count(), n - 1);
    QCOMPARE(catalog()->baselineRow(), -1);  // the baseline was run 0
    QCOMPARE(catalog()->rowOfId(lastId), n - 2);
  }

  // Issue 35, defect 3: with every run removed, no banner speaks of shown runs.
  void removingEveryRunClearsTheReliabilityBanner() {
    std::vector<ReportPtr> noisy;
    for (int i = 0; i < 4; ++i) {
      mnv2::RunReport r = test::syntheticReport(test::mainModel().layers, "cpu", 1000, 0.1, false);
      r.reliability.findings = {{"e2e_cv", mnv2::Verdict::unreliable, "end-to-end CV 80% (> 10%)", 0.8, 0.1}};
      noisy.push_back(std::make_shared<const mnv2::RunReport>(r));
    }
    catalog()->addRun(noisy);
    QLabel* banner = m_window->reliabilityBanner();
    QVERIFY(banner->isVisible());
    QVERIFY2(banner->text().contains(QStringLiteral("3 more shown runs are unreliable")), qPrintable(banner->text()));
    // Issue 35, defect 4: the banner names the run as the pages do.
    const QString first = catalog()->identity(catalog()->shownRows().front()).name;
    QVERIFY2(banner->text().startsWith(first + QStringLiteral(" — ")), qPrintable(banner->text()));
    RunsPanel* panel = m_window->runsPanel();
    panel->view()->selectAll();
    panel->findChild<QPushButton*>(QStringLiteral("runsRemove"))->click();
    QCOMPARE(catalog()->count(), 0);
    QVERIFY2(banner->isHidden(), qPrintable(banner->text()));
    QVERIFY2(banner->text().isEmpty(), qPrintable(banner->text()));
    QVERIFY(banner->toolTip().isEmpty());
  }
};

MNV2_UI_SUITE(RunHistoryTest);
#include "test_run_history.moc"
