// cudaEvent timing: an event pair per step recorded on the backend's stream, and an event pair around the
// whole run (the RunTimer of the uninstrumented end-to-end runs).
#include <cuda_runtime_api.h>

#include <cmath>
#include <utility>

#include "gpu/runtime.h"
#include "profile/gpu/gpu_timing.h"

namespace mnv2 {

namespace gpu {

namespace {

// The CUDA programming guide gives cudaEventElapsedTime a resolution of about 0.5 microseconds.
constexpr double kEventResolutionNs = 500.0;

struct EventPair {
  Event begin = make_event();
  Event end = make_event();
};

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// Waits for `end` (everything recorded before it on its stream is then done) and reads the pair.
int64_t elapsed_ns(const EventPair& pair) {
  MNV2_CHECK_CUDA(cudaEventSynchronize(pair.end.get()));
  float ms = 0.0f;
  MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, pair.begin.get(), pair.end.get()));
  return std::llround(static_cast<double>(ms) * 1e6);
}

// Time from `origin` to `event` (both recorded on one stream, `event` not before `origin`), nanoseconds.
int64_t since_ns(const Event& origin, const Event& event) {
  MNV2_CHECK_CUDA(cudaEventSynchronize(event.get()));
  float ms = 0.0f;
  MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, origin.get(), event.get()));
  return std::llround(static_cast<double>(ms) * 1e6);
}

// step_ns = stream time from step_begin's event to step_end's: GPU work of the step plus any time the
// stream sat idle waiting for the host to submit it (launch gaps), so it is >= the GPU-only (CUPTI) time.
class EventTimingSource final : public TimingSource {
 public:
  explicit EventTimingSource(std::vector<std::string> warnings) : warnings_(std::move(warnings)) {}

  TimerKind kind() const override { return TimerKind::cuda_event; }
  double resolution_ns() const override { return kEventResolutionNs; }
  std::vector<std::string> warnings() const override { return warnings_; }

  // Events are created here, outside run(), and only when the step count changes, so the timed loop
  // never pays for cudaEventCreate.
  void begin_iteration(int num_steps) override {
    if (num_steps < 0) throw UsageError("timing: step count must not be negative");
    const auto n = static_cast<size_t>(num_steps);
    if (pool_.size() != n) {
      pool_.clear();
      pool_.reserve(n);
      for (size_t i = 0; i < n; ++i) pool_.emplace_back();
    }
    begun_.assign(n, 0);
    ended_.assign(n, 0);
    run_begun_ = run_ended_ = false;
  }

  void run_begin(void* stream) override {
    MNV2_CHECK_CUDA(cudaEventRecord(run_.begin.get(), as_stream(stream)));
    run_begun_ = true;
  }
  void run_end(void* stream) override {
    if (!run_begun_) return;
    MNV2_CHECK_CUDA(cudaEventRecord(run_.end.get(), as_stream(stream)));
    run_ended_ = true;
  }
  void step_begin(int step, void* stream) override {
    const size_t s = checked(step);
    MNV2_CHECK_CUDA(cudaEventRecord(pool_[s].begin.get(), as_stream(stream)));
    begun_[s] = 1;
  }
  void step_end(int step, void* stream) override {
    const size_t s = checked(step);
    if (!begun_[s]) return;
    MNV2_CHECK_CUDA(cudaEventRecord(pool_[s].end.get(), as_stream(stream)));
    ended_[s] = 1;
  }

  IterationTiming end_iteration() override {
    IterationTiming timing;
    timing.step_ns.assign(pool_.size(), -1);
    for (size_t s = 0; s < pool_.size(); ++s)
      if (begun_[s] && ended_[s]) timing.step_ns[s] = elapsed_ns(pool_[s]);
    if (run_begun_ && run_ended_) timing.run_ns = elapsed_ns(run_);
    // Timestamps: every step's events against one origin on the same stream (the run's first event, or the
    // first step's where the backend brackets no run), so the gaps between steps are real GPU time.
    const Event* origin = run_begun_ ? &run_.begin : nullptr;
    for (size_t s = 0; s < pool_.size() && origin == nullptr; ++s)
      if (begun_[s] && ended_[s]) origin = &pool_[s].begin;
    for (size_t s = 0; s < pool_.size() && origin != nullptr; ++s)
      if (begun_[s] && ended_[s])
        timing.step_spans.push_back(
            StepSpan{static_cast<int>(s), since_ns(*origin, pool_[s].begin), since_ns(*origin, pool_[s].end)});
    return timing;
  }

 private:
  size_t checked(int step) const {
    if (step < 0 || static_cast<size_t>(step) >= pool_.size())
      throw Error("cudaEvent timing: step " + std::to_string(step) + " is outside 0.." + std::to_string(pool_.size()) +
                  " (was begin_iteration() called with the prepared network's step count?)");
    return static_cast<size_t>(step);
  }

  std::vector<std::string> warnings_;
  std::vector<EventPair> pool_;
  std::vector<char> begun_, ended_;
  EventPair run_;
  bool run_begun_ = false, run_ended_ = false;
};

class EventRunTimer final : public RunTimer {
 public:
  void run_begin(void* stream) override {
    MNV2_CHECK_CUDA(cudaEventRecord(pair_.begin.get(), as_stream(stream)));
    begun_ = true;
    ended_ = false;
  }
  void run_end(void* stream) override {
    if (!begun_) return;
    MNV2_CHECK_CUDA(cudaEventRecord(pair_.end.get(), as_stream(stream)));
    ended_ = true;
  }
  void step_begin(int, void*) override {}
  void step_end(int, void*) override {}
  int64_t last_run_ns() override { return begun_ && ended_ ? elapsed_ns(pair_) : -1; }

 private:
  EventPair pair_;
  bool begun_ = false, ended_ = false;
};

}  // namespace

std::unique_ptr<TimingSource> make_event_timing_source_with_warnings(std::vector<std::string> warnings) {
  return std::make_unique<EventTimingSource>(std::move(warnings));
}

std::unique_ptr<RunTimer> make_event_run_timer() { return std::make_unique<EventRunTimer>(); }

}  // namespace gpu

}  // namespace mnv2
