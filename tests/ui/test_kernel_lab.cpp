// The Kernel lab page against a fake `mnv2 lab` (tests/ui/fake_mnv2_lab.sh, through MNV2_CLI) that writes the
// protocol's result files: compile errors marked at their lines, the failing layer and element in the check
// table, the per-layer chart's bars and values, the history of versions, a crashing kernel, a missing CLI,
// templates, Cancel, a result of another version; the result reader on its own; the page in the window.
#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextLayout>
#include <QToolButton>
#include <QtTest>
#include <cmath>
#include <optional>

#include "lab_process.h"
#include "mnv2/lab.h"
#include "models/lab_result_model.h"
#include "ui_test_support.h"
#include "widgets/code_editor.h"
#include "widgets/kernel_lab_page.h"
#include "widgets/main_window.h"

namespace mnv2::ui::test {

using mnv2::ui::test::EnvGuard;

namespace {

constexpr int kJobMs = 20000;

QString fakeCli() { return QStringLiteral(MNV2_TEST_DATA_DIR "/../ui/fake_mnv2_lab.sh"); }

QByteArray minimalResult(const QString& extra = {}) {
  return QStringLiteral(R"({"format": "mnv2.lab", "version": 1, "slot": "depthwise", "status": "passed",
                            "message": "ok", "layers": []%1})")
      .arg(extra)
      .toUtf8();
}

// Restores an environment variable when the test ends, however it ends.
}  // namespace

class KernelLabTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir m_dir;
  std::unique_ptr<EnvGuard> m_cli;
  std::unique_ptr<EnvGuard> m_args;

  QString argsFile() const { return m_dir.filePath(QStringLiteral("args.txt")); }
  QStringList calls() const {
    QFile f(argsFile());
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  }

  // Runs one job on `page` and waits for it; the page's finished(ok) argument.
  static bool job(KernelLabPage& page, bool (KernelLabPage::*start)()) {
    QSignalSpy finished(&page, &KernelLabPage::finished);
    if (!(page.*start)()) {
      qWarning("the job did not start: %s", qPrintable(page.statusText()));
      return false;
    }
    if (!finished.wait(kJobMs)) {
      qWarning("the job did not end: %s", qPrintable(page.statusText()));
      return false;
    }
    return finished.first().at(0).toBool();
  }

  static void setSource(KernelLabPage& page, const QString& source) { page.editor()->setPlainText(source); }

  static QCPBars* bars(QCustomPlot* plot, int i) { return qobject_cast<QCPBars*>(plot->plottable(i)); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFileInfo(fakeCli()).isExecutable(), qPrintable(fakeCli()));
    m_cli = std::make_unique<EnvGuard>("MNV2_CLI");
    m_args = std::make_unique<EnvGuard>("FAKE_LAB_ARGS");
  }
  void init() {
    qputenv("MNV2_CLI", fakeCli().toUtf8());
    qputenv("FAKE_LAB_ARGS", argsFile().toUtf8());
    QFile::remove(argsFile());
  }
  void cleanupTestCase() {
    m_args.reset();
    m_cli.reset();
  }

  // ---- the result reader ----

  void readerChecksFormatVersionAndTypes() {
    QString error;
    QVERIFY(parseLabResult(minimalResult(), &error).has_value());
    QVERIFY(!parseLabResult("not json", &error));
    QVERIFY2(error.contains(QStringLiteral("not JSON")), qPrintable(error));
    QVERIFY(!parseLabResult(R"({"format": "mnv2.report", "version": 1})", &error));
    QVERIFY2(error.contains(QStringLiteral("\"mnv2.report\"")) && error.contains(QStringLiteral("mnv2.lab version 1")),
             qPrintable(error));
    QVERIFY(!parseLabResult(R"({"format": "mnv2.lab", "version": 2, "status": "passed"})", &error));
    QVERIFY2(error.contains(QStringLiteral("version 2")) && error.contains(QStringLiteral("reads version 1")),
             qPrintable(error));
    QVERIFY(parseLabResult(minimalResult().replace("\"passed\"", "\"error\""), &error));
    QVERIFY(!parseLabResult(minimalResult().replace("\"passed\"", "\"fine\""), &error));
    QVERIFY2(error.contains(QStringLiteral("status 'fine'")), qPrintable(error));
    // A field of the wrong type is named with its path.
    QVERIFY(!parseLabResult(QStringLiteral(R"({"format": "mnv2.lab", "version": 1, "slot": "depthwise",
        "status": "check_failed", "message": "m", "layers": [{"index": 2, "check": {"passed": "no"}}]})")
                                .toUtf8(),
                            &error));
    QVERIFY2(error.contains(QStringLiteral("layers[0].check.passed")), qPrintable(error));
    QVERIFY(!parseLabResult(minimalResult(QStringLiteral(R"(, "compile": {"ok": true, "diagnostics": [{"line": "x",
        "severity": "error", "message": "m"}]})")),
                            &error));
    QVERIFY2(error.contains(QStringLiteral("compile.diagnostics[0].line")), qPrintable(error));
    // NaN and Inf reach the table (JSON has neither: null and strings stand for them).
    const auto r = parseLabResult(QStringLiteral(R"({"format": "mnv2.lab", "version": 1, "slot": "depthwise",
        "status": "check_failed", "message": "m", "layers": [{"index": 7, "check": {"passed": false,
        "first_failure": {"flat_index": 9, "coords": [0, 1, 2, 3], "expected": 1.5, "got": "nan"}},
        "user_us": null}]})")
                                      .toUtf8(),
                                  &error);
    QVERIFY2(r.has_value(), qPrintable(error));
    QVERIFY(std::isnan(r->layers[0].firstFailure->got));
    QCOMPARE(r->firstFailingLayer()->index, 7);
    QVERIFY(!r->timed());
  }

  void slotsAndLayers() {
    const auto& topology = mainModel().layers;
    QCOMPARE(static_cast<int>(labSlotLayers(QStringLiteral("depthwise"), topology).size()), 17);
    QCOMPARE(labSlotLayers(QStringLiteral("stem"), topology), std::vector<int>{0});
    QCOMPARE(labSlotLayers(QStringLiteral("pool"), topology).size(), size_t{1});
    QCOMPARE(labSlotLayers(QStringLiteral("classifier"), topology).back(), static_cast<int>(topology.size()) - 1);
    for (int l : labSlotLayers(QStringLiteral("pointwise"), topology))
      QVERIFY(topology[static_cast<size_t>(l)].conv.pointwise());
    QVERIFY(labSlotRefusal(QStringLiteral("depthwise")).isEmpty());
    QVERIFY(!labSlotRefusal(QStringLiteral("block")).isEmpty());
    // The page asks the engine's lab (the slots `mnv2 lab` knows, their refusals and their layers): never its own.
    QCOMPARE(labSlots().size(), static_cast<qsizetype>(mnv2::lab_slots().size()));
    for (const mnv2::LabSlot& s : mnv2::lab_slots()) {
      const QString name = QString::fromStdString(s.name);
      QCOMPARE(labSlotRefusal(name).isEmpty(), s.why_not.empty());
      if (!s.why_not.empty()) QVERIFY(labSlotRefusal(name).contains(QString::fromStdString(s.why_not)));
      QCOMPARE(labSlotLayers(name, topology), mnv2::lab_slot_layers(mainModel(), s.name));
    }
    QString error;
    QCOMPARE(*parseLabLayers(QStringLiteral(" 7, 2,7 "), &error), (std::vector<int>{2, 7}));
    QVERIFY(!parseLabLayers(QStringLiteral("2,x"), &error));
    QVERIFY(error.contains(QStringLiteral("'x'")));
  }

  void cliLookup() {
    QString why;
    QCOMPARE(findLabCli(&why), QFileInfo(fakeCli()).absoluteFilePath());
    qputenv("MNV2_CLI", "/nonexistent/mnv2");
    QVERIFY(findLabCli(&why).isEmpty());
    QVERIFY2(why.contains(QStringLiteral("/nonexistent/mnv2")), qPrintable(why));
    LabProcess::Request r;
    r.action = LabProcess::Action::Compile;
    r.slot = QStringLiteral("depthwise");
    r.kernelFile = QStringLiteral("/k/my.cu");
    r.layers = QStringLiteral("2,7");
    const QStringList args = LabProcess::arguments(r, QStringLiteral("/t/r.json"));
    QVERIFY(args.contains(QStringLiteral("--compile-only")));
    QCOMPARE(args.at(args.indexOf(QStringLiteral("--layers")) + 1), QStringLiteral("2,7"));
    QCOMPARE(args.at(args.indexOf(QStringLiteral("--json")) + 1), QStringLiteral("/t/r.json"));
    QVERIFY(!args.contains(QStringLiteral("--model")));  // mnv2's own lookup unless the app has a model file
    QVERIFY(!args.contains(QStringLiteral("--arch")));   // the GPU's own unless chosen
    r.arch = QStringLiteral("sm_90");
    QCOMPARE(LabProcess::arguments(r, {}).mid(LabProcess::arguments(r, {}).indexOf(QStringLiteral("--arch")), 2),
             (QStringList{QStringLiteral("--arch"), QStringLiteral("sm_90")}));
    QCOMPARE(args.at(args.indexOf(QStringLiteral("--device")) + 1), QStringLiteral("0"));  // the run settings' GPU
    r.device = 1;
    QCOMPARE(LabProcess::arguments(r, {}).at(LabProcess::arguments(r, {}).indexOf(QStringLiteral("--device")) + 1),
             QStringLiteral("1"));
    r.model = QStringLiteral("/m/mobilenet.onnx");
    const QStringList withModel = LabProcess::arguments(r, QStringLiteral("/t/r.json"));
    QCOMPARE(withModel.at(withModel.indexOf(QStringLiteral("--model")) + 1), QStringLiteral("/m/mobilenet.onnx"));
    r.action = LabProcess::Action::Check;
    QVERIFY(LabProcess::arguments(r, {}).contains(QStringLiteral("--no-time")));
    r.action = LabProcess::Action::Run;
    const QStringList run = LabProcess::arguments(r, {});
    QVERIFY(!run.contains(QStringLiteral("--no-time")) && !run.contains(QStringLiteral("--compile-only")));
  }

  // ---- the page ----

  void blockSlotShownDisabled() {
    KernelLabPage page;
    auto* model = qobject_cast<QStandardItemModel*>(page.slotCombo()->model());
    QVERIFY(model);
    const int block = page.slotCombo()->findData(QStringLiteral("block"), Qt::UserRole);
    QVERIFY(block >= 0);
    QVERIFY(!model->item(block)->isEnabled());
    QVERIFY(model->item(block)->toolTip().contains(QStringLiteral("planner")));
    QVERIFY(!page.selectSlot(QStringLiteral("block")));
    QVERIFY(page.selectSlot(QStringLiteral("pool")));
    QCOMPARE(page.slot(), QStringLiteral("pool"));
  }

  // The layer chooser offers the slot's layers of the loaded model; choosing toggles them in the list.
  void layerChooserFollowsTheSlot() {
    KernelLabPage page;
    page.setTopology(mainModel().layers);
    auto* button = page.findChild<QToolButton*>(QStringLiteral("labLayerMenu"));
    QVERIFY(button && button->menu());
    auto layerActions = [&] {
      QList<QAction*> out;
      for (QAction* a : button->menu()->actions())
        if (!a->isSeparator() && !a->text().startsWith(QStringLiteral("All"))) out << a;
      return out;
    };
    QCOMPARE(layerActions().size(), 17);  // MobileNetV2's depthwise convolutions
    const std::vector<int> dw = labSlotLayers(QStringLiteral("depthwise"), mainModel().layers);
    layerActions().at(2)->trigger();
    layerActions().at(0)->trigger();
    auto* layers = page.findChild<QLineEdit*>(QStringLiteral("labLayers"));
    QCOMPARE(layers->text(), QStringLiteral("%1,%2").arg(dw[0]).arg(dw[2]));
    layerActions().at(0)->trigger();  // again: off
    QCOMPARE(layers->text(), QString::number(dw[2]));
    QVERIFY(page.selectSlot(QStringLiteral("classifier")));
    QVERIFY(layers->text().isEmpty());  // another slot's layers would be refused
    QCOMPARE(layerActions().size(), 1);
  }

  void templateFillsTheEditor() {
    KernelLabPage page;
    page.setConfirmations(false);
    QVERIFY(page.selectSlot(QStringLiteral("pointwise")));
    QVERIFY(job(page, &KernelLabPage::newFromTemplate));
    QVERIFY2(page.editor()->toPlainText().contains(QStringLiteral("__global__ void my_pointwise_kernel")),
             qPrintable(page.editor()->toPlainText()));
    QVERIFY(!page.isModified());
    QVERIFY(calls().last().startsWith(QStringLiteral("lab --template pointwise --precision fp32")));
    QCOMPARE(page.history()->rowCount(), 0);  // a template is no version until it runs
  }

  void compileErrorMarksTheLines() {
    KernelLabPage page;
    QString src;
    for (int i = 1; i <= 12; ++i)
      src += i == 1   ? QStringLiteral("// FAKE_COMPILE_ERROR\n")
             : i == 4 ? QStringLiteral("  float y = ERROR_HERE;\n")
             : i == 6 ? QStringLiteral("  int WARN_HERE = 0;\n")
             : i == 9 ? QStringLiteral("ERROR_HERE\n")
                      : QStringLiteral("  // line %1\n").arg(i);
    setSource(page, src);
    QVERIFY(page.setArch(QStringLiteral("sm_90")));  // as on a machine without a GPU
    QVERIFY(!page.setArch(QStringLiteral("sm_1")));
    QVERIFY(job(page, &KernelLabPage::compile));
    QVERIFY(calls().last().contains(QStringLiteral("--compile-only")));
    QVERIFY(calls().last().contains(QStringLiteral("--arch sm_90")));
    QVERIFY2(page.statusText().contains(QStringLiteral("compile error")), qPrintable(page.statusText()));
    // The list: the two errors and the warning of the editor's file at their lines, and the header's note.
    QListWidget* list = page.diagnosticsList();
    QCOMPARE(list->count(), 4);
    QCOMPARE(list->item(0)->data(Qt::UserRole).toInt(), 4);
    QCOMPARE(list->item(1)->data(Qt::UserRole).toInt(), 9);
    QCOMPARE(list->item(2)->data(Qt::UserRole).toInt(), 6);
    QCOMPARE(list->item(3)->data(Qt::UserRole).toInt(), 0);  // in the slot header: no line of the editor
    QVERIFY(list->item(0)->text().contains(QStringLiteral("line 4:13")));
    // The editor: markers and tinted lines at 4, 9 and 6, the messages as the line's tool-tip.
    QCOMPARE(page.editor()->markerLines(), (std::vector<int>{4, 9, 6}));
    std::vector<int> tinted = page.editor()->highlightedLines();
    std::sort(tinted.begin(), tinted.end());
    QCOMPARE(tinted, (std::vector<int>{4, 6, 9}));
    QVERIFY(page.editor()->markerText(4).contains(QStringLiteral("ERROR_HERE")));
    QVERIFY(page.editor()->markerText(6).startsWith(QStringLiteral("warning")));
    QVERIFY(page.editor()->markerText(5).isEmpty());
    // The first error has the cursor; a click on the second moves it there.
    QCOMPARE(page.editor()->currentLine(), 4);
    Q_EMIT list->itemClicked(list->item(1));
    QCOMPARE(page.editor()->currentLine(), 9);
    // Markers move with the text: two lines inserted at the top push them down.
    QTextCursor c(page.editor()->document());
    c.insertText(QStringLiteral("\n\n"));
    QCOMPARE(page.editor()->markerLines(), (std::vector<int>{6, 11, 8}));
    QCOMPARE(page.history()->rowCount(), 1);
    QCOMPARE(page.history()->versions().back().status, QStringLiteral("compile_error"));
  }

  void checkFailureShowsTheElement() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_WRONG\n__global__ void k() {}\n"));
    page.setLayers(QStringLiteral("3,7,11"));
    QVERIFY(job(page, &KernelLabPage::check));
    QVERIFY(calls().last().contains(QStringLiteral("--no-time")));
    QVERIFY(calls().last().contains(QStringLiteral("--layers 3,7,11")));
    QVERIFY2(page.statusText().contains(QStringLiteral("check failed")), qPrintable(page.statusText()));
    QAbstractItemModel* m = page.checkTable()->model();
    QCOMPARE(m->rowCount(), 3);
    const int row = 1;  // layer 7, the second chosen
    QCOMPARE(m->index(row, LabLayerTableModel::Layer).data().toInt(), 7);
    QCOMPARE(m->index(row, LabLayerTableModel::Check).data().toString(), QStringLiteral("FAIL"));
    QCOMPARE(m->index(row, LabLayerTableModel::FirstFailure).data().toString(), QStringLiteral("[0,5,3,4]"));
    QCOMPARE(m->index(row, LabLayerTableModel::Expected).data().toString(), QStringLiteral("0.5"));
    QCOMPARE(m->index(row, LabLayerTableModel::Got).data().toString(), QStringLiteral("0"));
    QCOMPARE(m->index(row, 0).data(LabLayerTableModel::PassedRole).toBool(), false);
    QCOMPARE(m->index(row, LabLayerTableModel::Check).data(Qt::ForegroundRole).value<QColor>(),
             labStatusColor(QStringLiteral("check_failed")));
    QVERIFY(m->index(row, 0).data(Qt::BackgroundRole).isValid());
    QCOMPARE(m->index(0, LabLayerTableModel::Check).data().toString(), QStringLiteral("pass"));
    QVERIFY(!m->index(0, 0).data(Qt::BackgroundRole).isValid());
    QCOMPARE(page.checkTable()->currentIndex().row(), row);  // the failing row is selected and in front
    QVERIFY(page.checkTable()->isVisibleTo(&page));
    QCOMPARE(page.chart()->plottableCount(), 0);  // a failing kernel is not timed
    QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  }

  void runDrawsTheChart() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_US=20\n__global__ void k() {}\n"));
    page.setLayers(QStringLiteral("2,5,8"));
    QVERIFY(job(page, &KernelLabPage::run));
    const QString args = calls().last();
    QVERIFY(!args.contains(QStringLiteral("--no-time")) && !args.contains(QStringLiteral("--compile-only")));
    QVERIFY2(page.statusText().contains(QStringLiteral("passed")), qPrintable(page.statusText()));
    QCustomPlot* chart = page.chart();
    QCOMPARE(chart->plottableCount(), 3);
    const double expected[3][3] = {{20.2, 20.5, 20.8}, {8.2, 8.5, 8.8}, {12.2, 12.5, 12.8}};
    for (int s = 0; s < 3; ++s) {
      QCPBars* b = bars(chart, s);
      QVERIFY(b);
      QCOMPARE(b->data()->size(), 3);
      for (int k = 0; k < 3; ++k) {
        QCOMPARE(b->data()->at(k)->key, static_cast<double>(k));
        QVERIFY2(std::fabs(b->data()->at(k)->value - expected[s][k]) < 1e-9,
                 qPrintable(QStringLiteral("series %1 bar %2: %3").arg(s).arg(k).arg(b->data()->at(k)->value)));
      }
    }
    QVERIFY(bars(chart, 0)->name().startsWith(QStringLiteral("yours")));
    QVERIFY(bars(chart, 1)->name().startsWith(QStringLiteral("ours")));
    QVERIFY(bars(chart, 2)->name().startsWith(QStringLiteral("cuDNN")));
    QVERIFY(bars(chart, 0)->barsGroup());
    const QString e2e = page.endToEndLabel()->text();
    QVERIFY2(e2e.contains(QStringLiteral("0.310 ms")) && e2e.contains(QStringLiteral("0.270 ms")) &&
                 e2e.contains(QStringLiteral("0.610 ms")),
             qPrintable(e2e));
    QVERIFY(page.statusText().contains(QStringLiteral("61.50 µs")));  // yours, the sum of 20.2 + 20.5 + 20.8
    QCOMPARE(page.checkTable()->model()->index(0, LabLayerTableModel::UserUs).data().toString(),
             QStringLiteral("20.2"));
  }

  void historyKeepsVersionsAndRestores() {
    KernelLabPage page;
    const QString v1 = QStringLiteral("// FAKE_US=30\n__global__ void k() { /* naive */ }\n");
    const QString v2 = QStringLiteral("// FAKE_US=20\n__global__ void k() { /* tiled */ }\n");
    setSource(page, v1);
    QVERIFY(job(page, &KernelLabPage::run));
    QCOMPARE(page.history()->rowCount(), 1);
    setSource(page, v2);
    QVERIFY(job(page, &KernelLabPage::run));
    QCOMPARE(page.history()->rowCount(), 2);
    // The same source again: the newest version is updated, not repeated.
    QVERIFY(job(page, &KernelLabPage::check));
    QCOMPARE(page.history()->rowCount(), 2);
    const auto& versions = page.history()->versions();
    QCOMPARE(versions[0].source, v1);
    QCOMPARE(versions[1].source, v2);
    QCOMPARE(versions[1].action, QStringLiteral("check"));
    QVERIFY(std::fabs(*versions[0].totalUserUs - (30.2 + 30.5 + 30.8)) < 1e-9);
    QVERIFY(std::fabs(*versions[1].totalUserUs - (20.2 + 20.5 + 20.8)) < 1e-9);  // kept from the run
    // The story as a chart: one point per timed version, ours and cuDNN as lines.
    QCustomPlot* story = page.historyChart();
    QCOMPARE(story->graphCount(), 1);
    QCOMPARE(story->graph(0)->data()->size(), 2);
    QVERIFY(story->graph(0)->data()->at(0)->value > story->graph(0)->data()->at(1)->value);
    QCOMPARE(story->itemCount(), 2);
    // A third, broken version, then back to the first.
    setSource(page, QStringLiteral("// FAKE_COMPILE_ERROR\nERROR_HERE\n"));
    QVERIFY(job(page, &KernelLabPage::compile));
    QCOMPARE(page.history()->rowCount(), 3);
    QVERIFY(page.restoreVersion(0));
    QCOMPARE(page.editor()->toPlainText(), v1);
    QCOMPARE(page.chart()->plottableCount(), 3);  // the version's result is shown with it
    QVERIFY(page.editor()->markerLines().empty());
    QVERIFY(page.showVersion(2));
    QVERIFY(page.editor()->markerLines().empty());  // v3's error is not marked in v1's text
    QVERIFY(page.restoreVersion(2));
    QCOMPARE(page.editor()->markerLines(), std::vector<int>{2});
    QAbstractItemModelTester tester(page.history(), QAbstractItemModelTester::FailureReportingMode::QtTest);
  }

  // Issue 35, defect 9: a request the real `mnv2 lab` refuses (exit 2) shows the CLI's reason, not only its
  // "(run 'mnv2 --help' for usage)" line.
  void aRefusedRequestShowsTheClisReason() {
    qputenv("MNV2_CLI", QByteArrayLiteral(MNV2_CLI_PATH));
    const QString kernel = m_dir.filePath(QStringLiteral("refused.cu"));
    {
      QFile f(kernel);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("__global__ void k() {}\n");
    }
    LabProcess process;
    std::optional<LabProcess::Outcome> outcome;
    connect(&process, &LabProcess::finished, this, [&](const LabProcess::Outcome& o) { outcome = o; });
    LabProcess::Request r;
    r.action = LabProcess::Action::Compile;
    r.slot = QStringLiteral("depthwise");
    r.kernelFile = kernel;
    r.batch = 0;  // out of the CLI's range: a usage error
    QVERIFY(process.start(r));
    QVERIFY(QTest::qWaitFor([&] { return outcome.has_value(); }, kJobMs));
    QCOMPARE(outcome->exitCode, 2);
    QVERIFY2(outcome->error.contains(QStringLiteral("--batch must be in 1..65536, got 0")), qPrintable(outcome->error));
    QVERIFY2(!outcome->error.contains(QStringLiteral("--help")), qPrintable(outcome->error));
  }

  // Issue 35, defect 9: a compile-only result is said to be compiled only, not "checked".
  void aCompileOnlyResultIsLabelledCompiled() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_US=20\n__global__ void k() {}\n"));
    QVERIFY(job(page, &KernelLabPage::compile));
    QString empty;
    for (int i = 0; i < page.chart()->itemCount(); ++i)
      if (auto* t = qobject_cast<QCPItemText*>(page.chart()->item(i)); t && t->objectName() == "labEmpty")
        empty = t->text();
    QVERIFY2(empty.contains(QStringLiteral("Compiled only")), qPrintable(empty));
    QVERIFY2(!empty.contains(QStringLiteral("Checked")), qPrintable(empty));
  }

  void crashedKernelIsReported() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_CRASH\n"));
    QVERIFY(job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("crashed: illegal address")), qPrintable(page.statusText()));
    QVERIFY(!page.isRunning());
    QCOMPARE(page.history()->versions().back().status, QStringLiteral("crashed"));
    QVERIFY(page.outputView()->toPlainText().contains(QStringLiteral("checking layer 2")));
    // Exit 4 without a result file: still said, still a version of this source.
    setSource(page, QStringLiteral("// FAKE_NO_RESULT_CRASH\n"));
    QVERIFY(!job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("crashed")), qPrintable(page.statusText()));
    QVERIFY2(page.statusText().contains(QStringLiteral("signal 11")), qPrintable(page.statusText()));
    QCOMPARE(page.history()->rowCount(), 2);
    // mnv2 lab itself dying on a signal: said as such, and no version (nothing is known of the kernel).
    setSource(page, QStringLiteral("// FAKE_CLI_SEGV\n"));
    QVERIFY(!job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("mnv2 lab itself crashed")), qPrintable(page.statusText()));
    QCOMPARE(page.history()->rowCount(), 2);
    // The page still runs the next kernel.
    setSource(page, QStringLiteral("// fine\n"));
    QVERIFY(job(page, &KernelLabPage::run));
    QVERIFY(page.statusText().contains(QStringLiteral("passed")));
  }

  void missingCliIsSaid() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// fine\n"));
    qputenv("MNV2_CLI", m_dir.filePath(QStringLiteral("no-mnv2-here")).toUtf8());
    QVERIFY(!job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("MNV2_CLI is set to")), qPrintable(page.statusText()));
    QCOMPARE(page.history()->rowCount(), 0);
    // Unset, with nothing on the PATH either.
    EnvGuard path("PATH");
    qunsetenv("MNV2_CLI");
    qputenv("PATH", m_dir.path().toUtf8());
    QVERIFY(!job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("mnv2 command-line program was not found")),
             qPrintable(page.statusText()));
    QVERIFY(!page.isRunning());
  }

  void resultOfAnotherVersionIsRefused() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_BAD_FORMAT\n"));
    QVERIFY(!job(page, &KernelLabPage::run));
    QVERIFY2(page.statusText().contains(QStringLiteral("version 2")) &&
                 page.statusText().contains(QStringLiteral("reads version 1")),
             qPrintable(page.statusText()));
  }

  void cancelEndsTheProcess() {
    KernelLabPage page;
    setSource(page, QStringLiteral("// FAKE_SLEEP\n"));
    QSignalSpy finished(&page, &KernelLabPage::finished);
    QVERIFY(page.run());
    QVERIFY(page.isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(page.outputView()->toPlainText().contains(QStringLiteral("compiling")), kJobMs);
    QElapsedTimer t;
    t.start();
    page.cancel();
    QVERIFY(finished.wait(kJobMs));
    QVERIFY(t.elapsed() < 10000);
    QCOMPARE(finished.first().at(0).toBool(), false);
    QVERIFY(!page.isRunning());
    QCOMPARE(page.statusText(), QStringLiteral("Cancelled."));
  }

  void openSaveAndModifiedMarker() {
    KernelLabPage page;
    page.setConfirmations(false);
    const QString path = m_dir.filePath(QStringLiteral("my_dw.cu"));
    page.editor()->insertPlainText(QStringLiteral("__global__ void k() {}\n"));  // typed: an edit
    QVERIFY(page.isModified());
    QVERIFY(page.saveAs(path));
    QVERIFY(!page.isModified());
    QCOMPARE(page.filePath(), path);
    QSignalSpy modified(&page, &KernelLabPage::modifiedChanged);
    page.editor()->appendPlainText(QStringLiteral("// more"));
    QCOMPARE(modified.count(), 1);
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("labFile"))->text().endsWith(QStringLiteral("*")));
    // An edited file compiles from a scratch copy of the same name; a saved one where it is.
    QVERIFY(job(page, &KernelLabPage::check));
    QVERIFY(!calls().last().contains(QStringLiteral("--kernel ") + path));
    QVERIFY(calls().last().contains(QStringLiteral("/my_dw.cu")));
    QVERIFY(page.save());
    QVERIFY(job(page, &KernelLabPage::check));
    QVERIFY(calls().last().contains(QStringLiteral("--kernel ") + path));
    KernelLabPage other;
    QVERIFY(other.openFile(path));
    QCOMPARE(other.editor()->toPlainText(), QStringLiteral("__global__ void k() {}\n\n// more"));
    QVERIFY(!other.openFile(m_dir.filePath(QStringLiteral("absent.cu"))));
  }

  void highlighterKnowsCuda() {
    QCOMPARE(CudaHighlighter::classify(QStringLiteral("__global__")), QStringLiteral("cuda"));
    QCOMPARE(CudaHighlighter::classify(QStringLiteral("threadIdx")), QStringLiteral("cuda"));
    QCOMPARE(CudaHighlighter::classify(QStringLiteral("float")), QStringLiteral("type"));
    QCOMPARE(CudaHighlighter::classify(QStringLiteral("for")), QStringLiteral("keyword"));
    QVERIFY(CudaHighlighter::classify(QStringLiteral("myVariable")).isEmpty());
    CodeEditor editor;
    editor.setPlainText(
        QStringLiteral("__shared__ float t; // for \"x\"\n/* a\n for */ int i = 42;\n#include <cuda_fp16.h>"));
    auto formatAt = [&](int blockNumber, int position) {
      const QTextBlock b = editor.document()->findBlockByNumber(blockNumber);
      for (const QTextLayout::FormatRange& r : b.layout()->formats())
        if (position >= r.start && position < r.start + r.length) return r.format;
      return QTextCharFormat();
    };
    const QColor cuda = formatAt(0, 2).foreground().color();
    const QColor type = formatAt(0, 12).foreground().color();
    const QColor comment = formatAt(0, 25).foreground().color();  // "for" inside the comment
    QVERIFY(cuda != type && type != comment && cuda != comment);
    QVERIFY(formatAt(0, 25).fontItalic());
    QCOMPARE(formatAt(1, 3).foreground().color(), comment);  // a /* */ comment over two lines
    QCOMPARE(formatAt(2, 1).foreground().color(), comment);
    QVERIFY(formatAt(2, 9).foreground().color() != comment);  // "int" after the comment's end
    QVERIFY(formatAt(2, 17).foreground().color().isValid());  // 42
    QVERIFY(formatAt(3, 1).foreground().color() != comment);  // #include
    QVERIFY(editor.lineNumberAreaWidth() > 0);
  }

  // ---- the page in the window ----

  void registeredInTheWindowWithShortcuts() {
    MainWindow::Options options;
    options.scripted = true;
    options.useSettings = false;
    MainWindow window(options);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* tabs = window.findChild<QTabWidget*>(QStringLiteral("tabs"));
    QVERIFY(tabs);
    QCOMPARE(tabs->tabText(tabs->indexOf(window.kernelLabPage())), QStringLiteral("Kernel lab"));
    QVERIFY(window.selectTab(QStringLiteral("lab")));
    QCOMPARE(tabs->currentWidget(), window.kernelLabPage());
    QCOMPARE(window.labAction(QStringLiteral("compile"))->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_B));
    QCOMPARE(window.labAction(QStringLiteral("run"))->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_R));
    QCOMPARE(window.labAction(QStringLiteral("save"))->shortcut(), QKeySequence(QKeySequence::Save));
    // Ctrl+S: the kernel on this page, the session elsewhere; never both (an ambiguous key fires neither).
    auto owners = [&] {
      int n = 0;
      for (QAction* a : window.findChildren<QAction*>())
        if (a->isEnabled() && a->shortcut() == QKeySequence(QKeySequence::Save)) ++n;
      return n;
    };
    QCOMPARE(owners(), 1);
    window.selectTab(QStringLiteral("topology"));
    QCOMPARE(owners(), 1);
    QVERIFY(window.labAction(QStringLiteral("save"))->shortcut().isEmpty());
    window.selectTab(QStringLiteral("lab"));
    // Ctrl+B compiles the editor's kernel, through the fake CLI.
    KernelLabPage* page = window.kernelLabPage();
    setSource(*page, QStringLiteral("// FAKE_COMPILE_ERROR\nERROR_HERE\n"));
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    page->editor()->setFocus();
    QSignalSpy finished(page, &KernelLabPage::finished);
    QTest::keySequence(&window, QKeySequence(Qt::CTRL | Qt::Key_B));
    QVERIFY(finished.wait(kJobMs));
    QCOMPARE(page->editor()->markerLines(), std::vector<int>{2});
    QVERIFY(calls().last().contains(QStringLiteral("--compile-only")));
    // Ctrl+R runs.
    setSource(*page, QStringLiteral("// fine\n"));
    QTest::keySequence(&window, QKeySequence(Qt::CTRL | Qt::Key_R));
    QVERIFY(finished.wait(kJobMs));
    QCOMPARE(page->chart()->plottableCount(), 3);
    QCOMPARE(page->history()->rowCount(), 2);
  }
};

MNV2_UI_SUITE(KernelLabTest);

}  // namespace mnv2::ui::test

#include "test_kernel_lab.moc"
