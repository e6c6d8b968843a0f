// The run controller: engine work on the worker thread, results as queued signals, stale results dropped,
// cancellation through the progress callback.
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "run_controller.h"
#include "ui_test_support.h"

using namespace mnv2::ui;

namespace {
constexpr int kTimeoutMs = 120000;  // a loaded 2-core CI machine is slow; the jobs themselves take < 1 s
}

class RunControllerTest : public QObject {
  Q_OBJECT

 private:
  RunController* m_controller = nullptr;

  ProfileRequest cpuRequest(int iters) const {
    ProfileRequest r;
    r.backends = {QStringLiteral("cpu")};
    r.config.warmup = 0;
    r.config.iters = iters;
    return r;
  }

 private Q_SLOTS:
  void initTestCase() {
    m_controller = new RunController(this);
    QSignalSpy model(m_controller, &RunController::modelLoaded);
    m_controller->loadModel(test::mainModelPath());
    QVERIFY(model.wait(kTimeoutMs));
    const ModelInfo info = model.takeFirst().at(0).value<ModelInfo>();
    QCOMPARE(static_cast<int>(info.topology.size()), 99);
    QCOMPARE(static_cast<int>(info.stats.size()), 99);
    QCOMPARE(info.numBlocks, 17);
    QVERIFY(!info.synthetic);
    QCOMPARE(info.how, QStringLiteral("--model"));
    QVERIFY(info.topology.front().weight.empty());  // the GUI gets no weights
  }

  void environmentListsBackends() {
    QSignalSpy env(m_controller, &RunController::environmentReady);
    m_controller->probeEnvironment();
    QVERIFY(env.wait(kTimeoutMs));
    const EnvironmentInfo info = env.takeFirst().at(0).value<EnvironmentInfo>();
    bool cpu = false;
    for (const BackendStatus& b : info.backends) {
      if (b.name == QLatin1String("cpu")) cpu = b.available;
      if (mnv2::is_host_backend(b.name.toStdString())) QVERIFY2(b.available, qPrintable(b.name));
      if (!mnv2::is_host_backend(b.name.toStdString()) && info.cuda.devices.empty()) {
        QVERIFY2(!b.available, qPrintable(b.name));  // no GPU: the GPU backends cannot run
        QVERIFY(!b.reason.isEmpty());
      }
    }
    QVERIFY(cpu);
  }

  void classifiesTheCat() {
    QSignalSpy done(m_controller, &RunController::classified);
    m_controller->classify({test::imagePath(QStringLiteral("cat.bmp")), QStringLiteral("cpu"), ImageDecoder::Auto});
    QVERIFY(done.wait(kTimeoutMs));
    const ClassifyResult r = done.takeFirst().at(0).value<ClassifyResult>();
    QCOMPARE(static_cast<int>(r.top5.size()), 5);
    QCOMPARE(QString::fromStdString(r.top5.front().label), QStringLiteral("Egyptian cat"));
    QCOMPARE(r.crop.size(), QSize(224, 224));
    QCOMPARE(r.input.shape.numel(), 3 * 224 * 224);
    QVERIFY(r.runMs > 0);
  }

  void classifiesWithQImageToo() {
    QSignalSpy done(m_controller, &RunController::classified);
    m_controller->classify(
        {test::imagePath(QStringLiteral("parrot.jpg")), QStringLiteral("cpu"), ImageDecoder::QtImage});
    QVERIFY(done.wait(kTimeoutMs));
    const ClassifyResult r = done.takeFirst().at(0).value<ClassifyResult>();
    QCOMPARE(r.decoder, QStringLiteral("QImage"));
    QVERIFY2(QString::fromStdString(r.top5.front().label).contains(QStringLiteral("macaw")),
             r.top5.front().label.c_str());
  }

  void badImageFailsAndTheWorkerGoesOn() {
    QSignalSpy failed(m_controller, &RunController::failed);
    QSignalSpy done(m_controller, &RunController::classified);
    m_controller->classify({QStringLiteral("/nonexistent.png"), QStringLiteral("cpu"), ImageDecoder::Auto});
    QVERIFY(failed.wait(kTimeoutMs));
    const JobFailure f = failed.takeFirst().at(0).value<JobFailure>();
    QCOMPARE(f.kind, JobKind::Classify);
    QVERIFY(f.message.contains(QStringLiteral("/nonexistent.png")));
    m_controller->classify({test::imagePath(QStringLiteral("cat.bmp")), QStringLiteral("cpu"), ImageDecoder::Auto});
    QVERIFY(done.wait(kTimeoutMs));
  }

  void profilesOnTheWorkerThreadWithProgress() {
    QSignalSpy progress(m_controller, &RunController::progress);
    QSignalSpy done(m_controller, &RunController::profiled);
    QSignalSpy running(m_controller, &RunController::runningChanged);
    const JobId id = m_controller->profile(cpuRequest(3));
    QVERIFY(m_controller->isRunning());
    QVERIFY(done.wait(kTimeoutMs));
    QVERIFY(!m_controller->isRunning());
    const ProfileResult r = done.takeFirst().at(0).value<ProfileResult>();
    QCOMPARE(r.id, id);
    QCOMPARE(static_cast<int>(r.reports.size()), 1);
    QVERIFY(r.reports.front().steps.size() <= 54);  // cpu (oneDNN): 99 layers in at most 54 fused steps
    QCOMPARE(r.reports.front().config.iters, 3);
    QVERIFY(progress.count() >= 2);
    QCOMPARE(progress.last().at(0).value<RunProgress>().fraction, 1.0);
    QCOMPARE(running.count(), 2);  // true, then false
  }

