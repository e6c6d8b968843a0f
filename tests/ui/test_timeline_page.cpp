// The Timeline page: a lane per track of the engine's layout (host, workers, GPU streams, the median summary)
// and a bar per span, the run combo, tool tips with layer names, time-only zoom, and the message for a report
// without a timeline.
#include <qcustomplot.h>
#include <QComboBox>
#include <QLabel>
#include <QWheelEvent>
#include <QtTest>

#include "ui_test_support.h"
#include "widgets/timeline_page.h"

namespace mnv2::ui::test {

class TimelinePageTest : public QObject {
  Q_OBJECT
 private:
  // A cpu run whose timeline has every step back to back with 100 ns gaps, and two workers in the first
  // three steps.
  static mnv2::RunReport hostReport() {
    mnv2::RunReport r = syntheticReport(mainModel().layers, "cpu-ref", 1000.0, 0.1, false);
    mnv2::Timeline t;
    t.clock = "host_clock";
    t.iteration = 3;
    t.iterations = 10;
    t.choice = "median per-layer total";
    int64_t at = 0;
    for (const auto& s : r.steps) {
      const int64_t dur = static_cast<int64_t>(s.time_ns.median);
      t.steps.push_back(mnv2::StepSpan{s.step, at, at + dur});
      if (s.step < 3)
        for (int w = 0; w < 2; ++w) t.threads.push_back(mnv2::ThreadSpan{s.step, w, at + 10, at + dur - 10});
      at += dur + 100;
    }
    r.timeline = t;
    return r;
  }

  static mnv2::RunReport gpuReport() {
    mnv2::RunReport r = syntheticReport(mainModel().layers, "cuda", 1000.0, 0.1, true);
    r.timer = "cupti_kernel";
    mnv2::Timeline t;
    t.clock = "cupti_kernel";
    t.iteration = 0;
    t.iterations = 1;
    t.choice = "median per-layer total";
    t.steps = {mnv2::StepSpan{0, 1000, 3000}, mnv2::StepSpan{1, 3500, 5000}};
    mnv2::KernelRecord k;
    k.name = "conv_kernel";
    k.kind = "kernel";
    k.step = 0;
    k.start_ns = 1000;
    k.end_ns = 3000;
    k.grid = {7, 1, 1};
    k.block = {128, 1, 1};
    k.stream = 3;
    mnv2::KernelRecord k2 = k;
    k2.step = 1;
    k2.start_ns = 3500;
    k2.end_ns = 5000;
    mnv2::KernelRecord copy;
    copy.name = "memcpy DtoH";
    copy.kind = "memcpy";
    copy.start_ns = 5200;
    copy.end_ns = 5400;
    copy.bytes = 4004;
    copy.stream = 9;
    t.records = {k, k2, copy};
    r.timeline = t;
    return r;
  }

  static ReportPtr shared(mnv2::RunReport r) { return std::make_shared<const mnv2::RunReport>(std::move(r)); }

 private Q_SLOTS:
  void lanesAndBarsFollowTheTimeline() {
    TimelinePage page;
    const mnv2::RunReport r = hostReport();
    page.setReports({shared(r)});
    QCOMPARE(page.laneCount(), 4);  // host, worker 0, worker 1, median summary
    const int steps = static_cast<int>(r.steps.size());
    QCOMPARE(page.barCount(), steps + 6 + steps);             // layer spans, worker spans, summary
    QCOMPARE(page.plot()->itemCount(), 2 * page.barCount());  // every bar here is a layer span: one label each
    QVERIFY2(page.message().contains(QStringLiteral("iteration 3 of 10")), qPrintable(page.message()));
  }

  void gpuStreamsGetALaneEach() {
    TimelinePage page;
    page.setReports({shared(gpuReport())});
    QCOMPARE(page.laneCount(), 3);                                                  // streams 3 and 9, summary
    QCOMPARE(page.barCount(), 2 + 3 + static_cast<int>(gpuReport().steps.size()));  // layers, records, summary
  }

