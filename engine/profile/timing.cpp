// Timer names, the host-clock timing source and run timer, and the factories that pick a source for a
// TimerKind. Compiled in every build; the GPU sources live in profile/gpu (CUDA builds only).
#include "mnv2/timing.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>

#include "mnv2/device.h"
#include "mnv2/error.h"

#include "gpu/plugin_api.h"

namespace mnv2 {

namespace {

using Clock = std::chrono::steady_clock;

int64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// The clock's period is a promise about units, not about what two calls can tell apart (on Linux the
// period is 1 ns but two reads are ~20 ns apart), so the resolution is the larger of the period and the
// smallest step actually seen between consecutive reads.
double measure_host_resolution_ns() {
  const double period_ns = 1e9 * static_cast<double>(Clock::period::num) / static_cast<double>(Clock::period::den);
  int64_t smallest = std::numeric_limits<int64_t>::max();
  for (int trial = 0; trial < 100; ++trial) {
    const Clock::time_point first = Clock::now();
    Clock::time_point next = Clock::now();
    while (next == first) next = Clock::now();
    smallest = std::min(smallest, ns_between(first, next));
  }
  return std::max({period_ns, static_cast<double>(smallest), 1.0});
}

double host_resolution_ns() {
  static const double resolution = measure_host_resolution_ns();
  return resolution;
}

// Host wall time around each step. For a GPU backend this would measure launch cost only, which is why
// the profiler refuses host_clock for GPU backends.
class HostTimingSource final : public TimingSource {
 public:
  TimerKind kind() const override { return TimerKind::host_clock; }
  double resolution_ns() const override { return host_resolution_ns(); }

  void begin_iteration(int num_steps) override {
    if (num_steps < 0) throw UsageError("timing: step count must not be negative");
    begin_.assign(static_cast<size_t>(num_steps), Clock::time_point{});
    step_ns_.assign(static_cast<size_t>(num_steps), -1);
    spans_.clear();
    threads_.clear();
    run_ns_ = -1;
    run_begun_ = false;
    origin_ = Clock::now();  // the timeline's zero: host backends call no run_begin
  }

  void run_begin(void*) override {
    run_begin_ = Clock::now();
    run_begun_ = true;
  }
  void run_end(void*) override {
    if (run_begun_) run_ns_ = ns_between(run_begin_, Clock::now());
  }
  void step_begin(int step, void*) override { begin_[checked(step)] = Clock::now(); }
  void step_end(int step, void*) override {
    const Clock::time_point now = Clock::now();
    const size_t s = checked(step);
    if (begin_[s] == Clock::time_point{}) return;
    step_ns_[s] = ns_between(begin_[s], now);
    spans_.push_back(StepSpan{step, ns_between(origin_, begin_[s]), ns_between(origin_, now)});
  }

  bool wants_thread_spans() const override { return true; }
  void thread_span(int step, int thread, int64_t begin_ns, int64_t end_ns) override {
    const int64_t origin = std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
    threads_.push_back(ThreadSpan{static_cast<int>(checked(step)), thread, begin_ns - origin, end_ns - origin});
  }

  IterationTiming end_iteration() override {
    IterationTiming timing;
    timing.step_ns = step_ns_;
    timing.run_ns = run_ns_;
    timing.step_spans = spans_;
    timing.thread_spans = threads_;
    return timing;
  }

 private:
  size_t checked(int step) const {
    if (step < 0 || static_cast<size_t>(step) >= begin_.size())
      throw Error("timing: step " + std::to_string(step) + " is outside 0.." + std::to_string(begin_.size()) +
                  " (was begin_iteration() called with the prepared network's step count?)");
    return static_cast<size_t>(step);
  }

  std::vector<Clock::time_point> begin_;
  std::vector<int64_t> step_ns_;
  std::vector<StepSpan> spans_;  // in the order the steps ended
  std::vector<ThreadSpan> threads_;
  Clock::time_point origin_{};
  Clock::time_point run_begin_{};
  bool run_begun_ = false;
  int64_t run_ns_ = -1;
};

class HostRunTimer final : public RunTimer {
 public:
  void run_begin(void*) override {
    begin_ = Clock::now();
    last_ns_ = -1;
    begun_ = true;
  }
  void run_end(void*) override {
    if (begun_) last_ns_ = ns_between(begin_, Clock::now());
    begun_ = false;
  }
  void step_begin(int, void*) override {}
  void step_end(int, void*) override {}
  int64_t last_run_ns() override { return last_ns_; }

 private:
  Clock::time_point begin_{};
  bool begun_ = false;
  int64_t last_ns_ = -1;
};

std::string lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

}  // namespace

const char* to_string(TimerKind kind) {
  switch (kind) {
    case TimerKind::host_clock:
      return "host_clock";
    case TimerKind::cuda_event:
      return "cuda_event";
    case TimerKind::cupti_kernel:
      return "cupti_kernel";
  }
  return "?";
}

TimerKind parse_timer(const std::string& text) {
  const std::string key = lower(text);
  if (key == "host" || key == "host_clock") return TimerKind::host_clock;
  if (key == "event" || key == "cuda_event") return TimerKind::cuda_event;
  if (key == "cupti" || key == "cupti_kernel") return TimerKind::cupti_kernel;
  throw UsageError("unknown timer '" + text + "' (choose host, event, cupti)");
}

std::unique_ptr<TimingSource> make_host_timing_source() { return std::make_unique<HostTimingSource>(); }

std::unique_ptr<TimingSource> make_timing_source(TimerKind kind) {
  if (kind == TimerKind::host_clock) return make_host_timing_source();
  if (const std::string why = why_no_gpu(); !why.empty())
    throw Error(std::string(to_string(kind)) + " timing needs a CUDA device (" + why + ")");
  const gpu_plugin::Api* gpu = gpu_plugin::api();  // loaded: why_no_gpu() said yes above
  if (kind == TimerKind::cuda_event) return gpu->make_event_timing_source({});
  std::string why_not;
  if (auto cupti = gpu->make_cupti_timing_source(&why_not)) return cupti;
  return gpu->make_event_timing_source({"CUPTI unavailable (" + why_not + "): falling back to cudaEvent timing"});
}

std::unique_ptr<RunTimer> make_run_timer(bool gpu) {
  if (!gpu) return std::make_unique<HostRunTimer>();
  if (const std::string why = why_no_gpu(); !why.empty())
    throw Error("GPU run timing needs a CUDA device (" + why + ")");
  return gpu_plugin::api()->make_event_run_timer();
}

}  // namespace mnv2
