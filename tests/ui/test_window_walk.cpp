// The window on a small screen, as issue 35's walk found it: Qt's offscreen platform with one configured screen
// (1280×720 or 1024×700: tests/ui/screens/*.json, one CTest test per size, MNV2_WALK_SCREEN names the size the
// test expects). The first start fits the screen; maximised with 1, 7 and 20 runs checked, and after every run is
// removed again, the window's frame stays inside the screen's available geometry, the Runs panel shows at least
// three rows and can be made taller in its dock, and the Timings plot keeps a usable size. No text is cut silently
// (the status bar, the reliability banner, the top-5 class names: what is drawn fits the widget, and what is
// elided is whole in the tool-tip), and the Timings legend of 20 runs neither covers the bars nor leaves the plot.
#include <qcustomplot.h>
#include <QDockWidget>
#include <QGuiApplication>
#include <QLabel>
#include <QScreen>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QtTest>
#include <algorithm>

#include "models/report_catalog.h"
#include "ui_test_support.h"
#include "widgets/input_panel.h"
#include "widgets/main_window.h"
#include "widgets/runs_panel.h"
#include "widgets/timings_page.h"

using namespace mnv2::ui;

namespace {
constexpr int kTimeoutMs = 120000;
constexpr int kMostRuns = 20;

// "frame 0,0 1280×806 outside the available 0,0 1280×720"; empty when `inner` lies inside `outer`.
QString outside(const QRect& inner, const QRect& outer, const char* what) {
  if (outer.contains(inner)) return {};
  return QStringLiteral("%1 %2,%3 %4×%5 outside the available %6,%7 %8×%9")
      .arg(QLatin1String(what))
      .arg(inner.x())
      .arg(inner.y())
      .arg(inner.width())
      .arg(inner.height())
      .arg(outer.x())
      .arg(outer.y())
      .arg(outer.width())
      .arg(outer.height());
}

// Why `label` cuts its text, empty when it does not: each line it draws (an eliding label says what it draws in its
// "shownLines" property) must fit inside its contents, and a line it elides must be whole in its tool-tip (an
// eliding label's "shownToolTip", the one it shows).
QString clippedText(const QLabel* label) {
  if (!label->isVisible() || label->text().isEmpty()) return {};
  const QStringList lines = label->text().split(QLatin1Char('\n'));
  const QVariant shownLines = label->property("shownLines");
  const QStringList drawn = shownLines.isValid() ? shownLines.toStringList() : lines;
  const QVariant shownTip = label->property("shownToolTip");
  const QString tip = shownTip.isValid() ? shownTip.toString() : label->toolTip();
  const int room = label->contentsRect().width() - 2 * label->margin();
  for (qsizetype i = 0; i < lines.size(); ++i) {
    const QString line = i < drawn.size() ? drawn[i] : QString();
    const int width = label->fontMetrics().horizontalAdvance(line);
    if (width > room)
      return QStringLiteral("%1 draws \"%2\" (%3 px) in %4 px").arg(label->objectName(), line).arg(width).arg(room);
    if (line != lines[i] && !tip.contains(lines[i]))
      return QStringLiteral("%1 shows \"%2\" of \"%3\", and its tool-tip \"%4\" has not the whole line")
          .arg(label->objectName(), line, lines[i], tip);
  }
  return {};
}

// An unreliable run: a long first reason, so that its line of the reliability banner is wider than the window.
mnv2::ReliabilityFinding unreliableFinding() {
  mnv2::ReliabilityFinding f;
  f.code = "host_busy";
  f.verdict = mnv2::Verdict::unreliable;
  f.reason =
      "host busy: other processes used 1.9 of the 2 CPUs during the timed phases (> 0.5 with 1 thread of this run), "
      "and the 1-minute load average was 3.7; the end-to-end CV was 24% (> 10%) and p90/median 1.8 (> 1.5)";
  return f;
}

// Run k of the walk: a cpu run whose batch and input size differ from its neighbours', so that each one adds
// what differs to the titles.
ReportPtr walkRun(int k) {
  mnv2::RunReport r =
      mnv2::ui::test::syntheticReport(mnv2::ui::test::weightlessTopology(), "cpu", 1000.0 + 40 * k, 0.02, false);
  r.config.batch = 1 + k % 4;
  r.config.height = r.config.width = 96 + 32 * (k % 5);
  r.config.input_name = "random(seed=1)";
  return std::make_shared<const mnv2::RunReport>(std::move(r));
}
}  // namespace

class WindowWalkTest : public QObject {
  Q_OBJECT

 private:
  MainWindow* m_window = nullptr;
  QScreen* m_screen = nullptr;

  ReportCatalog* catalog() const { return m_window->catalog(); }

