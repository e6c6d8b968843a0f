// The Roofline & memory page: points for every step with work, the roof when ceilings are given, the
// memory table, and the Nsight Compute command of the selected layer (the run's own step name, fused or not).
#include <QLineEdit>
#include <QTableWidget>
#include <QtTest>

#include "models/layer_selection.h"
#include "ui_test_support.h"
#include "widgets/roofline_page.h"

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

  void ncuCommandNamesTheStepOfTheSelectedLayer() {
    LayerSelection selection;
    RooflinePage page(&selection);
    page.setReport(report("cudnn"));
    selection.setCurrentLayer(1);  // a ReLU6 fused into step "fused 0"
    const QString cmd = page.ncuCommand();
    QVERIFY2(cmd.startsWith(QStringLiteral("ncu --nvtx --nvtx-include 'fused 0/' --set full")), qPrintable(cmd));
    QVERIFY2(cmd.contains(QStringLiteral(" profile --backend cudnn --model /models/m.onnx --batch 1 --input-size 224x224")),
             qPrintable(cmd));
    QVERIFY2(cmd.contains(QStringLiteral("/mnv2 profile")), qPrintable(cmd));
    page.setReport(report("cpu"));
    QVERIFY(page.ncuCommand().isEmpty());  // the cpu backend launches no kernels
  }
};

MNV2_UI_SUITE(RooflinePageTest);

}  // namespace mnv2::ui::test

#include "test_roofline_page.moc"
