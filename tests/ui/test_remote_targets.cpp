// Remote targets in the app (issue 31): the Run-on chooser lists the targets file's targets and follows the file; a
// remote target turns off what runs here only (with the reason); a profile on a target that cannot be reached ends as
// the run's error in the engine's words, with no run added (a real ssh, no mock); the Targets dialog's form refuses
// what the engine refuses, beside the field; a report that ran on a target is labelled with it everywhere.
#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "mnv2/report.h"
#include "models/report_access.h"
#include "models/report_catalog.h"
#include "models/targets_model.h"
#include "run_controller.h"
#include "ui_test_support.h"
#include "widgets/accuracy_page.h"
#include "widgets/main_window.h"
#include "widgets/run_settings_panel.h"
#include "widgets/sweep_page.h"
#include "widgets/targets_dialog.h"
#include "widgets/timings_page.h"

using namespace mnv2::ui;

using mnv2::ui::test::EnvGuard;

namespace {

constexpr int kTimeoutMs = 120000;

// Restores an environment variable when the test ends, however it ends.
mnv2::remote::Target target(const std::string& name, const std::string& destination) {
  return mnv2::remote::target_from_destination(name, destination);
}

QStringList comboItems(const QComboBox* combo) {
  QStringList items;
  for (int i = 0; i < combo->count(); ++i) items << combo->itemText(i);
  return items;
}

}  // namespace

class RemoteTargetsTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir m_dir;
  QTemporaryDir m_runtime{QStringLiteral("/tmp/mnv2ui-XXXXXX")};  // short: ssh's control socket paths are bounded
  std::unique_ptr<EnvGuard> m_config, m_runtimeEnv;
  MainWindow* m_window = nullptr;

  QString targetsFile() const { return m_dir.filePath(QStringLiteral("config/mnv2-profiler/targets.json")); }
  void writeTargets(const std::vector<mnv2::remote::Target>& targets) const {
    mnv2::remote::write_targets(targetsFile().toStdString(), targets);
  }
  QComboBox* runOn() const { return m_window->runSettings()->runOnCombo(); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY(m_runtime.isValid());
    m_config = std::make_unique<EnvGuard>("XDG_CONFIG_HOME");
    m_runtimeEnv = std::make_unique<EnvGuard>("XDG_RUNTIME_DIR");
    qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toUtf8());
    qputenv("XDG_RUNTIME_DIR", m_runtime.path().toUtf8());
    mnv2::remote::Target slurm = target("cluster", "alice@login.example.org");
    slurm.slurm = mnv2::remote::SlurmLauncher{};
    slurm.slurm->partition = "gpu";
    slurm.slurm->gres = "gpu:h100:1";
    writeTargets({target("h200", "bob@gpu-box:2222"), slurm});

    MainWindow::Options options;
    options.useSettings = false;
    options.scripted = true;  // errors on stderr, no message boxes
    m_window = new MainWindow(options);
    m_window->resize(1280, 800);
    m_window->show();
    QVERIFY(test::startOnMainModel(*m_window, kTimeoutMs));
  }

  void cleanupTestCase() {
    delete m_window;
    m_runtimeEnv.reset();
    m_config.reset();
  }

  void chooserListsTheTargetsOfTheFile() {
    QAbstractItemModelTester tester(m_window->targets(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m_window->targets()->path(), targetsFile());
    QCOMPARE(comboItems(runOn()),
             (QStringList{QStringLiteral("This machine"), QStringLiteral("h200"), QStringLiteral("cluster")}));
    QCOMPARE(m_window->runSettings()->runTarget(), QString());
    // Each target's tool-tip says where it is and how it is reached.
    QVERIFY2(runOn()->itemData(2, Qt::ToolTipRole).toString().contains(QStringLiteral("srun --partition=gpu")),
             qPrintable(runOn()->itemData(2, Qt::ToolTipRole).toString()));

    // A target added by another program (`mnv2 targets add`) appears: as the chooser opens, at the latest.
    writeTargets({target("h200", "bob@gpu-box:2222"), target("a100", "carol@a100-box")});
    runOn()->showPopup();
    QVERIFY(comboItems(runOn()).contains(QStringLiteral("a100")));
    QVERIFY(!comboItems(runOn()).contains(QStringLiteral("cluster")));
    runOn()->hidePopup();
    // And while it stays closed, through the file's watcher.
    writeTargets({target("h200", "bob@gpu-box:2222"), target("a100", "carol@a100-box"), target("t4", "t4-box")});
    QTRY_VERIFY_WITH_TIMEOUT(comboItems(runOn()).contains(QStringLiteral("t4")), 10000);

    // The choice survives a re-read; a chosen target the file drops stays, marked, so that a run says what is wrong.
    m_window->runSettings()->setRunTarget(QStringLiteral("t4"));
    writeTargets({target("h200", "bob@gpu-box:2222")});
    m_window->targets()->reload();
    QCOMPARE(m_window->runSettings()->runTarget(), QStringLiteral("t4"));
    QVERIFY(runOn()->currentText().contains(QStringLiteral("not in the targets file")));
    m_window->runSettings()->setRunTarget(QString());
    QCOMPARE(runOn()->currentText(), QStringLiteral("This machine"));
  }

  void aRemoteTargetTurnsOffWhatRunsHereOnly() {
    auto* sweepRun = m_window->sweepPage()->findChild<QPushButton*>(QStringLiteral("sweepRun"));
    auto* evalRun = m_window->accuracyPage()->findChild<QPushButton*>(QStringLiteral("evalRun"));
    QVERIFY(sweepRun && evalRun);
    QVERIFY(sweepRun->isEnabled());
    m_window->runSettings()->setRunTarget(QStringLiteral("h200"));
    QVERIFY(!sweepRun->isEnabled());
    QVERIFY2(sweepRun->toolTip().contains(QStringLiteral("remote target 'h200'")), qPrintable(sweepRun->toolTip()));
    QVERIFY(!evalRun->isEnabled());
    QVERIFY(evalRun->toolTip().contains(QStringLiteral("Evaluations run on this machine only")));
    auto* computeDiff = m_window->findChild<QPushButton*>(QStringLiteral("computeDiff"));
    QVERIFY(computeDiff && !computeDiff->isEnabled());
    auto* labRun = m_window->findChild<QPushButton*>(QStringLiteral("labRun"));
    QVERIFY(labRun && !labRun->isEnabled());
    QVERIFY(!m_window->labAction(QStringLiteral("run"))->isEnabled());
    // Asked anyway (the scripted mode, a shortcut): refused with the reason, nothing runs here.
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    QVERIFY(!m_window->startSweep());
    QVERIFY(!m_window->startEval());
    QCOMPARE(errors.count(), 2);
    QVERIFY(!m_window->controller()->isRunning());
    // Every backend this version knows is offered for the target (its mnv2 answers when the run starts).
    QVERIFY(m_window->runSettings()->isBackendAvailable(QStringLiteral("cuda")));

    m_window->runSettings()->setRunTarget(QString());
    QVERIFY(sweepRun->isEnabled());
    QVERIFY(evalRun->isEnabled());
    QVERIFY(sweepRun->toolTip().isEmpty());
    QCOMPARE(m_window->runSettings()->isBackendAvailable(QStringLiteral("cuda")), [&] {
      for (const BackendStatus& b : m_window->backends())
        if (b.name == QLatin1String("cuda")) return b.available;
      return false;
    }());
  }

  void aProfileOnAnUnreachableTargetEndsAsTheEnginesError() {
    if (QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty()) QSKIP("no ssh program on this machine");
    writeTargets({target("h200", "bob@gpu-box:2222"), target("nowhere", "root@127.0.0.1:1")});
    m_window->targets()->reload();
    m_window->runSettings()->setRunTarget(QStringLiteral("nowhere"));
    QVERIFY(m_window->runSettings()->selectBackend(QStringLiteral("cpu")));
    m_window->runSettings()->setCounts(1, 0, 2);
    const int runs = m_window->catalog()->count();
    QSignalSpy finished(m_window, &MainWindow::runFinished);
    QSignalSpy errors(m_window, &MainWindow::errorReported);
    m_window->startRun(false);
    QVERIFY(finished.wait(kTimeoutMs));
    QCOMPARE(finished.first().at(0).toBool(), false);
    // The engine's words (mnv2::remote: ssh's exit status 255 read as "unreachable"), not a paraphrase.
    QCOMPARE(errors.count(), 1);
    const QString error = errors.first().at(0).toString();
    QVERIFY2(error.contains(QStringLiteral("target 'nowhere' (root@127.0.0.1): the host is unreachable. ssh said:")),
             qPrintable(error));
    auto* status = m_window->findChild<QLabel*>(QStringLiteral("runStatus"));
    QVERIFY(status);
    QVERIFY2(status->text().contains(QStringLiteral("the host is unreachable")), qPrintable(status->text()));
    QCOMPARE(m_window->catalog()->count(), runs);  // no report added
    QVERIFY(m_window->controller()->targetsUsed().contains(QStringLiteral("nowhere")));
    m_window->runSettings()->setRunTarget(QString());
  }

  void theAddFormRefusesWhatTheEngineRefuses() {
    TargetsDialog* dialog = m_window->targetsDialog(true);
    QVERIFY(dialog);
    const int before = m_window->targets()->rowCount();
    dialog->nameEdit()->setText(QStringLiteral("evil"));
    dialog->destinationEdit()->setText(QStringLiteral("-oProxyCommand=x"));
    QString expected;
    try {
      mnv2::remote::target_from_destination("evil", "-oProxyCommand=x");
    } catch (const std::exception& e) {
      expected = QString::fromStdString(e.what());
    }
    QVERIFY(!expected.isEmpty());
    QVERIFY(!dialog->addFromForm());
    QCOMPARE(dialog->message(TargetsDialog::Field::Destination), expected);
    QCOMPARE(dialog->message(TargetsDialog::Field::Name), QString());
    auto* label = dialog->findChild<QLabel*>(QStringLiteral("targetDestinationMessage"));
    QVERIFY(label && label->isVisible());
    QCOMPARE(m_window->targets()->rowCount(), before);  // nothing written

    // A wrong name goes beside the name; a relative ssh configuration beside its field.
    dialog->nameEdit()->setText(QStringLiteral("local"));
    dialog->destinationEdit()->setText(QStringLiteral("dave@host"));
    dialog->sshConfigEdit()->setText(QStringLiteral("relative/ssh_config"));
    QVERIFY(!dialog->addFromForm());
    QVERIFY(dialog->message(TargetsDialog::Field::Name).contains(QStringLiteral("'local' is this machine")));
    QCOMPARE(dialog->message(TargetsDialog::Field::Destination), QString());
    QVERIFY(dialog->message(TargetsDialog::Field::SshConfig).contains(QStringLiteral("absolute path")));

    // A good one is written (0600) and offered by the chooser; Remove takes it away.
    dialog->nameEdit()->setText(QStringLiteral("lab-gpu"));
    dialog->sshConfigEdit()->clear();
    dialog->slurmBox()->setChecked(true);
    QVERIFY(dialog->addFromForm());
    QCOMPARE(m_window->targets()->rowCount(), before + 1);
    QCOMPARE(QFileInfo(targetsFile()).permissions() & (QFile::ReadGroup | QFile::ReadOther),
             QFileDevice::Permissions());
    const mnv2::remote::Target* added = m_window->targets()->find(QStringLiteral("lab-gpu"));
    QVERIFY(added && added->host == "dave@host" && added->slurm);
    QVERIFY(comboItems(runOn()).contains(QStringLiteral("lab-gpu")));
    QCOMPARE(dialog->selectedTarget(), QStringLiteral("lab-gpu"));
    QVERIFY(dialog->removeSelected());
    QVERIFY(!comboItems(runOn()).contains(QStringLiteral("lab-gpu")));
    dialog->hide();
  }

  void aProbeOfAnUnreachableTargetShowsTheEnginesError() {
    if (QStandardPaths::findExecutable(QStringLiteral("ssh")).isEmpty()) QSKIP("no ssh program on this machine");
    TargetsDialog* dialog = m_window->targetsDialog(true);
    dialog->selectTarget(QStringLiteral("nowhere"));
    QSignalSpy probed(dialog, &TargetsDialog::probeFinished);
    QVERIFY(dialog->probeSelected());
    QVERIFY(probed.wait(kTimeoutMs));
    const TargetProbe p = probed.first().at(0).value<TargetProbe>();
    QVERIFY(!p.ok);
    QVERIFY2(p.error.contains(QStringLiteral("the host is unreachable")), qPrintable(p.error));
    QVERIFY(dialog->probeText().contains(QStringLiteral("the host is unreachable")));
    QVERIFY(m_window->targetProbe(QStringLiteral("nowhere")) == nullptr);  // nothing learnt
    dialog->hide();
  }

  void aRunOnATargetIsLabelledWithIt() {
    const auto& topology = test::mainModel().layers;
    mnv2::RunReport remote = test::syntheticReport(topology, "cuda", 100, 0.05, true);
    remote.config.backend = remote.backend;
    remote.config.precision = mnv2::Precision::fp16;
    remote.schema_version = 1;
    remote.run_id = "remote-test";
    remote.origin = mnv2::RunOrigin{"h200", "gpu-node-3", "123"};
    mnv2::RunReport local = test::syntheticReport(topology, "cpu", 2000, 0.05, false);
    local.config.backend = local.backend;
    local.schema_version = 1;
    local.run_id = "local-test";
    // Through the file: the report's metadata has the target, and reading it back gives the label.
    const QString json = m_dir.filePath(QStringLiteral("remote.json"));
    mnv2::write_json_report(json.toStdString(), {remote, local});
    QVERIFY(m_window->openReport(json));
    const int row = m_window->catalog()->count() - 2;
    const ReportCatalog::Entry& e = m_window->catalog()->entry(row);
    QCOMPARE(runLabel(*e.report), QStringLiteral("cuda fp16 on h200 (gpu-node-3, Slurm job 123)"));
    QVERIFY2(e.label.contains(QStringLiteral("cuda fp16 on h200 (gpu-node-3, Slurm job 123)")), qPrintable(e.label));
    QCOMPARE(m_window->catalog()->index(row, ReportCatalog::RanOn).data().toString(),
             QStringLiteral("h200 (gpu-node-3, Slurm job 123)"));
    // A local run is labelled as before.
    QCOMPARE(runLabel(*m_window->catalog()->report(row + 1)), QStringLiteral("cpu fp32"));
    QCOMPARE(m_window->catalog()->index(row + 1, ReportCatalog::RanOn).data().toString(), QStringLiteral("local"));
    // The shown runs' title names the target too.
    bool titled = false;
    for (const QLabel* l : m_window->timingsPage()->findChildren<QLabel*>())
      titled = titled || l->text().contains(QStringLiteral("on h200 (gpu-node-3, Slurm job 123)"));
    QVERIFY(titled);
    // A run with no host or job still names its target.
    QCOMPARE(targetText(mnv2::RunOrigin{"lab", "", ""}), QStringLiteral("lab"));
  }
};

MNV2_UI_SUITE(RemoteTargetsTest);
#include "test_remote_targets.moc"
