// The Deep dive page (issue 35, item 3): a dive recorded on an H200 (tests/data/ncu) shown beside a failed one, row
// by row from the engine's figures; a dive that cannot run says why in one line, through the job's thread.
#include <QAbstractItemModelTester>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>

#include "mnv2/backend.h"
#include "mnv2/deep_dive.h"
#include "models/deep_dive_model.h"
#include "models/layer_selection.h"
#include "models/report_catalog.h"
#include "ui_test_support.h"
#include "widgets/deep_dive_page.h"

namespace mnv2::ui::test {

namespace {

const QString kData = QStringLiteral(MNV2_TEST_DATA_DIR "/ncu");

std::string fixture(const QString& name) {
  QProcess xz;
  xz.start(QStringLiteral("xz"), {QStringLiteral("-dc"), kData + QLatin1Char('/') + name + QStringLiteral(".xz")});
  if (!xz.waitForFinished(60000) || xz.exitCode() != 0) return {};
  return xz.readAllStandardOutput().toStdString();
}

// One of the fixtures recorded on an H200 (tests/data/ncu/README.md): fp16, batch 8, the step of layer 21.
mnv2::DeepDiveResult fixtureDive(const QString& name, const std::string& backend, std::vector<int> layers) {
  mnv2::DeepDiveResult r;
  r.backend = backend;
  r.layer = 21;
  std::vector<mnv2::NcuKernel> kernels = mnv2::parse_ncu_raw(fixture(name + QStringLiteral(".raw.csv")));
  mnv2::add_ncu_details(fixture(name + QStringLiteral(".details.csv")), kernels);
  r.ncu.summary = mnv2::summarise_ncu(kernels);
  r.step_name = r.ncu.summary.total.range;
  r.layers = std::move(layers);
  for (int l : r.layers) r.layer_names.push_back(weightlessTopology()[static_cast<size_t>(l)].name);
  r.measured_median_ns = backend == "cuda" ? 15210 : 7340;
  r.timer = "cuda_event";
  r.intensity_flop_per_byte = 12.5;
  r.gflops = 340.0;
  r.ncu.ncu_version = "Version 2025.3.1.0 (build 36398880) (public-release)";
  return r;
}

}  // namespace

class DeepDivePageTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void showsBothRunsFiguresSideBySide() {
    LayerSelection selection;
    ReportCatalog catalog;
    DeepDivePage page(&catalog, &selection);
    QAbstractItemModelTester tester(page.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const DeepDiveModel::Column cuda{
        QStringLiteral("run 1 · cuda fp16 · b8"),
        fixtureDive(QStringLiteral("deep_cuda_fp16_b8_block5_expand_block"), "cuda", {21, 22, 23, 24, 25, 26}),
        {}};
    const DeepDiveModel::Column cudnn{
        QStringLiteral("run 2 · cudnn fp16 · b8"),
        fixtureDive(QStringLiteral("deep_cudnn_fp16_b8_block5_expand_auto"), "cudnn", {21, 22}),
        {}};
    const DeepDiveModel::Column refused{QStringLiteral("run 3 · cuda fp16 · b1"), std::nullopt,
                                        QString::fromStdString(mnv2::ncu_permission_message())};
    page.model()->setColumns({cuda, cudnn, refused});
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QVERIFY(!page.grab().isNull());
    const QAbstractItemModel* m = page.view()->model();
    QCOMPARE(m->columnCount(), 3);
    QCOMPARE(m->rowCount(), static_cast<int>(DeepDiveModel::RowCount));
    QCOMPARE(m->headerData(1, Qt::Horizontal).toString(), QStringLiteral("run 2 · cudnn fp16 · b8"));
    const auto cell = [&](DeepDiveModel::Row row, int column) { return m->index(row, column).data().toString(); };
    // The figures of ID 1 of each raw CSV, read by hand (tests/unit/test_deep_dive.cpp states them).
    QCOMPARE(cell(DeepDiveModel::Step, 0),
             QStringLiteral("Conv2d 21 + ReLU6 22 + Conv2d 23 + ReLU6 24 + Conv2d 25 + ResidualAdd 26"));
    QCOMPARE(cell(DeepDiveModel::Step, 1), QStringLiteral("Conv2d 21 + ReLU6 22"));
    QVERIFY2(cell(DeepDiveModel::Layers, 1).startsWith(QStringLiteral("21 ")),
             qPrintable(cell(DeepDiveModel::Layers, 1)));
    QCOMPARE(cell(DeepDiveModel::Measured, 0), QStringLiteral("15.21 µs (cuda_event)"));
    QCOMPARE(cell(DeepDiveModel::Roofline, 0), QStringLiteral("12.50 FLOP/B, 340.0 GFLOP/s"));
    QCOMPARE(cell(DeepDiveModel::NcuDuration, 0), QStringLiteral("14.82 µs"));
    QCOMPARE(cell(DeepDiveModel::NcuDuration, 1), QStringLiteral("6.94 µs"));
    QCOMPARE(cell(DeepDiveModel::SmThroughput, 0), QStringLiteral("26.8 %"));
    QCOMPARE(cell(DeepDiveModel::SmThroughput, 1), QStringLiteral("12.9 %"));
    QCOMPARE(cell(DeepDiveModel::AchievedOccupancy, 0), QStringLiteral("19.6 %"));
    QCOMPARE(cell(DeepDiveModel::TheoreticalOccupancy, 1), QStringLiteral("12.5 %"));
    QCOMPARE(cell(DeepDiveModel::OccupancyLimiter, 0), QStringLiteral("registers (2 blocks/SM)"));
    QCOMPARE(cell(DeepDiveModel::Stall1, 0), QStringLiteral("barrier 3.49"));
    QCOMPARE(cell(DeepDiveModel::Stall1, 1), QStringLiteral("wait 0.96"));
    QCOMPARE(cell(DeepDiveModel::DramBytes, 0), QStringLiteral("491.3 kB"));
    QCOMPARE(cell(DeepDiveModel::L2Bytes, 0), QStringLiteral("10.81 MB"));  // 337,964 sectors x 32
    QCOMPARE(cell(DeepDiveModel::L1Bytes, 0), QStringLiteral("10.68 MB"));  // (308,544 + 25,088) sectors x 32
    QCOMPARE(cell(DeepDiveModel::HmmaPipe, 0), QStringLiteral("1.10 %"));
    QCOMPARE(cell(DeepDiveModel::HmmaPipe, 1), QStringLiteral("1.61 %"));
    QCOMPARE(cell(DeepDiveModel::GmmaPipe, 0), QStringLiteral("0.00 %"));
    QCOMPARE(cell(DeepDiveModel::Kernels, 0), QStringLiteral("void unnamed>::fused_block_kernel<2, 1>"));
    QVERIFY2(cell(DeepDiveModel::Advice, 0).startsWith(QStringLiteral("OPT HighPipeUtilization")),
             qPrintable(cell(DeepDiveModel::Advice, 0)));
    // The failed run: its one line, and nothing else made up.
    QCOMPARE(cell(DeepDiveModel::Status, 2), QString::fromStdString(mnv2::ncu_permission_message()));
    QVERIFY(cell(DeepDiveModel::SmThroughput, 2).isEmpty());
    // Every row has its name and tool-tip.
    for (int r = 0; r < DeepDiveModel::RowCount; ++r) {
      QVERIFY(!m->headerData(r, Qt::Vertical).toString().isEmpty());
      QVERIFY(!m->headerData(r, Qt::Vertical, Qt::ToolTipRole).toString().isEmpty());
    }
  }

