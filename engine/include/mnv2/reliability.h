// Whether a run's figures can be trusted: its own spread (end-to-end CV and tail, noisy steps) and what
// else happened on the machine while it ran (SM clock changes, other processes on the GPU, other processes
// on the host's cores). Each finding has a code for programs, a reason with the measured numbers for people,
// and a verdict. The checks are pure functions of ReliabilityInputs, so tests feed them synthetic numbers;
// the probes below gather the inputs during a real run and never throw (an unreadable source is "unknown").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mnv2/stats.h"

namespace mnv2 {

// Ordered: a run's verdict is the worst of its findings' (ok when there are none).
enum class Verdict { ok, unknown, noted, unreliable };
const char* to_string(Verdict v);                // "ok", "unknown", "noted", "unreliable"
Verdict parse_verdict(const std::string& text);  // throws Error for anything else

struct ReliabilityFinding {
  std::string code;  // stable, machine-readable: see kReliabilityCodes in reliability.cpp and docs/PERFORMANCE.md
  Verdict verdict = Verdict::noted;  // unknown, noted or unreliable (never ok)
  std::string reason;  // one line with the measured numbers and the limit, e.g. "end-to-end CV 80% (> 10%)"
  double value = 0;    // the measured figure the verdict was taken on (its unit is the code's)
  double limit = 0;    // the limit it was compared with (the unreliable one); 0 where none applies
};

struct Reliability {
  std::vector<ReliabilityFinding> findings;
  Verdict verdict() const;  // the worst finding's, ok when none
  // "unreliable: end-to-end CV 80% (> 10%); host busy: ..." — the verdict and every finding at or above
  // `at_least`, in order; empty when there is none.
  std::string summary(Verdict at_least = Verdict::noted) const;
};

// ---- the inputs of the checks -------------------------------------------------------------------------

struct StepNoise {
  std::string name;
  double share = 0;  // of the sum of step medians, 0..1
  double cv = 0;
};

// The host's CPU time during the timed phases, from /proc: every CPU's busy time minus this process's.
struct HostContention {
  bool cpu_time_known = false;  // /proc/stat and /proc/self/stat were read at both ends
  double wall_s = 0;            // the span measured
  double others_cores = 0;      // other processes' (and the hypervisor's steal) CPU seconds per wall second
  int cpus = 0;                 // online CPUs counted in /proc/stat (0: unknown)
  double load_average = -1;     // 1-minute load average at the end (-1: unknown); includes this run's threads
  std::string problem;          // why something is unknown
};

struct ReliabilityInputs {
  Summary end_to_end;  // the end-to-end figure the run reports (GPU time where measured, else host), ms
  std::vector<StepNoise> steps;
  bool gpu = false;
  // SM clock in MHz; -1 unknown. min/max over every sample taken during the run (start and end included).
  int sm_clock_start_mhz = -1, sm_clock_end_mhz = -1, sm_clock_min_mhz = -1, sm_clock_max_mhz = -1;
  // Processes other than this one holding a compute context on the GPU; nullopt where NVML cannot say.
  std::optional<int> other_gpu_processes;
  std::string other_gpu_process_ids;   // "1234, 5678" for the reason
  int threads_used = 1;                // host threads the run keeps busy (the cpu backend's threads, else 1)
  std::optional<HostContention> host;  // nullopt: not measured (no finding)
};

// Every check, in a fixed order. Thresholds (explained in reliability.cpp and docs/PERFORMANCE.md):
// end-to-end CV > 10% or p90/median > 1.5 unreliable (> 5% / > 1.2 noted); steps with CV > 25% that carry
// >= 25% of the time together unreliable (>= 5% noted); SM clock spread > 5% unreliable (> 1% noted);
// another process on the GPU unreliable; other processes using more than the cores the run left free by
// over 0.5 core unreliable (over 0.1 noted).
Reliability assess_reliability(const ReliabilityInputs& in);

// ---- probes (never throw) ----------------------------------------------------------------------------

// Reads `proc` (normally "/proc"; tests point it at a folder of fake files or at nothing) at start() and
// stop(). Without readable files the result says so in HostContention::problem.
class HostContentionProbe {
 public:
  explicit HostContentionProbe(std::string proc = "/proc");
  void start();
  HostContention stop();

 private:
  struct Sample {
    bool ok = false;
    double busy_s = 0;  // all CPUs, user+nice+system+irq+softirq+steal
    double self_s = 0;  // this process, utime+stime
    int cpus = 0;
    double wall_s = 0;
    std::string problem;
  };
  Sample sample() const;
  std::string proc_;
  Sample start_;
};

// Samples the SM clock (NVML) and the other processes on the GPU during a GPU run; does nothing for a host
// run. sample() is cheap enough (a few NVML calls) to call between timed iterations, never inside one.
class GpuConditionsProbe {
 public:
  GpuConditionsProbe(bool gpu, int device);
  void sample();
  void fill(ReliabilityInputs& in) const;  // clocks and processes seen over every sample

 private:
  bool gpu_;
  int device_;
  int first_ = -1, last_ = -1, min_ = -1, max_ = -1;
  bool processes_known_ = false;
  int others_ = 0;
  std::string other_ids_;
};

}  // namespace mnv2
