// Runs the engine's deep-dive study (mnv2/deep_dive.h) for the app on a thread of its own: Nsight Compute on one
// layer's step of one or two runs, one after the other (one ncu at a time on the GPU). ncu's output lines come as
// progress; Cancel ends ncu's process group (the study's progress callback answers false); a superseded job's
// results are dropped (hotspot's job tracker: each start has a generation).
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "mnv2/deep_dive.h"
#include "models/report_access.h"

namespace mnv2::ui {

class DeepDiveJob : public QObject {
  Q_OBJECT
 public:
  struct Request {
    ReportPtr report;  // a finished GPU run
    int layer = -1;    // the topology layer selected
  };
  struct Outcome {
    int index = 0;  // of the request
    std::optional<mnv2::DeepDiveResult> result;
    QString error;  // one line, when there is no result
    bool cancelled = false;
  };

  explicit DeepDiveJob(QObject* parent = nullptr);
  ~DeepDiveJob() override;

  // `mnv2`: the command-line program ncu starts (findLabCli()); `ncu`: the Nsight Compute program. False when a job
  // runs already.
  bool start(std::vector<Request> requests, const QString& mnv2, const QString& ncu = QStringLiteral("ncu"));
  void cancel();
  bool isRunning() const { return m_running; }

 Q_SIGNALS:
  void progress(int index, const QString& line);
  void finished(const mnv2::ui::DeepDiveJob::Outcome& outcome);  // once per request run (a cancelled one too)
  void done();                                                   // the job ended

 private:
  void join();

  std::thread m_thread;
  std::atomic<bool> m_cancel{false};
  int m_generation = 0;
  bool m_running = false;
};

}  // namespace mnv2::ui