  void cancelStopsARun() {
    QSignalSpy progress(m_controller, &RunController::progress);
    QSignalSpy cancelled(m_controller, &RunController::cancelled);
    QSignalSpy done(m_controller, &RunController::profiled);
    const JobId id = m_controller->profile(cpuRequest(1000000));
    QVERIFY(progress.wait(kTimeoutMs));
    m_controller->cancel();
    QVERIFY(cancelled.wait(kTimeoutMs));
    QCOMPARE(cancelled.takeFirst().at(0).value<JobId>(), id);
    QCOMPARE(done.count(), 0);
    QVERIFY(!m_controller->isRunning());
  }

  void aNewRunSupersedesTheOldOne() {
    QSignalSpy done(m_controller, &RunController::profiled);
    QSignalSpy cancelled(m_controller, &RunController::cancelled);
    QSignalSpy progress(m_controller, &RunController::progress);
    m_controller->profile(cpuRequest(1000000));
    QVERIFY(progress.wait(kTimeoutMs));
    const JobId second = m_controller->profile(cpuRequest(2));
    QVERIFY(done.wait(kTimeoutMs));
    QTest::qWait(100);
    QCOMPARE(done.count(), 1);
    QCOMPARE(done.first().at(0).value<ProfileResult>().id, second);
    QCOMPARE(cancelled.count(), 0);  // the first run's end is stale: dropped, not reported
  }

  void compareDiffsAgainstTheFirstBackend() {
    // The two CPU backends stand in for a GPU comparison on a machine without a GPU: the engine's compare study
    // runs both and diffs oneDNN against the reference (float32 both: only the summation order differs).
    ProfileRequest r = cpuRequest(1);
    r.backends = {QStringLiteral("cpu-ref"), QStringLiteral("cpu")};
    r.compare = true;
    QSignalSpy done(m_controller, &RunController::profiled);
    m_controller->profile(r);
    QVERIFY(done.wait(kTimeoutMs));
    const ProfileResult result = done.takeFirst().at(0).value<ProfileResult>();
    QCOMPARE(static_cast<int>(result.reports.size()), 2);
    QCOMPARE(QString::fromStdString(result.reports[0].backend), QStringLiteral("cpu-ref"));
    QVERIFY(!result.reports[0].diff);
    QVERIFY(result.reports[1].diff.has_value());
    const mnv2::DiffReport& d = *result.reports[1].diff;
    QCOMPARE(static_cast<int>(d.layers.size()), 99);
    QCOMPARE(QString::fromStdString(d.reference), QStringLiteral("cpu-ref"));
    QVERIFY(d.top5_agree);
    QCOMPARE(d.first_divergent_layer, -1);
    QVERIFY(d.logits.rel_l2 < mnv2::precision_logits_bound(mnv2::Precision::fp32));
  }

  void compareRefusesABackendTwice() {
    // The compare rule (mnv2::resolve_compare) is the engine's, so the app refuses what the CLI refuses.
    ProfileRequest r = cpuRequest(1);
    r.backends = {QStringLiteral("cpu"), QStringLiteral("cpu")};
    r.compare = true;
    QSignalSpy failed(m_controller, &RunController::failed);
    m_controller->profile(r);
    QVERIFY(failed.wait(kTimeoutMs));
    QVERIFY(failed.takeFirst().at(0).value<JobFailure>().message.contains(QStringLiteral("given twice")));
  }

  void diffJob() {
    QSignalSpy done(m_controller, &RunController::diffed);
    DiffRequest r;
    r.backend = QStringLiteral("cpu");  // oneDNN against the reference: the layers it materialises compared
    r.reference = QStringLiteral("cpu-ref");
    r.inputName = QStringLiteral("random");
    m_controller->diff(r);
    QVERIFY(done.wait(kTimeoutMs));
    const DiffResult d = done.takeFirst().at(0).value<DiffResult>();
    QCOMPARE(static_cast<int>(d.diff.layers.size()), 99);
    int compared = 0;
    for (const auto& l : d.diff.layers) compared += l.compared ? 1 : 0;
    QVERIFY(compared >= 30 && compared <= 54);  // one per step
    QCOMPARE(d.diff.first_divergent_layer, -1);
    QVERIFY(d.diff.top5_agree);
  }

  void unavailableBackendFails() {
    if (!mnv2::cuda_environment().devices.empty()) QSKIP("this machine has a GPU");
    ProfileRequest r = cpuRequest(1);
    r.backends = {QStringLiteral("cudnn")};
    QSignalSpy failed(m_controller, &RunController::failed);
    m_controller->profile(r);
    QVERIFY(failed.wait(kTimeoutMs));
    const JobFailure f = failed.takeFirst().at(0).value<JobFailure>();
    QCOMPARE(f.kind, JobKind::Profile);
    QVERIFY2(f.message.contains(QStringLiteral("not available")), qPrintable(f.message));
  }

  void badModelFailsAndTheOldOneStays() {
    QSignalSpy failed(m_controller, &RunController::failed);
    m_controller->loadModel(QStringLiteral("/nonexistent/model.onnx"));
    QVERIFY(failed.wait(kTimeoutMs));
    QCOMPARE(failed.takeFirst().at(0).value<JobFailure>().kind, JobKind::Model);
    classifiesTheCat();  // still the previous model
  }
};

MNV2_UI_SUITE(RunControllerTest);
#include "test_run_controller.moc"
