// The Roofline & memory page: points for every step with work, the roof when ceilings are given, the
// memory table, and the Nsight Compute command of the selected layer (the run's own step name, fused or not).
#include <qcustomplot.h>
#include <QHeaderView>
#include <QLineEdit>
#include <QTableWidget>
#include <QtTest>

#include "mnv2/bench_report.h"
#include "models/layer_selection.h"
#include "ui_test_support.h"
#include "widgets/roofline_page.h"
#include "widgets/sweep_page.h"

namespace mnv2::ui::test {

class RooflinePageTest : public QObject {
  Q_OBJECT
 private:
  static ReportPtr report(const std::string& backend) {
    mnv2::RunReport r = syntheticReport(mainModel().layers, backend, 1000.0, 0.1, backend != "cpu");
    r.layer_stats = mnv2::analyse(mainModel(), 1, 224, 224);
    r.config.batch = 1;
    r.config.input_name = "random(seed=1)";
    r.model_source = "/models/m.onnx";
    return std::make_shared<const mnv2::RunReport>(r);
  }

 private Q_SLOTS:
  void placesStepsAndDrawsTheRoof() {
    LayerSelection selection;
    RooflinePage page(&selection);
    const ReportPtr r = report("cudnn");
    page.setReport(r);
    QCOMPARE(page.pointCount(), static_cast<int>(r->steps.size()));  // every step of the synthetic run has work
    mnv2::Ceilings c;
    c.device = "Test GPU";
    c.key = "gpu|Test GPU";
    c.bandwidth_gb_s = 4000;
    c.gflop_s = 50000;
    page.setCeilings(c);
    auto* table = page.findChild<QTableWidget*>();
    QVERIFY(table);
    QCOMPARE(table->rowCount(), static_cast<int>(r->topology.size()));
    QCOMPARE(table->item(0, 3)->text(), QString::number(r->layer_stats[0].activation_bytes));
  }

  // Issue 35, defect 13: every header of the memory table fits its column ("activation bytes" showed as
  // "ctivation byte").
  void memoryHeadersFitTheirColumns() {
    LayerSelection selection;
    RooflinePage page(&selection);
    page.resize(700, 420);  // the page beside the input dock at 1024×700
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setReport(report("cpu"));
    auto* table = page.findChild<QTableWidget*>(QStringLiteral("memoryTable"));
    QVERIFY(table);
    QHeaderView* header = table->horizontalHeader();
    for (int c = 0; c < table->columnCount(); ++c) {
      const QString text = table->horizontalHeaderItem(c)->text();
      QVERIFY2(header->sectionSize(c) >= header->sectionSizeHint(c), qPrintable(QStringLiteral("\"%1\": %2 px for %3")
                                                                                    .arg(text)
                                                                                    .arg(header->sectionSize(c))
                                                                                    .arg(header->sectionSizeHint(c))));
    }
  }

  void ncuCommandNamesTheStepOfTheSelectedLayer() {
    LayerSelection selection;
    RooflinePage page(&selection);
    page.setReport(report("cudnn"));
    selection.setCurrentLayer(1);  // a ReLU6 fused into step "fused 0"
    const QString cmd = page.ncuCommand();
    QVERIFY2(cmd.startsWith(QStringLiteral("ncu --nvtx --nvtx-include 'fused 0/' --set full")), qPrintable(cmd));
    QVERIFY2(
        cmd.contains(QStringLiteral(" profile --backend cudnn --model /models/m.onnx --batch 1 --input-size 224x224")),
        qPrintable(cmd));
    QVERIFY2(cmd.contains(QStringLiteral("/mnv2 profile")), qPrintable(cmd));
    page.setReport(report("cpu"));
    QVERIFY(page.ncuCommand().isEmpty());  // the cpu backend launches no kernels
  }
};

MNV2_UI_SUITE(RooflinePageTest);

// The Sweep page: its fields become the engine's SweepConfig (or a message), and results become one line
// per backend and input size (x = batch) or per backend and batch (x = input size).
class SweepPageTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void fieldsAndLines() {
    SweepPage page;
    page.setFields(QStringLiteral("cpu,cudnn"), QStringLiteral("224x224, 500x334"), QStringLiteral("1,8,64"));
    const auto c = page.config();
    QVERIFY(c.has_value());
    QCOMPARE(c->backends.size(), size_t{2});
    QCOMPARE(c->sizes.size(), size_t{2});
    QCOMPARE(c->sizes[1].second, 334);
    QCOMPARE(c->batches.back(), 64);
    page.setFields({}, QStringLiteral("224x"), {});
    QString error;
    QVERIFY(!page.config(&error).has_value());
    QVERIFY2(error.contains(QStringLiteral("input width")), qPrintable(error));
    page.setFields({}, QStringLiteral("224x224"), QStringLiteral("1,zero"));
    QVERIFY(!page.config(&error).has_value());

