// Timing sources for per-layer profiling: a host clock (cpu backend), a cudaEvent pair around each step,
// or CUPTI activity records (GPU-only kernel time, names, grid and block) tied to steps by external
// correlation ids. A TimingSource is the StepObserver the profiler hands to PreparedNet::run().
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnv2/backend.h"

namespace mnv2 {

enum class TimerKind { host_clock, cuda_event, cupti_kernel };
const char* to_string(TimerKind kind);           // "host_clock", "cuda_event", "cupti_kernel"
TimerKind parse_timer(const std::string& text);  // "host", "event", "cupti" (or the full names); UsageError

// One GPU activity record (CUPTI): a kernel, memcpy or memset.
struct KernelRecord {
  std::string name;      // demangled kernel name, or "memcpy HtoD" / "memset"
  std::string kind;      // "kernel", "memcpy", "memset"
  int step = -1;         // ExecStep that launched it; -1 = outside any step (e.g. input upload)
  int64_t start_ns = 0;  // GPU timestamps, CUPTI clock, nanoseconds
  int64_t end_ns = 0;
  std::array<int, 3> grid{0, 0, 0};
  std::array<int, 3> block{0, 0, 0};
  int64_t bytes = 0;        // memcpy / memset size
  int64_t stream = -1;      // CUPTI stream id (one timeline track per stream); -1 where not known
  int64_t correlation = 0;  // CUPTI correlation id of the launching API call; 0 where not known
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// Where one step ran within its iteration, nanoseconds from the iteration's origin on the source's clock
// (host: steady clock from begin_iteration(); cudaEvent: GPU event time from the run's first event).
struct StepSpan {
  int step = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// The part of a step one worker thread of a host backend ran (first start to last end of its work in the
// step), on the same clock and origin as the step spans; `thread` is the worker's number in its team.
struct ThreadSpan {
  int step = -1;
  int thread = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// What one timed iteration produced.
struct IterationTiming {
  std::vector<int64_t> step_ns;       // per ExecStep; -1 where this source measured nothing
  int64_t run_ns = -1;                // run_begin..run_end on this source's clock; -1 if not measured
  std::vector<KernelRecord> records;  // cupti_kernel only
  bool graph_replay = false;          // cupti_kernel: the records came from a CUDA graph replay (by graph node)
  // Timestamps of this iteration (host clock and cudaEvent sources; CUPTI's are in `records`): the steps
  // that ran, and the worker threads' parts where a host backend reports them (StepObserver::thread_span).
  std::vector<StepSpan> step_spans;
  std::vector<ThreadSpan> thread_spans;
};

class TimingSource : public StepObserver {
 public:
  virtual TimerKind kind() const = 0;
  // Smallest difference this source can resolve, nanoseconds (cudaEvent: about 0.5 us; host: the clock's).
  virtual double resolution_ns() const = 0;
  // Before each run(): how many steps the prepared network has.
  virtual void begin_iteration(int num_steps) = 0;
  // After run() returned (the stream is synchronised): this iteration's figures.
  virtual IterationTiming end_iteration() = 0;
  // Problems worth showing the user (dropped records, fallbacks).
  virtual std::vector<std::string> warnings() const { return {}; }
};

// Throws Error when the kind cannot work in this build or on this machine (no CUDA). A CUPTI source that
// cannot start (library missing, another profiler attached) falls back to cudaEvent timing and says so
// in warnings().
std::unique_ptr<TimingSource> make_timing_source(TimerKind kind);

// Host clock source (always available); defined in engine/profile.
std::unique_ptr<TimingSource> make_host_timing_source();

// Time of a whole run (run_begin to run_end), used by the un-instrumented end-to-end run: an event pair
// on the GPU stream when `gpu`, else the host clock. last_run_ns() is -1 until a run has been seen.
class RunTimer : public StepObserver {
 public:
  virtual ~RunTimer() = default;
  virtual int64_t last_run_ns() = 0;  // after run() returned
  bool times_steps() const final { return false; }
};
std::unique_ptr<RunTimer> make_run_timer(bool gpu);

}  // namespace mnv2
