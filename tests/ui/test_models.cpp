// The item models of the app (ui/models), each checked by QAbstractItemModelTester and by what it shows.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>
#include <memory>

#include "mnv2/profiler.h"
#include "models/diff_table_model.h"
#include "models/layer_filter_proxy.h"
#include "models/layer_table_model.h"
#include "models/report_catalog.h"
#include "models/run_comparison_model.h"
#include "models/totals_model.h"
#include "ui_test_support.h"

using namespace mnv2::ui;

class ModelsTest : public QObject {
  Q_OBJECT

 private:
  std::vector<mnv2::Layer> topology() const { return test::weightlessTopology(); }
  std::vector<mnv2::LayerStats> stats() const { return mnv2::analyse(test::mainModel(), 1, 224, 224); }

  // A real cpu-ref run (one step per layer), short: the models must take what the engine produces.
  const mnv2::RunReport& cpuReport() {
    if (!m_cpu) {
      mnv2::ProfileConfig c;
      c.backend = "cpu-ref";
      c.warmup = 0;
      c.iters = 2;
      m_cpu = std::make_shared<mnv2::RunReport>(mnv2::profile(test::mainModel(), c));
    }
    return *m_cpu;
  }
  std::shared_ptr<mnv2::RunReport> m_cpu;

 private Q_SLOTS:
  void layerTableShowsTheTopology() {
    LayerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTopology(topology(), stats());
    QCOMPARE(model.rowCount(), 99);
    QCOMPARE(model.columnCount(), static_cast<int>(LayerTableModel::ColumnCount));
    QCOMPARE(model.index(0, LayerTableModel::Name).data().toString(), QStringLiteral("stem.conv"));
    QCOMPARE(model.index(0, LayerTableModel::Output).data().toString(), QStringLiteral("1×32×112×112"));
    QCOMPARE(model.index(0, LayerTableModel::Params).data(LayerTableModel::SortRole).toLongLong(), 896LL);
    QCOMPARE(model.index(98, LayerTableModel::Kind).data().toString(), QStringLiteral("Linear"));
    QVERIFY(!model.index(5, LayerTableModel::Median).data().isValid());  // no run yet
  }

  void layerTableShowsARun() {
    LayerTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setTopology(topology(), stats());
    model.setReport(std::make_shared<const mnv2::RunReport>(cpuReport()));
    QCOMPARE(model.rowCount(), 99);
    for (int row = 0; row < 99; ++row) {
      const QModelIndex median = model.index(row, LayerTableModel::Median);
      QVERIFY2(!median.data().toString().isEmpty(), qPrintable(QStringLiteral("row %1").arg(row)));
      QVERIFY(median.data(LayerTableModel::SortRole).toDouble() > 0);
    }
    QVERIFY(model.index(12, LayerTableModel::Median).data(Qt::ToolTipRole).toString().contains(QStringLiteral("p90")));
    model.setReport(nullptr);
    QVERIFY(!model.index(5, LayerTableModel::Median).data().isValid());
  }

  void filterByBlockKindAndName() {
    LayerTableModel model;
    model.setTopology(topology(), stats());
    LayerFilterProxy proxy;
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    QCOMPARE(proxy.rowCount(), 99);
    proxy.setBlockFilter(3);  // expand, relu6, dw, relu6, project, add
    QCOMPARE(proxy.rowCount(), 6);
    proxy.setKindFilter(QStringLiteral("ResidualAdd"));
    QCOMPARE(proxy.rowCount(), 1);
    proxy.setBlockFilter(-1);
    QCOMPARE(proxy.rowCount(), 10);
    proxy.setKindFilter(QString());
    proxy.setNameFilter(QStringLiteral(".dw"));
    QCOMPARE(proxy.rowCount(), 34);  // 17 depthwise convolutions and their activations
    proxy.setNameFilter(QString());
    proxy.sort(LayerTableModel::Macs, Qt::DescendingOrder);
    const qlonglong first = proxy.index(0, LayerTableModel::Macs).data(LayerTableModel::SortRole).toLongLong();
    const qlonglong second = proxy.index(1, LayerTableModel::Macs).data(LayerTableModel::SortRole).toLongLong();
    QVERIFY(first >= second);
  }