    std::vector<mnv2::BenchResult> results;
    for (const auto& [h, w] : std::vector<std::pair<int, int>>{{224, 224}, {500, 334}})
      for (int batch : {1, 8, 64}) {
        mnv2::BenchResult r;
        r.config.backend = "cpu";
        r.config.height = h;
        r.config.width = w;
        r.config.batch = batch;
        r.latency_ms.median = batch * (h * w / 50000.0);
        r.images_per_s = batch * 1000.0 / r.latency_ms.median;
        results.push_back(r);
      }
    page.setResults(results);
    QCOMPARE(page.lineCount(), 2);  // x = batch: one line per input size
    page.setXAxis(true);
    QCOMPARE(page.lineCount(), 3);  // x = input size: one line per batch
  }

  // Issue 35, defect 13: at the size the Sweep page has on a 1024×700 screen, the legend lies outside the axes
  // (it covered the points) and each y-axis label fits beside its axis (it was cut at both ends).
  void sweepLegendAndLabelsKeepOffTheData() {
    SweepPage page;
    page.resize(690, 470);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    std::vector<mnv2::BenchResult> results;
    for (const char* backend : {"cpu", "cpu-ref", "cuda"})
      for (int batch : {1, 8, 64}) {
        mnv2::BenchResult r;
        r.config.backend = backend;
        r.config.batch = batch;
        r.latency_ms.median = batch * 0.5;
        r.images_per_s = batch * 1000.0 / r.latency_ms.median;
        results.push_back(r);
      }
    page.setResults(results);
    QCOMPARE(page.lineCount(), 3);
    for (QCustomPlot* plot : {page.latencyPlot(), page.throughputPlot()}) {
      plot->replot();
      const QRect data = plot->axisRect()->rect();
      QVERIFY2(!plot->legend->outerRect().intersects(data),  // outside the axes
               qPrintable(QStringLiteral("%1: the legend %2,%3 %4×%5 over the axes %6,%7 %8×%9")
                              .arg(plot->objectName())
                              .arg(plot->legend->outerRect().x())
                              .arg(plot->legend->outerRect().y())
                              .arg(plot->legend->outerRect().width())
                              .arg(plot->legend->outerRect().height())
                              .arg(data.x())
                              .arg(data.y())
                              .arg(data.width())
                              .arg(data.height())));
      QVERIFY2(plot->rect().contains(plot->legend->outerRect()), qPrintable(plot->objectName()));
      const int label = QFontMetrics(plot->yAxis->labelFont()).horizontalAdvance(plot->yAxis->label());
      QVERIFY2(label <= data.height(), qPrintable(QStringLiteral("%1: \"%2\" is %3 px beside an axis of %4 px")
                                                      .arg(plot->objectName(), plot->yAxis->label())
                                                      .arg(label)
                                                      .arg(data.height())));
    }
  }

  // Saved results (a mnv2.bench/1 file: here the PyTorch anchor's, fp32 and fp16) join the sweep's: rows in
  // the table, a line per backend and precision in the charts; a new sweep keeps them, the same file again
  // replaces its rows.
  void savedResultsJoinTheSweep() {
    SweepPage page;
    std::vector<mnv2::BenchResult> fresh;
    for (int batch : {1, 8}) {
      mnv2::BenchResult r;
      r.config.backend = "cuda";
      r.config.batch = batch;
      r.latency_ms.median = batch * 0.1;
      r.images_per_s = batch * 1000.0 / r.latency_ms.median;
      fresh.push_back(r);
    }
    page.setResults(fresh);
    QCOMPARE(page.lineCount(), 1);
    const std::string anchor = std::string(MNV2_TEST_DATA_DIR) + "/bench/pytorch-anchor-h200-excerpt.json";
    page.addSavedResults(mnv2::read_bench_file(anchor).results, QStringLiteral("anchor.json"));
    QCOMPARE(page.table()->rowCount(), 6);
    QCOMPARE(page.savedCount(), 4);
    QCOMPARE(page.lineCount(), 3);  // cuda fp32, pytorch fp32, pytorch fp16
    QStringList names;
    for (int g = 0; g < page.latencyPlot()->graphCount(); ++g) names << page.latencyPlot()->graph(g)->name();
    QVERIFY2(names.filter(QStringLiteral("pytorch")).size() == 2, qPrintable(names.join(QStringLiteral(" | "))));
    QVERIFY2(page.table()->item(5, 0)->text().contains(QStringLiteral("pytorch")),
             qPrintable(page.table()->item(5, 0)->text()));
    page.addSavedResults(mnv2::read_bench_file(anchor).results, QStringLiteral("anchor.json"));
    QCOMPARE(page.table()->rowCount(), 6);
    page.setResults({fresh.front()});
    QCOMPARE(page.table()->rowCount(), 5);
    QCOMPARE(page.results().size(), size_t{5});
    page.clearSavedResults();
    QCOMPARE(page.lineCount(), 1);
    QCOMPARE(page.table()->rowCount(), 1);
  }
};

MNV2_UI_SUITE(SweepPageTest);

}  // namespace mnv2::ui::test

#include "test_roofline_page.moc"