  // Through the job's thread and the engine's study: a dive that cannot run shows why, in one line.
  void aDiveThatCannotRunSaysWhyInOneLine() {
    EnvGuard cli("MNV2_CLI");
    qputenv("MNV2_CLI", MNV2_CLI_PATH);
    LayerSelection selection;
    ReportCatalog catalog;
    DeepDivePage page(&catalog, &selection);
    QVERIFY(!page.diveInto({}));
    QVERIFY2(page.message().contains(QStringLiteral("No layer is selected")), qPrintable(page.message()));
    selection.setCurrentLayer(1);
    QVERIFY(!page.diveInto({}));
    QVERIFY2(page.message().contains(QStringLiteral("No run is shown")), qPrintable(page.message()));
    const int cuda = catalog.addRun(
        {std::make_shared<const mnv2::RunReport>(syntheticReport(weightlessTopology(), "cuda", 1000.0, 0.1, true))});
    const int cpu = catalog.addRun(
        {std::make_shared<const mnv2::RunReport>(syntheticReport(weightlessTopology(), "cpu", 1000.0, 0.1, false))});
    // The stand-in ncu answers as one without permission for the counters does.
    QTemporaryDir dir;
    const QString ncu = dir.filePath(QStringLiteral("ncu"));
    {
      QFile f(ncu);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(("#!/bin/sh\nexec '" + kData + "/fake-ncu.sh' perm none '" + dir.filePath(QStringLiteral("log")) +
               "' \"$@\"\n")
                  .toUtf8());
      f.close();
      f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    QSignalSpy done(&page, &DeepDivePage::diveFinished);
    QVERIFY(page.diveInto({cuda, cpu}, ncu));
    QVERIFY(page.isRunning());
    QVERIFY(done.wait(60000));
    QVERIFY(!page.isRunning());
    const QAbstractItemModel* m = page.view()->model();
    QCOMPARE(m->columnCount(), 2);
    const QString first = m->index(DeepDiveModel::Status, 0).data().toString();
    if (mnv2::make_backend("cuda")->availability().available)
      QCOMPARE(first, QString::fromStdString(mnv2::ncu_permission_message()));
    else
      QVERIFY2(first.startsWith(QStringLiteral("no deep dive here: the cuda backend cannot run on this machine (")),
               qPrintable(first));
    const QString second = m->index(DeepDiveModel::Status, 1).data().toString();
    QVERIFY2(second.contains(QStringLiteral("launches no GPU kernels")), qPrintable(second));
    for (const QString& s : {first, second}) QVERIFY2(!s.contains(QLatin1Char('\n')), qPrintable(s));
  }
};

MNV2_UI_SUITE(DeepDivePageTest);

}  // namespace mnv2::ui::test

#include "test_deep_dive_page.moc"
