// The GUI's only door to the engine's long work. RunController lives on the GUI thread and hands jobs
// to a RunWorker on its own QThread (all CUDA work of the app happens there); results come back as
// plain value structs through queued signals. Every job has an id: results of superseded jobs are
// dropped, and cancel() stops the profile/diff job in flight through an atomic watermark that the
// worker checks in the profiler's progress callback.
#pragma once

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

 private:
  JobId startRun();
  void finishRun(JobId id);

  std::shared_ptr<RunCancelState> m_cancel;
  QThread m_thread;
  RunWorker* m_worker = nullptr;  // owned by m_thread (deleted when it finishes)
  JobId m_nextId = 0;
  JobId m_latestModel = 0, m_latestClassify = 0, m_latestRun = 0;
  bool m_runPending = false;
};

}  // namespace mnv2::ui
