// The app's run controller against a real target: a throwaway sshd on a loopback port with a throwaway user whose
// login shell is tcsh (tests/remote/fixture.sh, as the CLI's remote tests use it), mnv2 put there with
// `mnv2 remote install`, then a cpu profile through the target from the controller (its stages as progress, the
// report's origin naming the target and the host), and a long one cancelled. Without root or the packages the
// fixture skips, and so does this.
#include <QDir>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "models/report_access.h"
#include "run_controller.h"
#include "ui_test_support.h"

using namespace mnv2::ui;

using mnv2::ui::test::EnvGuard;

namespace {

struct Shell {
  int code = -1;
  QString out, err;
};

Shell run(const QString& program, const QStringList& args, const QProcessEnvironment& env, int timeoutMs) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Shell s;
  if (!p.waitForStarted(10000)) {
    s.err = p.errorString();
    return s;
  }
  p.closeWriteChannel();
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished(5000);
    s.err = QStringLiteral("timed out");
  }
  s.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  s.out = QString::fromUtf8(p.readAllStandardOutput());
  s.err += QString::fromUtf8(p.readAllStandardError());
  return s;
}

}  // namespace

class RemoteFixtureTest : public QObject {
  Q_OBJECT

 private:
  QString m_dir;  // beneath the build tree: sshd's StrictModes wants root-owned parents others cannot write
  QTemporaryDir m_runtime{QStringLiteral("/tmp/mnv2uf-XXXXXX")};
  std::map<QString, QString> m_fixture;
  bool m_started = false;
  std::unique_ptr<EnvGuard> m_config, m_runtimeEnv;
  std::unique_ptr<RunController> m_controller;