  // What asks for the height: the pages' and docks' minimum heights.
  QString heights() const {
    QString out;
    auto* tabs = m_window->findChild<QTabWidget*>(QStringLiteral("tabs"));
    for (int i = 0; tabs && i < tabs->count(); ++i)
      out += QStringLiteral("%1=%2 ").arg(tabs->tabText(i)).arg(tabs->widget(i)->minimumSizeHint().height());
    for (const char* name : {"inputDock", "runsDock"})
      if (auto* w = m_window->findChild<QWidget*>(QLatin1String(name)))
        out += QStringLiteral("%1=%2 ").arg(QLatin1String(name)).arg(w->minimumSizeHint().height());
    out += QStringLiteral("central=%1").arg(m_window->centralWidget()->minimumSizeHint().height());
    return out;
  }

  // What the walk checks at every step: the frame within the screen, the status bar and the Runs panel in view,
  // three rows of runs, the Timings plot at a usable size.
  void checkFits(const QString& step) {
    QCoreApplication::processEvents();
    const QRect available = m_screen->availableGeometry();
    QString why = outside(m_window->frameGeometry(), available, "frame");
    QVERIFY2(why.isEmpty(), qPrintable(step + QStringLiteral(": ") + why));
    QVERIFY2(m_window->minimumSizeHint().height() <= available.height(),
             qPrintable(QStringLiteral("%1: the window asks for %2 px of height, the screen has %3 (%4)")
                            .arg(step)
                            .arg(m_window->minimumSizeHint().height())
                            .arg(available.height())
                            .arg(heights())));
    for (QWidget* w : {static_cast<QWidget*>(m_window->statusBar()), static_cast<QWidget*>(m_window->runsDock())}) {
      const QRect r(w->mapTo(m_window, QPoint(0, 0)), w->size());
      why = outside(r, m_window->rect(), qPrintable(w->objectName()));
      QVERIFY2(w->isVisible() && why.isEmpty(), qPrintable(step + QStringLiteral(": ") + why));
    }
    QTableView* runs = m_window->runsPanel()->view();
    const int row = runs->verticalHeader()->defaultSectionSize();
    QVERIFY2(runs->viewport()->height() >= 3 * row,
             qPrintable(QStringLiteral("%1: the Runs panel shows %2 px of rows, less than three rows of %3 px")
                            .arg(step)
                            .arg(runs->viewport()->height())
                            .arg(row)));
    m_window->selectTab(QStringLiteral("timings"));
    QCoreApplication::processEvents();
    QCustomPlot* plot = m_window->timingsPage()->plot();
    // Never below its own minimum (a window squeezed below its minimum clips it to a strip), nor a lowered minimum.
    QVERIFY2(
        plot->height() >= std::max(plot->minimumHeight(), 140) && plot->width() >= 300,
        qPrintable(QStringLiteral("%1: the Timings plot is %2×%3").arg(step).arg(plot->width()).arg(plot->height())));
    // The title stays within a few lines, whatever the number of runs; the rest is in its tool-tip.
    auto* title = m_window->timingsPage()->findChild<QLabel*>(QStringLiteral("timingsTitle"));
    QVERIFY(title);
    QVERIFY2(title->height() <= 5 * title->fontMetrics().lineSpacing(),
             qPrintable(QStringLiteral("%1: the Timings title is %2 px tall").arg(step).arg(title->height())));
  }

  // Checks exactly the first `n` runs of the history, adding runs until there are that many.
  void showRuns(int n) {
    while (catalog()->count() < n) catalog()->addRun({walkRun(catalog()->count())});
    std::vector<int> rows;
    for (int i = 0; i < n; ++i) rows.push_back(i);
    catalog()->setShown(rows);
    QCOMPARE(m_window->shownReports().size(), static_cast<size_t>(n));
  }