  void toolTipNamesTheLayerAndTheKernel() {
    TimelinePage page;
    page.resize(900, 400);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setReports({shared(gpuReport())});
    QCustomPlot* plot = page.plot();
    plot->replot();
    // The upper part of lane 0 at 2 us holds only the layer span; the lower part, the kernel nested in it.
    const int x = static_cast<int>(plot->xAxis->coordToPixel(2.0));
    const QString layer = page.toolTipAt(QPoint(x, static_cast<int>(plot->yAxis->coordToPixel(0.25))));
    QVERIFY2(layer.contains(QStringLiteral("stem.conv")), qPrintable(layer));
    const QString kernel = page.toolTipAt(QPoint(x, static_cast<int>(plot->yAxis->coordToPixel(-0.2))));
    QVERIFY2(kernel.contains(QStringLiteral("conv_kernel")), qPrintable(kernel));
    QVERIFY2(kernel.contains(QStringLiteral("grid 7×1×1, block 128×1×1")), qPrintable(kernel));
    QVERIFY2(kernel.contains(QStringLiteral("start 1.000 µs, duration 2.000 µs")), qPrintable(kernel));
  }

  void wheelZoomsTimeOnly() {
    TimelinePage page;
    page.resize(900, 400);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setReports({shared(hostReport())});
    QCustomPlot* plot = page.plot();
    const QCPRange x0 = plot->xAxis->range(), y0 = plot->yAxis->range();
    const QPointF centre = plot->axisRect()->rect().center();
    QWheelEvent wheel(centre, plot->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    QApplication::sendEvent(plot, &wheel);
    QVERIFY(plot->xAxis->range().size() < x0.size());
    QCOMPARE(plot->yAxis->range().lower, y0.lower);
    QCOMPARE(plot->yAxis->range().upper, y0.upper);
  }

  void layerNamesShowOnBarsWideEnough() {
    TimelinePage page;
    page.resize(900, 400);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setReports({shared(hostReport())});
    QVERIFY(!page.visibleLabels().contains(QStringLiteral("block1.dw")));  // 99 layers in 900 px: no room
    // Zoomed onto the third layer's span (3.2 to 6.2 us): its name fits.
    page.plot()->xAxis->setRange(3.0, 6.5);
    QVERIFY2(page.visibleLabels().contains(QStringLiteral("block1.dw")), qPrintable(page.visibleLabels().join(' ')));
  }

  void theComboSwitchesRunsAndAnOldReportSaysItHasNoTimeline() {
    TimelinePage page;
    mnv2::RunReport old = hostReport();
    old.timeline.reset();
    page.setReports({shared(hostReport()), shared(old)});
    QCOMPARE(page.runCombo()->count(), 2);
    // Each item tells the runs apart by batch and size too, and is not cut (the combo fits its text).
    const mnv2::RunReport& first = hostReport();
    const QString item = page.runCombo()->itemText(0);
    QVERIFY2(
        item.contains(
            QStringLiteral(" · b%1 · %2×%3").arg(first.config.batch).arg(first.config.height).arg(first.config.width)),
        qPrintable(item));
    QVERIFY2(page.runCombo()->minimumSizeHint().width() >= page.runCombo()->fontMetrics().horizontalAdvance(item),
             qPrintable(item));
    QCOMPARE(page.laneCount(), 4);
    page.runCombo()->setCurrentIndex(1);
    QCOMPARE(page.laneCount(), 1);  // the median summary only
    QCOMPARE(page.barCount(), static_cast<int>(old.steps.size()));
    QVERIFY2(page.message().contains(QStringLiteral("no timeline")), qPrintable(page.message()));
    auto* label = page.findChild<QLabel*>(QStringLiteral("timelineMessage"));
    QVERIFY(label);
    QCOMPARE(label->text(), page.message());
    page.setReports({});
    QCOMPARE(page.laneCount(), 0);
    QCOMPARE(page.barCount(), 0);
  }
};

MNV2_UI_SUITE(TimelinePageTest);

}  // namespace mnv2::ui::test

#include "test_timeline_page.moc"