  QProcessEnvironment env() const {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir + QStringLiteral("/local/config"));
    e.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_runtime.path());
    e.insert(QStringLiteral("XDG_CACHE_HOME"), m_dir + QStringLiteral("/local/cache"));
    return e;
  }

  mnv2::remote::Target target() const {
    mnv2::remote::Target t;
    t.name = "lab";
    t.host = m_fixture.at(QStringLiteral("SSH_HOST")).toStdString();
    t.ssh_config = m_fixture.at(QStringLiteral("SSH_CONFIG")).toStdString();
    return t;
  }

  ProfileRequest request(int iters) const {
    ProfileRequest r;
    r.backends = {QStringLiteral("cpu")};
    r.config.backend = "cpu";
    r.config.batch = 1;
    r.config.warmup = 1;
    r.config.iters = iters;
    r.config.cpu_threads = 1;
    r.config.height = 224;
    r.config.width = 224;
    r.target = target();
    r.modelPath = test::mainModelPath();
    return r;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_runtime.isValid());
    QDir().mkpath(QStringLiteral(MNV2_UI_REMOTE_SCRATCH));
    QFile::setPermissions(QStringLiteral(MNV2_UI_REMOTE_SCRATCH),
                          QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup |
                              QFile::ReadOther | QFile::ExeOther);
    m_dir = QStringLiteral(MNV2_UI_REMOTE_SCRATCH "/t-%1").arg(QCoreApplication::applicationPid());
    QDir(m_dir).removeRecursively();
    QVERIFY(QDir().mkpath(m_dir + QStringLiteral("/local/config")));
    QProcessEnvironment fixtureEnv = QProcessEnvironment::systemEnvironment();
    fixtureEnv.insert(QStringLiteral("FIXTURE_SSHD_SETENV"), QStringLiteral("PATH=/usr/local/bin:/usr/bin:/bin"));
    const Shell s = run(QStringLiteral("bash"),
                        {QStringLiteral(MNV2_FIXTURE), QStringLiteral("ssh-start"), m_dir + QStringLiteral("/ssh")},
                        fixtureEnv, 120000);
    m_started = true;
    if (s.code == 77) QSKIP(qPrintable(s.out.trimmed()));
    QVERIFY2(s.code == 0, qPrintable(s.out + s.err));
    for (const QString& line : s.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
      if (const qsizetype eq = line.indexOf(QLatin1Char('=')); eq > 0) m_fixture[line.left(eq)] = line.mid(eq + 1);
    QVERIFY(m_fixture.count(QStringLiteral("SSH_CONFIG")) && m_fixture.count(QStringLiteral("SSH_HOST")));

    // The app reads the same environment: its targets file and its control sockets are this test's.
    m_config = std::make_unique<EnvGuard>("XDG_CONFIG_HOME");
    m_runtimeEnv = std::make_unique<EnvGuard>("XDG_RUNTIME_DIR");
    qputenv("XDG_CONFIG_HOME", env().value(QStringLiteral("XDG_CONFIG_HOME")).toUtf8());
    qputenv("XDG_RUNTIME_DIR", m_runtime.path().toUtf8());
    mnv2::remote::write_targets(
        (env().value(QStringLiteral("XDG_CONFIG_HOME")) + QStringLiteral("/mnv2-profiler/targets.json")).toStdString(),
        {target()});
    const Shell install =
        run(QStringLiteral(MNV2_CLI_PATH), {QStringLiteral("remote"), QStringLiteral("install"), QStringLiteral("lab")},
            env(), 600000);
    QVERIFY2(install.code == 0, qPrintable(install.out + install.err));

    m_controller = std::make_unique<RunController>();
    QSignalSpy loaded(m_controller.get(), &RunController::modelLoaded);
    m_controller->loadModel(test::mainModelPath());
    QVERIFY(loaded.wait(60000));
  }

  void cleanupTestCase() {
    if (m_controller) m_controller->closeConnections();
    m_controller.reset();
    if (m_started)
      run(QStringLiteral("bash"),
          {QStringLiteral(MNV2_FIXTURE), QStringLiteral("ssh-stop"), m_dir + QStringLiteral("/ssh")},
          QProcessEnvironment::systemEnvironment(), 120000);
    m_runtimeEnv.reset();
    m_config.reset();
    if (!m_dir.isEmpty()) QDir(m_dir).removeRecursively();
  }

  void aProbeSaysWhatTheTargetHas() {
    QSignalSpy probed(m_controller.get(), &RunController::targetProbed);
    m_controller->probeTarget(target());
    QVERIFY(probed.wait(120000));
    const TargetProbe p = probed.first().at(0).value<TargetProbe>();
    QVERIFY2(p.ok, qPrintable(p.error));
    QCOMPARE(p.target, QStringLiteral("lab"));
    QCOMPARE(p.result.protocol, mnv2::remote::kProtocol);
    bool cpu = false;
    for (const auto& b : p.result.backends) cpu = cpu || (b.name == "cpu" && b.available);
    QVERIFY(cpu);
  }

  void aCpuProfileThroughTheTargetNamesIt() {
    QSignalSpy profiled(m_controller.get(), &RunController::profiled);
    QSignalSpy failed(m_controller.get(), &RunController::failed);
    QStringList stages;
    QObject context;  // the connection ends with this test function
    connect(m_controller.get(), &RunController::progress, &context, [&](const RunProgress& p) { stages << p.text; });
    ProfileRequest req = request(3);
    req.config.cpu_threads = 0;  // the app's default (the target's own): no --threads goes there
    m_controller->profile(req);
    QVERIFY(QTest::qWaitFor([&] { return profiled.count() + failed.count() > 0; }, 300000));
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(0).value<JobFailure>().message));
    const ProfileResult result = profiled.first().at(0).value<ProfileResult>();
    QCOMPARE(result.reports.size(), size_t{1});
    const mnv2::RunReport& r = result.reports.front();
    QCOMPARE(QString::fromStdString(r.origin.target), QStringLiteral("lab"));
    QVERIFY(!r.origin.host.empty());
    QVERIFY(r.origin.slurm_job.empty());
    QCOMPARE(QString::fromStdString(r.model_source), test::mainModelPath());
    QCOMPARE(runLabel(r), QStringLiteral("cpu fp32 on lab (%1)").arg(QString::fromStdString(r.origin.host)));
    QVERIFY(!r.layers.empty());
    // The stages as the progress line says them: the upload of the model (sent once), the study's own phases.
    QVERIFY2(stages.filter(QStringLiteral("lab: upload model")).size() > 0, qPrintable(stages.join(QLatin1Char('\n'))));
    QVERIFY2(stages.filter(QStringLiteral("lab: cpu per-layer")).size() > 0,
             qPrintable(stages.join(QLatin1Char('\n'))));
  }

  void cancelEndsARunOnTheTarget() {
    QSignalSpy cancelled(m_controller.get(), &RunController::cancelled);
    QSignalSpy profiled(m_controller.get(), &RunController::profiled);
    bool running = false;
    QObject context;
    connect(m_controller.get(), &RunController::progress, &context,
            [&](const RunProgress& p) { running = running || p.text.contains(QStringLiteral("end-to-end")); });
    m_controller->profile(request(100000));
    QVERIFY(QTest::qWaitFor([&] { return running; }, 120000));
    m_controller->cancel();
    QVERIFY(cancelled.wait(30000));
    QVERIFY(profiled.isEmpty());
    QVERIFY(!m_controller->isRunning());
    // Nothing of the run is left on the target (the agent kills its process group when its input ends).
    const QString user = m_fixture.at(QStringLiteral("SSH_USER"));
    QVERIFY(QTest::qWaitFor(
        [&] {
          return run(QStringLiteral("pgrep"),
                     {QStringLiteral("-u"), user, QStringLiteral("-f"), QStringLiteral("mnv2.bin")},
                     QProcessEnvironment::systemEnvironment(), 10000)
                     .code == 1;  // pgrep: no process matched
        },
        15000));
  }

  // On quit the app ends the master connection its runs left open (ssh -O exit), rather than leaving it for its
  // ControlPersist time.
  void closeConnectionsEndsTheMasterConnection() {
    const QStringList check = {
        QStringLiteral("-F"), m_fixture.at(QStringLiteral("SSH_CONFIG")),
        QStringLiteral("-o"), QStringLiteral("ControlPath=%1/mnv2-profiler-ssh/%C").arg(m_runtime.path()),
        QStringLiteral("-O"), QStringLiteral("check"),
        QStringLiteral("--"), m_fixture.at(QStringLiteral("SSH_HOST"))};
    const QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    const Shell open = run(QStringLiteral("ssh"), check, e, 20000);
    QVERIFY2(open.code == 0, qPrintable(open.err));  // the runs above left it open
    QVERIFY(m_controller->targetsUsed().contains(QStringLiteral("lab")));
    m_controller->closeConnections();
    QVERIFY(m_controller->targetsUsed().isEmpty());
    QVERIFY(QTest::qWaitFor([&] { return run(QStringLiteral("ssh"), check, e, 20000).code != 0; }, 10000));
  }
};

MNV2_UI_SUITE(RemoteFixtureTest);
#include "test_remote_fixture.moc"