  void diffTableHighlightsTheFirstDivergentLayer() {
    auto d = std::make_shared<mnv2::DiffReport>();
    d->backend = "cudnn";
    d->reference = "cpu";
    d->threshold = 1e-4;
    d->first_divergent_layer = 7;
    for (int l = 0; l < 99; ++l) {
      mnv2::LayerDiff ld;
      ld.layer = l;
      ld.compared = l % 2 == 0 || l == 7;
      ld.error.rel_l2 = l >= 7 ? 2e-4 : 1e-6;
      ld.error.max_abs = 1e-3;
      ld.error.cosine = 0.999;
      d->layers.push_back(ld);
    }
    DiffTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setDiff(d, topology());
    QCOMPARE(model.rowCount(), 99);
    QVERIFY(model.index(7, 0).data(DiffTableModel::FirstDivergentRole).toBool());
    QVERIFY(!model.index(8, 0).data(DiffTableModel::FirstDivergentRole).toBool());
    QCOMPARE(model.index(7, DiffTableModel::Status).data().toString(), QStringLiteral("first divergent layer"));
    QVERIFY(model.index(1, DiffTableModel::Status).data().toString().startsWith(QStringLiteral("not compared")));
    QVERIFY(model.index(7, 0).data(Qt::BackgroundRole).isValid());
    QCOMPARE(model.index(4, DiffTableModel::RelL2).data(DiffTableModel::SortRole).toDouble(), 1e-6);
    model.setDiff(nullptr, {});
    QCOMPARE(model.rowCount(), 0);
  }