 private Q_SLOTS:
  void initTestCase() {
    const QString expected = qEnvironmentVariable("MNV2_WALK_SCREEN");
    if (expected.isEmpty())
      QSKIP(
          "run through CTest (ui_WindowWalkTest_1280x720, ui_WindowWalkTest_1024x700): it configures the "
          "offscreen platform's screen and names it in MNV2_WALK_SCREEN");
    m_screen = QGuiApplication::primaryScreen();
    QVERIFY(m_screen);
    // The configured screen is the one the test runs on (the platform took the configfile).
    QCOMPARE(QStringLiteral("%1x%2").arg(m_screen->size().width()).arg(m_screen->size().height()), expected);
    MainWindow::Options options;
    options.useSettings = false;  // a first start: no saved geometry
    options.scripted = true;
    m_window = new MainWindow(options);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window));
    QVERIFY(mnv2::ui::test::startOnMainModel(*m_window, kTimeoutMs));
  }

  void cleanupTestCase() { delete m_window; }

  void firstStartFitsTheScreen() {
    QCoreApplication::processEvents();
    const QRect available = m_screen->availableGeometry();
    const QString why = outside(m_window->frameGeometry(), available, "frame");
    QVERIFY2(why.isEmpty(), qPrintable(why));
    // Neither a postage stamp nor the whole screen: room to maximise, centred.
    QVERIFY(m_window->width() >= available.width() / 2 && m_window->height() >= available.height() / 2);
    QVERIFY(qAbs(m_window->frameGeometry().center().x() - available.center().x()) <= 2);
    QVERIFY(qAbs(m_window->frameGeometry().center().y() - available.center().y()) <= 2);
  }

  void maximisedWithRuns_data() {
    QTest::addColumn<int>("runs");
    QTest::newRow("1 run") << 1;
    QTest::newRow("7 runs") << 7;
    QTest::newRow("20 runs") << kMostRuns;
  }

  void maximisedWithRuns() {
    QFETCH(int, runs);
    m_window->showMaximized();
    QTRY_VERIFY(m_window->isMaximized());
    showRuns(runs);
    checkFits(QStringLiteral("%1 run(s) checked").arg(runs));
    // What the title leaves out is in its tool-tip: every shown run's line, under the run's name.
    const QString whole = m_window->timingsPage()->findChild<QLabel*>(QStringLiteral("timingsTitle"))->toolTip();
    for (int row = 0; row < runs; ++row)
      QVERIFY2(whole.contains(catalog()->identity(row).name.toHtmlEscaped() + QStringLiteral(" on ")),
               qPrintable(whole));
  }

  // The Runs panel can be made taller where it is docked (at 720p it could not: the pages above asked for the
  // whole height), and stays docked.
  void runsPanelCanBeMadeTaller() {
    QDockWidget* dock = m_window->runsDock();
    QCoreApplication::processEvents();
    const int before = dock->height();
    m_window->resizeDocks({dock}, {before + 100}, Qt::Vertical);
    QCoreApplication::processEvents();
    QVERIFY2(dock->height() >= before + 60,
             qPrintable(QStringLiteral("the Runs dock stays %1 px tall (was %2)").arg(dock->height()).arg(before)));
    QVERIFY(!dock->isFloating());
    checkFits(QStringLiteral("the Runs panel made taller"));
    m_window->resizeDocks({dock}, {before}, Qt::Vertical);
  }

  // Issue 35, defect 13: the status bar and the reliability banner at this screen, maximised with runs shown: every
  // field draws what fits it (the status bar's fields were squeezed below their text at 1280×720, the banner's line
  // ran off its right edge), and what is elided is whole in the tool-tip.
  void statusBarAndBannerTextFits() {
    m_window->showMaximized();
    QTRY_VERIFY(m_window->isMaximized());
    showRuns(kMostRuns);
    // And an unreliable run with a long first reason, shown beside them.
    mnv2::RunReport unreliable = *walkRun(catalog()->count());
    unreliable.reliability.findings.push_back(unreliableFinding());
    catalog()->addRun({std::make_shared<const mnv2::RunReport>(std::move(unreliable))});
    std::vector<int> rows;
    for (int i = 0; i < catalog()->count(); ++i) rows.push_back(i);
    catalog()->setShown(rows);
    QCoreApplication::processEvents();
    QString why;
    const auto fields = m_window->statusBar()->findChildren<QLabel*>();
    QVERIFY(fields.size() >= 5);
    for (const QLabel* field : fields) {
      why = clippedText(field);
      QVERIFY2(why.isEmpty(), qPrintable(why));
      // Nothing beyond the bar's right edge either.
      const QRect r(field->mapTo(m_window->statusBar(), QPoint(0, 0)), field->size());
      QVERIFY2(!field->isVisible() || r.right() <= m_window->statusBar()->width(), qPrintable(field->objectName()));
    }
    auto* banner = m_window->findChild<QLabel*>(QStringLiteral("reliabilityBanner"));
    QVERIFY(banner && banner->isVisible());
    why = clippedText(banner);
    QVERIFY2(why.isEmpty(), qPrintable(why));
  }

  // Issue 35, defect 13: a long class name in the top-5 ("German short-haired pointer", a held-out photograph's class)
  // is drawn whole inside the chart's left margin, or elided with the whole name in the tool-tip over its row.
  void topFiveClassNamesReadable() {
    ClassifyResult result;
    result.imagePath = QStringLiteral("pointer.jpg");
    const char* names[] = {"German short-haired pointer", "Chesapeake Bay retriever", "wire-haired fox terrier",
                           "black-and-tan coonhound", "vizsla, Hungarian pointer"};
    for (int k = 0; k < 5; ++k) result.top5.push_back({200 + k, names[k], 0.6 / (k + 1), 0.0});
    InputPanel* panel = m_window->inputPanel();
    panel->setResult(result);
    QCoreApplication::processEvents();
    QCustomPlot* plot = panel->predictionsPlot();
    plot->replot();
    auto ticker = plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    const QFontMetrics fm(plot->yAxis->tickLabelFont());
    // The room the tick labels have: the axis rect's left edge, less the label padding.
    const int room = plot->axisRect()->left() - plot->yAxis->tickLabelPadding();
    QVERIFY2(plot->axisRect()->width() >= 60, qPrintable(QString::number(plot->axisRect()->width())));
    for (int k = 0; k < 5; ++k) {
      const double key = 5.0 - k;
      const QString drawn = ticker->ticks().value(key);
      const QString whole = QString::fromLatin1(names[k]).section(QLatin1Char(','), 0, 0);
      QVERIFY2(
          fm.horizontalAdvance(drawn) <= room,
          qPrintable(QStringLiteral("\"%1\": %2 px in %3 px").arg(drawn).arg(fm.horizontalAdvance(drawn)).arg(room)));
      if (drawn == whole) continue;
      // Elided: the tool-tip over the row names the class whole.
      const QPoint at(std::max(2, room / 2), qRound(plot->yAxis->coordToPixel(key)));
      QHelpEvent help(QEvent::ToolTip, at, plot->mapToGlobal(at));
      QCoreApplication::sendEvent(plot, &help);
      QVERIFY2(
          QToolTip::text().contains(QString::fromLatin1(names[k])),
          qPrintable(QStringLiteral("\"%1\" elided to \"%2\"; tool-tip \"%3\"").arg(whole, drawn, QToolTip::text())));
      QToolTip::hideText();
    }
  }

  // Issue 35, defect 4c: the Timings legend with 20 runs checked neither covers the plotted bars nor leaves the plot.
  void timingsLegendOfTwentyRuns() {
    m_window->showMaximized();
    QTRY_VERIFY(m_window->isMaximized());
    showRuns(kMostRuns);
    m_window->selectTab(QStringLiteral("timings"));
    QCoreApplication::processEvents();
    QCustomPlot* plot = m_window->timingsPage()->plot();
    plot->replot();
    QCPLegend* legend = plot->legend;
    QVERIFY(legend->visible());
    const QRect inner = legend->outerRect();
    QVERIFY2(plot->rect().contains(inner), qPrintable(outside(inner, plot->rect(), "legend")));
    QVERIFY2(!inner.intersects(plot->axisRect()->rect()), "the legend covers the plot area");
    // Every item it draws lies inside it with the room its text asks for, and the plot area keeps a usable height.
    for (int i = 0; i < legend->elementCount(); ++i) {
      QCPLayoutElement* element = legend->elementAt(i);
      if (!element) continue;
      const QRect item = element->outerRect();
      QVERIFY2(inner.contains(item), qPrintable(outside(item, inner, "legend item")));
      const QSize wanted = element->minimumOuterSizeHint();
      QVERIFY2(item.width() >= wanted.width() && item.height() >= wanted.height(),
               qPrintable(QStringLiteral("legend item %1 is %2×%3, its text needs %4×%5")
                              .arg(i)
                              .arg(item.width())
                              .arg(item.height())
                              .arg(wanted.width())
                              .arg(wanted.height())));
    }
    QVERIFY2(
        plot->axisRect()->height() >= 80,
        qPrintable(QStringLiteral("the plot area is %1 px tall under the legend").arg(plot->axisRect()->height())));
    // What the legend leaves out is said: every run is named in it or in the title's tool-tip.
    QString named;
    for (int i = 0; i < legend->itemCount(); ++i)
      if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i))) named += item->plottable()->name();
    named += m_window->timingsPage()->findChild<QLabel*>(QStringLiteral("timingsTitle"))->toolTip();
    for (int row = 0; row < kMostRuns; ++row)
      QVERIFY2(named.contains(catalog()->identity(row).name), qPrintable(catalog()->identity(row).name));
  }

  void removingEveryRunGivesTheRoomBack() {
    showRuns(kMostRuns);
    std::vector<int> all;
    for (int i = 0; i < catalog()->count(); ++i) all.push_back(i);
    catalog()->remove(all);
    QCOMPARE(catalog()->count(), 0);
    checkFits(QStringLiteral("every run removed"));
    // Again: add twenty runs and remove them with the window restored from maximised.
    m_window->showNormal();
    QTRY_VERIFY(!m_window->isMaximized());
    showRuns(kMostRuns);
    checkFits(QStringLiteral("twenty runs, not maximised"));
    all.clear();
    for (int i = 0; i < catalog()->count(); ++i) all.push_back(i);
    catalog()->remove(all);
    checkFits(QStringLiteral("every run removed, not maximised"));
  }
};

MNV2_UI_SUITE(WindowWalkTest);
#include "test_window_walk.moc"
