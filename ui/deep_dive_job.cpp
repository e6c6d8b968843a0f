// The deep-dive study on a thread of its own (deep_dive_job.h).
#include "deep_dive_job.h"

#include <QMetaObject>
#include <memory>

#include "mnv2/error.h"

namespace mnv2::ui {

DeepDiveJob::DeepDiveJob(QObject* parent) : QObject(parent) {}

DeepDiveJob::~DeepDiveJob() {
  m_cancel = true;
  join();
}

void DeepDiveJob::join() {
  if (m_thread.joinable()) m_thread.join();
}

void DeepDiveJob::cancel() { m_cancel = true; }

bool DeepDiveJob::start(std::vector<Request> requests, const QString& mnv2, const QString& ncu) {
  if (m_running) return false;
  join();  // the previous thread has posted its last event
  m_cancel = false;
  m_running = true;
  const int generation = ++m_generation;
  mnv2::DeepDiveConfig config;
  config.mnv2_path = mnv2.toStdString();
  config.ncu = ncu.toStdString();
  // Events are posted to this object: dropped if it is gone, and ignored when another job has started since.
  const auto post = [this, generation](auto f) {
    QMetaObject::invokeMethod(
        this,
        [this, generation, f] {
          if (generation == m_generation) f();
        },
        Qt::QueuedConnection);
  };
  m_thread = std::thread([this, requests = std::move(requests), config, post] {
    for (size_t i = 0; i < requests.size(); ++i) {
      const int index = static_cast<int>(i);
      auto outcome = std::make_shared<Outcome>();
      outcome->index = index;
      try {
        const Request& r = requests[i];
        if (!r.report) throw mnv2::Error("no run");
        outcome->result = mnv2::deep_dive(*r.report, r.layer, config, [this, index, post](const std::string& line) {
          if (!line.empty()) post([this, index, text = QString::fromStdString(line)] { Q_EMIT progress(index, text); });
          return !m_cancel.load();
        });
      } catch (const std::exception& e) {
        outcome->error = QString::fromUtf8(e.what());
        outcome->cancelled = m_cancel.load();
      }
      const bool stop = outcome->cancelled;
      post([this, outcome] { Q_EMIT finished(*outcome); });
      if (stop) break;
    }
    post([this] {
      m_running = false;
      Q_EMIT done();
    });
  });
  return true;
}

}  // namespace mnv2::ui