  void runComparisonAlignsFusedStepsAndGreysNoise() {
    // A: one step per layer; B: convolutions fused with their ReLU6. Rows are the union of both.
    auto a = std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology(), "cpu", 10000, 0.05, false));
    auto b = std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology(), "cudnn", 1000, 0.05, true));
    RunComparisonModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRuns(a, b);
    QCOMPARE(model.rowCount(), static_cast<int>(b->steps.size()));
    QVERIFY(model.rowCount() < 99);
    // Segment 0 = stem.conv + stem.relu6: A's two steps against B's fused one.
    QCOMPARE(model.index(0, RunComparisonModel::Index).data().toString(), QStringLiteral("0–1"));
    const double medianA = a->steps[0].time_ns.median + a->steps[1].time_ns.median;
    QCOMPARE(model.index(0, RunComparisonModel::MedianA).data(RunComparisonModel::SortRole).toDouble(), medianA);
    QCOMPARE(model.index(0, RunComparisonModel::Delta).data(RunComparisonModel::SortRole).toDouble(),
             b->steps[0].time_ns.median - medianA);
    // 10x apart with ±5 % ranges: nothing is within noise.
    QCOMPARE(model.rowsOutsideNoise(), model.rowCount());
    QVERIFY(!model.index(0, 0).data(RunComparisonModel::WithinNoiseRole).toBool());

    // The same run against itself: every row inside the noise, speed-up 1.
    model.setRuns(a, a);
    QCOMPARE(model.rowCount(), 99);
    QCOMPARE(model.rowsOutsideNoise(), 0);
    QVERIFY(model.index(3, 0).data(RunComparisonModel::WithinNoiseRole).toBool());
    QVERIFY(model.index(3, 0).data(Qt::ForegroundRole).isValid());
    QCOMPARE(model.index(3, RunComparisonModel::SpeedUp).data(RunComparisonModel::SortRole).toDouble(), 1.0);
    QVERIFY(model.headerData(RunComparisonModel::Delta, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("p10–p90")));
    model.setRuns(nullptr, a);
    QCOMPARE(model.rowCount(), 0);
  }

  void noiseRuleIsOverlapOfP10P90() {
    QVERIFY(rangesOverlap(1, 3, 2, 4));
    QVERIFY(rangesOverlap(1, 3, 3, 4));
    QVERIFY(!rangesOverlap(1, 2, 3, 4));
    QVERIFY(!rangesOverlap(5, 6, 3, 4));
  }

  void totalsPerKindAndBlock() {
    TotalsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto r = std::make_shared<const mnv2::RunReport>(cpuReport());
    model.setReports({r, r});
    QCOMPARE(model.rowCount(), static_cast<int>(r->per_kind.size()));
    QCOMPARE(model.columnCount(), 5);
    double shares = 0;
    for (int g = 0; g < model.rowCount(); ++g) shares += model.share(0, g);
    QVERIFY(qAbs(shares - 1.0) < 1e-9);
    model.setGrouping(TotalsModel::Grouping::Block);
    QCOMPARE(model.rowCount(), 19);  // stem, 17 bottlenecks, head
    QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("stem"));
    model.setReports({});
    QCOMPARE(model.rowCount(), 0);
  }

  void totalsShowFusedKindsAsFusedNotZero() {
    // Every ReLU6 that follows a Conv2d runs inside the conv's step: the ReLU6 row must say so.
    const auto& topology = test::mainModel().layers;
    auto fused = std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology, "cuda", 1000, 0.1, true));
    int relu6 = -1, conv = -1;
    for (size_t g = 0; g < fused->per_kind.size(); ++g) {
      if (fused->per_kind[g].name == "ReLU6") relu6 = static_cast<int>(g);
      if (fused->per_kind[g].name == "Conv2d") conv = static_cast<int>(g);
    }
    QVERIFY(relu6 >= 0 && conv >= 0);
    QCOMPARE(fused->per_kind[static_cast<size_t>(relu6)].layers, 35);
    QCOMPARE(fused->per_kind[static_cast<size_t>(relu6)].steps, 0);
    QCOMPARE(fused->per_kind[static_cast<size_t>(relu6)].fused_layers, 35);
    QCOMPARE(fused->per_kind[static_cast<size_t>(conv)].steps, 52);
    TotalsModel model;
    model.setReports({fused});
    int row = -1;
    for (int g = 0; g < model.rowCount(); ++g)
      if (model.index(g, 0).data().toString() == QStringLiteral("ReLU6")) row = g;
    QVERIFY(row >= 0);
    QCOMPARE(model.index(row, 1).data().toString(), QStringLiteral("fused"));
    QVERIFY(model.index(row, 1).data(Qt::ToolTipRole).toString().contains(QStringLiteral("35 of the 35")));
  }

  // A hostile or damaged name (a megabyte, multi-byte characters at the cut) reaches the table bounded.
  void longStringsAreBoundedBeforeWidgets() {
    const std::string huge = "é" + std::string(1 << 20, 'n') + "ü";
    const QString shown = shownText(huge);
    QVERIFY(shown.size() < kMaxShownChars + 40);
    QVERIFY(shown.startsWith(QStringLiteral("é")));
    QVERIFY(shown.endsWith(QStringLiteral("ü")));
    QVERIFY(shown.contains(QStringLiteral("1048580 bytes")));
    QVERIFY(!shown.contains(QChar::ReplacementCharacter));
    std::string cut(kMaxShownChars / 2 - 1, 'a');
    cut += "ééé" + std::string(kMaxShownChars, 'b');  // a two-byte character across the cut
    QVERIFY(!shownText(cut).contains(QChar::ReplacementCharacter));
    QCOMPARE(shownText("short"), QStringLiteral("short"));
    std::vector<mnv2::Layer> layers = topology();
    layers[0].name = huge;
    LayerTableModel model;
    model.setTopology(layers, stats());
    QElapsedTimer t;
    t.start();
    const QString name = model.index(0, LayerTableModel::Name).data().toString();
    QVERIFY(name.size() < kMaxShownChars + 40);
    QVERIFY(t.elapsed() < 1000);
  }

  void catalogKeepsEveryRunAndFiles() {
    ReportCatalog catalog;
    QAbstractItemModelTester tester(&catalog, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto a = std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology(), "cpu", 1000, 0.1, false));
    auto b = std::make_shared<const mnv2::RunReport>(test::syntheticReport(topology(), "cudnn", 100, 0.1, true));
    QSignalSpy shown(&catalog, &ReportCatalog::shownChanged);
    QCOMPARE(catalog.firstCurrentRow(), -1);
    QCOMPARE(catalog.addFile(QStringLiteral("/tmp/x.json"), {b}), 0);
    QCOMPARE(catalog.addRun({a, b}), 1);  // a compare: two runs of one group
    QCOMPARE(catalog.count(), 3);
    QCOMPARE(catalog.firstCurrentRow(), 1);
    QCOMPARE(catalog.currentRows(), (std::vector<int>{1, 2}));
    QCOMPARE(catalog.shownRows(), (std::vector<int>{1, 2}));
    QCOMPARE(shown.count(), 1);
    QCOMPARE(catalog.index(1, ReportCatalog::Name).data(Qt::EditRole).toString(), QStringLiteral("run 1.1"));
    QVERIFY(catalog.index(0, ReportCatalog::Label).data().toString().contains(QStringLiteral("x.json")));
    QCOMPARE(catalog.addFile(QStringLiteral("/tmp/x.json"), {a, b}), 2);  // replaced, not added twice
    QCOMPARE(catalog.count(), 4);
    QCOMPARE(catalog.firstCurrentRow(), 0);
    QCOMPARE(catalog.addRun({a}), 4);  // a second Run is added, the first kept
    QCOMPARE(catalog.count(), 5);
    QVERIFY(catalog.index(4, 0).data(ReportCatalog::IsCurrentRole).toBool());
    QVERIFY(!catalog.index(0, 0).data(ReportCatalog::IsCurrentRole).toBool());
    QCOMPARE(catalog.index(4, ReportCatalog::Name).data(Qt::EditRole).toString(), QStringLiteral("run 2"));
    QCOMPARE(catalog.shownRows(), std::vector<int>{4});
    // A pinned baseline is shown beside the next run; removing it unpins it.
    catalog.setBaseline(0);
    QCOMPARE(catalog.addRun({b}), 5);
    QCOMPARE(catalog.shownRows(), (std::vector<int>{0, 5}));
    QCOMPARE(catalog.session().baseline, 0);
    QCOMPARE(catalog.session().runs.size(), size_t{6});
    catalog.remove({0});
    QCOMPARE(catalog.baselineRow(), -1);
    QCOMPARE(catalog.shownRows(), std::vector<int>{4});
    // Combo boxes read the Label column; the Runs table edits the name and note.
    QVERIFY(catalog.flags(catalog.index(0, ReportCatalog::Note)) & Qt::ItemIsEditable);
    QVERIFY(!(catalog.flags(catalog.index(0, ReportCatalog::Batch)) & Qt::ItemIsEditable));
    QVERIFY(catalog.setData(catalog.index(0, ReportCatalog::Note), QStringLiteral("idle machine")));
    QCOMPARE(catalog.session().runs[0].note, std::string("idle machine"));
    // The reliability column: the verdict, its reasons as tool-tip.
    mnv2::RunReport noisy = test::syntheticReport(topology(), "cpu", 1000, 0.1, false);
    noisy.reliability.findings.push_back({"e2e_cv", mnv2::Verdict::unreliable, "end-to-end CV 80% (> 10%)", 0.8});
    const int row = catalog.addRun({std::make_shared<const mnv2::RunReport>(noisy)});
    QVERIFY(catalog.index(row, ReportCatalog::Reliability).data().toString().contains(QStringLiteral("unreliable")));
    QVERIFY(catalog.index(row, ReportCatalog::Reliability)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("CV 80%")));
  }

  // Issue 35, defect 4: runs are told apart in the Runs panel: each row says what differs (input, batch, backend,
  // precision, options), by the engine's rule; two cpu runs of other inputs or thread counts read the same before.
  void runsPanelRowsSayWhatDiffers() {
    ReportCatalog catalog;
    QAbstractItemModelTester tester(&catalog, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto run = [this](const char* backend, const char* input, int batch, mnv2::Precision precision, int threads) {
      mnv2::RunReport r = test::syntheticReport(topology(), backend, 1000, 0.1, false);
      r.config.input_name = input;
      r.config.batch = batch;
      r.config.precision = precision;
      r.config.cpu_threads = threads;
      return std::make_shared<const mnv2::RunReport>(std::move(r));
    };
    catalog.addRun({run("cpu", "cat.bmp", 1, mnv2::Precision::fp32, 0)});
    catalog.addRun({run("cpu", "owl.jpg", 1, mnv2::Precision::fp32, 0)});      // another input
    catalog.addRun({run("cpu", "cat.bmp", 1, mnv2::Precision::fp32, 4)});      // another thread count
    catalog.addRun({run("cpu", "cat.bmp", 2, mnv2::Precision::fp32, 0)});      // another batch
    catalog.addRun({run("cpu-ref", "cat.bmp", 1, mnv2::Precision::fp32, 0)});  // another backend
    // What a row says of its run's settings: every column but its name and what was measured or typed.
    auto settings = [&](int row) {
      QStringList out;
      for (int c = 0; c < catalog.columnCount(); ++c)
        if (c != ReportCatalog::Name && c != ReportCatalog::EndToEnd && c != ReportCatalog::Reliability &&
            c != ReportCatalog::Taken && c != ReportCatalog::Note && c != ReportCatalog::Source &&
            c != ReportCatalog::Label)
          out << catalog.headerData(c, Qt::Horizontal).toString() + QStringLiteral("=") +
                     catalog.index(row, c).data().toString();
      return out.join(QStringLiteral(" | "));
    };
    for (int i = 0; i < catalog.count(); ++i)
      for (int j = i + 1; j < catalog.count(); ++j)
        QVERIFY2(settings(i) != settings(j),
                 qPrintable(QStringLiteral("rows %1 and %2 read the same: %3").arg(i).arg(j).arg(settings(i))));
    QVERIFY2(settings(1).contains(QStringLiteral("owl.jpg")), qPrintable(settings(1)));
    QVERIFY2(settings(0).contains(QStringLiteral("cat.bmp")), qPrintable(settings(0)));
    // A run added later changes what the others' rows say (now the precision differs too).
    catalog.addRun({run("cpu", "cat.bmp", 1, mnv2::Precision::fp16, 0)});
    QVERIFY2(settings(0).contains(QStringLiteral("precision fp32")) ||
                 settings(0).contains(QStringLiteral("Precision=fp32")),
             qPrintable(settings(0)));
    QVERIFY(settings(5) != settings(0));
  }

  // Issue 35, defect 4: the Totals table names two cpu runs apart ("cpu fp32 ms" twice before), by the engine's rule
  // for what differs, when the page has no names from the run history.
  void totalsHeadersNameEachRun() {
    auto run = [this](int batch) {
      mnv2::RunReport r = test::syntheticReport(topology(), "cpu", 1000, 0.1, false);
      r.config.batch = batch;
      return std::make_shared<const mnv2::RunReport>(std::move(r));
    };
    TotalsModel model;
    model.setReports({run(1), run(2)}, {});
    QCOMPARE(model.columnCount(), 5);
    QStringList headers;
    for (int c = 1; c < model.columnCount(); ++c) headers << model.headerData(c, Qt::Horizontal).toString();
    QVERIFY2(headers[0] != headers[2] && headers[1] != headers[3], qPrintable(headers.join(QStringLiteral(" | "))));
    QVERIFY2(headers[0].contains(QStringLiteral("batch 1")) && headers[2].contains(QStringLiteral("batch 2")),
             qPrintable(headers.join(QStringLiteral(" | "))));
  }
};

MNV2_UI_SUITE(ModelsTest);
#include "test_models.moc"
