// The GUI's only door to the engine's long work. RunController lives on the GUI thread and hands jobs
// to a RunWorker on its own QThread (all CUDA work of the app happens there); results come back as
// plain value structs through queued signals. Every job has an id: results of superseded jobs are
// dropped, and cancel() stops the profile/diff job in flight through an atomic watermark that the
// worker checks in the profiler's progress callback. A profile on a remote target runs on the same worker (the
// engine's profile_on_target, which asks the same watermark every 200 ms); a target's probe runs on a thread of
// its own, since a Slurm target's probe may wait minutes for an allocation.
#pragma once

#include <QList>
#include <QMap>
#include <QObject>
#include <QThread>
#include <atomic>
#include <memory>

#include "run_types.h"

namespace mnv2::ui {

class RunWorker;
struct RunCancelState;

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;  // cancels what runs and joins the worker thread

  // Backends with their availability, CUDA devices and versions.
  JobId probeEnvironment();
  // Empty path: look the model up as the CLI does (MNV2_MODEL, weights/ folder, else synthetic).
  JobId loadModel(const QString& path);
  // Decode, preprocess, one forward pass, top-5. Uses the model of the last loadModel().
  JobId classify(const ClassifyRequest& request);
  // A profile or diff job supersedes (and cancels) the one before it.
  JobId profile(const ProfileRequest& request);
  JobId diff(const DiffRequest& request);
  JobId sweep(const SweepRequest& request);    // a run like profile(): superseding, cancellable
  JobId evaluate(const EvalRequest& request);  // accuracy evaluation, a run like profile()
  void cancel();                               // the profile/diff/sweep/eval job in flight, if any

  // What a remote target has (mnv2::remote::Session::probe), asked off the GUI thread: targetProbed gives the
  // answer or the engine's error, targetProbeProgress the waiting (connect, a Slurm job pending).
  JobId probeTarget(const mnv2::remote::Target& target);
  void cancelProbes();  // every probe in flight
  bool isProbing() const { return !m_probes.isEmpty(); }
  // A target this session reached another way (the Targets dialog's Connect): closed on quit with the others.
  void noteTargetUsed(const mnv2::remote::Target& target);
  QStringList targetsUsed() const { return m_targetsUsed.keys(); }
  // ssh -O exit for the master connection of every target this session ran on, probed or connected to (on quit;
  // bounded by the engine, a few seconds at most each).
  void closeConnections();

  bool isRunning() const { return m_runPending; }  // a profile/diff job has not reported yet
  JobId currentRunId() const { return m_latestRun; }

 Q_SIGNALS:
  void environmentReady(const mnv2::ui::EnvironmentInfo& info);
  void modelLoaded(const mnv2::ui::ModelInfo& info);
  void classified(const mnv2::ui::ClassifyResult& result);
  void progress(const mnv2::ui::RunProgress& progress);
  void profiled(const mnv2::ui::ProfileResult& result);
  void diffed(const mnv2::ui::DiffResult& result);
  void swept(const mnv2::ui::SweepResult& result);
  void evaluated(const mnv2::ui::EvalOutcome& outcome);
  void failed(const mnv2::ui::JobFailure& failure);
  void cancelled(mnv2::ui::JobId id);
  void runningChanged(bool running);
  void targetProbed(const mnv2::ui::TargetProbe& probe);
  void targetProbeProgress(const mnv2::ui::TargetProbe& probe);

 private:
  JobId startRun();
  void finishRun(JobId id);

  std::shared_ptr<RunCancelState> m_cancel;
  std::shared_ptr<RunCancelState> m_probeCancel;  // probes: cancelled up to a job id, like runs
  QList<QThread*> m_probes;                       // in flight; each deletes itself when done
  QMap<QString, mnv2::remote::Target> m_targetsUsed;
  QThread m_thread;
  RunWorker* m_worker = nullptr;  // owned by m_thread (deleted when it finishes)
  JobId m_nextId = 0;
  JobId m_latestModel = 0, m_latestClassify = 0, m_latestRun = 0;
  bool m_runPending = false;
};

}  // namespace mnv2::ui
