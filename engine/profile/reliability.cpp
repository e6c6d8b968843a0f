// The reliability checks and their probes (see mnv2/reliability.h).
#include "mnv2/reliability.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mnv2/error.h"
#include "util/nvml.h"

namespace mnv2 {

namespace {

// ---- thresholds -----------------------------------------------------------------------------------------
// End-to-end spread. TensorRT's trtexec warns at a CV of 1% of GPU compute time; host wall time per run (upload,
// ~100 OpenMP parallel regions or launches, download) measured 1.8-5% CV in the quietest cpu runs on the 2-core
// test VM (docs/PERFORMANCE.md, "Noise and contention"), so 5% is where a run is worth a note and 10%
// is where the median of 100 runs still sits within ~1.3% (standard error of a median: 1.25 sigma / sqrt(n))
// but two runs of the same build no longer agree to better than their difference under study: unreliable.
constexpr double kCvNoted = 0.05, kCvUnreliable = 0.10;
// The tail: a tenth of the runs 50% slower than the median is a machine that was doing something else (the
// tester's busy 2-core box: p90 15x the median); 20% is worth a note.
constexpr double kTailNoted = 1.2, kTailUnreliable = 1.5;
// Per-step noise: a single step of a few microseconds has a CV of 10-20% from the host clock and caches alone,
// so only a CV over 25% counts, and only by the share of the time such steps carry together.
constexpr double kStepCv = 0.25, kStepShareNoted = 0.05, kStepShareUnreliable = 0.25;
// SM clock: GPU boost steps are ~15 MHz (<1% at 1.5-2 GHz); a spread past 1% is a note, past 5% the clock
// (power or thermal capping, another process's load) moved the figures by about as much: unreliable.
constexpr double kClockNoted = 0.01, kClockUnreliable = 0.05;
// Host cores: other processes may use the cores the run leaves free; past that, they take time from the
// run's own threads. 0.1 core is measurement slack (jiffies of 10 ms over a run of seconds); 0.5 core means a
// run thread waited for a CPU for a good part of the run.
constexpr double kHostNoted = 0.1, kHostUnreliable = 0.5;
// Below this span the jiffy counts (10 ms) say too little: no host finding.
constexpr double kMinHostSpanS = 0.2;

std::string pct(double fraction, int digits = 0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", digits, fraction * 100);
  return buf;
}

std::string num(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void add(Reliability& r, const char* code, Verdict v, std::string reason, double value, double limit) {
  r.findings.push_back(ReliabilityFinding{code, v, std::move(reason), value, limit});
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "ok";
    case Verdict::unknown:
      return "unknown";
    case Verdict::noted:
      return "noted";
    case Verdict::unreliable:
      return "unreliable";
  }
  return "ok";
}

Verdict parse_verdict(const std::string& text) {
  for (Verdict v : {Verdict::ok, Verdict::unknown, Verdict::noted, Verdict::unreliable})
    if (text == to_string(v)) return v;
  throw Error("unknown reliability verdict '" + text + "' (ok, unknown, noted, unreliable)");
}

Verdict Reliability::verdict() const {
  Verdict worst = Verdict::ok;
  for (const auto& f : findings) worst = std::max(worst, f.verdict);
  return worst;
}

std::string Reliability::summary(Verdict at_least) const {
  std::string reasons;
  for (const auto& f : findings)
    if (f.verdict >= at_least) reasons += (reasons.empty() ? "" : "; ") + f.reason;
  if (reasons.empty()) return {};
  return std::string(to_string(verdict())) + ": " + reasons;
}

Reliability assess_reliability(const ReliabilityInputs& in) {
  Reliability r;
  // End to end: CV and tail. n < 2 says nothing about spread.
  const Summary& e = in.end_to_end;
  if (e.n >= 2 && e.mean > 0) {
    if (e.cv > kCvNoted)
      add(r, "e2e_cv", e.cv > kCvUnreliable ? Verdict::unreliable : Verdict::noted,
          "end-to-end CV " + pct(e.cv, e.cv < 0.1 ? 1 : 0) + " (> " +
              pct(e.cv > kCvUnreliable ? kCvUnreliable : kCvNoted) + ")",
          e.cv, kCvUnreliable);
    if (e.median > 0) {
      const double tail = e.p90 / e.median;
      if (tail > kTailNoted)
        add(r, "e2e_tail", tail > kTailUnreliable ? Verdict::unreliable : Verdict::noted,
            "end-to-end p90 " + num(tail, 2) + "x the median (" + num(e.p90, 3) + " vs " + num(e.median, 3) +
                " ms; > " + num(tail > kTailUnreliable ? kTailUnreliable : kTailNoted, 1) + "x)",
            tail, kTailUnreliable);
    }
  }
  // Steps: the share of the time carried by steps whose own CV is high.
  double noisy_share = 0;
  int noisy = 0;
  const StepNoise* worst = nullptr;
  for (const StepNoise& s : in.steps) {
    if (!(s.cv > kStepCv)) continue;
    noisy_share += s.share;
    ++noisy;
    if (!worst || s.share * s.cv > worst->share * worst->cv) worst = &s;
  }
  if (noisy > 0 && noisy_share >= kStepShareNoted)
    add(r, "step_cv", noisy_share >= kStepShareUnreliable ? Verdict::unreliable : Verdict::noted,
        std::to_string(noisy) + (noisy == 1 ? " step" : " steps") + " carrying " + pct(noisy_share) +
            " of the layer time have a CV over " + pct(kStepCv) + " (worst: " + worst->name + ", CV " + pct(worst->cv) +
            ", " + pct(worst->share, 1) + " of the time)",
        noisy_share, kStepShareUnreliable);
  // GPU: clocks and neighbours.
  if (in.gpu) {
    if (in.sm_clock_min_mhz > 0 && in.sm_clock_max_mhz > 0) {
      const double spread = static_cast<double>(in.sm_clock_max_mhz - in.sm_clock_min_mhz) / in.sm_clock_max_mhz;
      if (spread > kClockNoted)
        add(r, "sm_clock", spread > kClockUnreliable ? Verdict::unreliable : Verdict::noted,
            "SM clock moved between " + std::to_string(in.sm_clock_min_mhz) + " and " +
                std::to_string(in.sm_clock_max_mhz) + " MHz during the run (start " +
                std::to_string(in.sm_clock_start_mhz) + ", end " + std::to_string(in.sm_clock_end_mhz) + "; " +
                pct(spread, 1) + " > " + pct(spread > kClockUnreliable ? kClockUnreliable : kClockNoted) + ")",
            spread, kClockUnreliable);
    } else {
      add(r, "sm_clock", Verdict::unknown, "SM clock unknown (no NVML reading)", 0, kClockUnreliable);
    }
    if (!in.other_gpu_processes)
      add(r, "gpu_processes", Verdict::unknown, "other GPU processes unknown (NVML cannot list them)", 0, 0);
    else if (*in.other_gpu_processes > 0)
      add(r, "gpu_processes", Verdict::unreliable,
          "GPU shared: " + std::to_string(*in.other_gpu_processes) + " other " +
              (*in.other_gpu_processes == 1 ? "process holds" : "processes hold") + " a compute context on it" +
              (in.other_gpu_process_ids.empty() ? "" : " (pid " + in.other_gpu_process_ids + ")"),
          *in.other_gpu_processes, 0);
  }
  // Host: other processes' CPU time against the cores the run left free.
  if (in.host) {
    const HostContention& h = *in.host;
    const int free_cores = std::max(0, h.cpus - in.threads_used);
    if (h.cpu_time_known && h.cpus > 0 && h.wall_s >= kMinHostSpanS) {
      const double over = h.others_cores - free_cores;
      if (over > kHostNoted)
        add(r, "host_busy", over > kHostUnreliable ? Verdict::unreliable : Verdict::noted,
            "host busy: other processes used " + num(h.others_cores, 1) + " of " + std::to_string(h.cpus) +
                (h.cpus == 1 ? " core" : " cores") + " while the run kept " + std::to_string(in.threads_used) +
                (in.threads_used == 1 ? " thread" : " threads") + " busy (" + std::to_string(free_cores) + " free)",
            over, kHostUnreliable);
    } else if (!h.cpu_time_known) {
      add(r, "host_busy", Verdict::unknown,
          "host CPU use of other processes unknown" + (h.problem.empty() ? std::string() : " (" + h.problem + ")"), 0,
          kHostUnreliable);
    }
    // The load average lags (a one-minute mean) and counts this run's own threads: a note beside the CPU
    // time, the verdict only where the CPU time could not be read.
    if (h.load_average >= 0 && h.cpus > 0) {
      const double others_load = h.load_average - in.threads_used;
      if (others_load > free_cores + kHostUnreliable) {
        const bool decides = !h.cpu_time_known;
        add(r, "host_load", decides ? Verdict::unreliable : Verdict::noted,
            "load average " + num(h.load_average, 2) + " on " + std::to_string(h.cpus) +
                (h.cpus == 1 ? " core" : " cores") + " with " + std::to_string(in.threads_used) + " run " +
                (in.threads_used == 1 ? "thread" : "threads"),
            others_load - free_cores, kHostUnreliable);
      }
    }
  }
  return r;
}

// ---- host probe -------------------------------------------------------------------------------------------

HostContentionProbe::HostContentionProbe(std::string proc) : proc_(std::move(proc)) {}

HostContentionProbe::Sample HostContentionProbe::sample() const {
  Sample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) {
    s.problem = "no clock tick rate";
    return s;
  }
  std::ifstream stat(proc_ + "/stat");
  if (!stat) {
    s.problem = proc_ + "/stat unreadable";
    return s;
  }
  std::string line;
  bool total = false;
  while (std::getline(stat, line)) {
    if (line.rfind("cpu ", 0) == 0) {
      // user nice system idle iowait irq softirq steal (guest is inside user)
      std::istringstream in(line.substr(4));
      double v[8] = {};
      int got = 0;
      while (got < 8 && in >> v[got]) ++got;
      if (got < 4) break;
      s.busy_s = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / static_cast<double>(hz);
      total = true;
    } else if (line.rfind("cpu", 0) == 0 && line.size() > 3 && std::isdigit(static_cast<unsigned char>(line[3]))) {
      ++s.cpus;
    }
  }
  if (!total || s.cpus == 0) {
    s.problem = proc_ + "/stat has no cpu lines";
    return s;
  }
  std::ifstream self(proc_ + "/self/stat");
  std::string text;
  if (!self || !std::getline(self, text)) {
    s.problem = proc_ + "/self/stat unreadable";
    return s;
  }
  // pid (comm) state ... : the command may hold spaces and parentheses, so fields count from the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) {
    s.problem = proc_ + "/self/stat malformed";
    return s;
  }
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; utime is 14, stime 15
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) {
      stime = std::atof(field.c_str());
      break;
    }
  }
  if (utime < 0 || stime < 0) {
    s.problem = proc_ + "/self/stat malformed";
    return s;
  }
  s.self_s = (utime + stime) / static_cast<double>(hz);
  s.ok = true;
  return s;
}

void HostContentionProbe::start() { start_ = sample(); }

HostContention HostContentionProbe::stop() {
  HostContention h;
  const Sample end = sample();
  h.wall_s = end.wall_s - start_.wall_s;
  h.cpus = end.cpus;
  if (start_.ok && end.ok && h.wall_s > 0) {
    h.cpu_time_known = true;
    const double others = (end.busy_s - start_.busy_s) - (end.self_s - start_.self_s);
    h.others_cores = std::max(0.0, others / h.wall_s);
  } else {
    h.problem = !start_.problem.empty() ? start_.problem : end.problem;
  }
  std::ifstream loadavg(proc_ + "/loadavg");
  double one = -1;
  if (loadavg >> one && one >= 0) h.load_average = one;
  return h;
}

// ---- GPU probe --------------------------------------------------------------------------------------------

GpuConditionsProbe::GpuConditionsProbe(bool gpu, int device) : gpu_(gpu), device_(device) {}

void GpuConditionsProbe::sample() {
  if (!gpu_) return;
  if (const int mhz = current_sm_clock_mhz(device_); mhz > 0) {
    if (first_ < 0) first_ = mhz;
    last_ = mhz;
    min_ = min_ < 0 ? mhz : std::min(min_, mhz);
    max_ = std::max(max_, mhz);
  }
  std::vector<unsigned> pids;
  const std::optional<int> count = gpu_compute_processes(device_, &pids);
  if (!count) return;
  // This process holds a context during a GPU run: it is one of them, whatever id NVML shows for it (in a
  // container NVML gives the host's process ids).
  const unsigned self = static_cast<unsigned>(getpid());
  const bool self_listed = std::find(pids.begin(), pids.end(), self) != pids.end();
  const int others = std::max(0, *count - 1);
  processes_known_ = true;
  if (others >= others_) {
    others_ = others;
    other_ids_.clear();
    if (self_listed)  // the ids are in this namespace: name the others
      for (unsigned pid : pids)
        if (pid != self) other_ids_ += (other_ids_.empty() ? "" : ", ") + std::to_string(pid);
  }
}

void GpuConditionsProbe::fill(ReliabilityInputs& in) const {
  if (!gpu_) return;
  in.gpu = true;
  in.sm_clock_start_mhz = first_;
  in.sm_clock_end_mhz = last_;
  in.sm_clock_min_mhz = min_;
  in.sm_clock_max_mhz = max_;
  if (processes_known_) {
    in.other_gpu_processes = others_;
    in.other_gpu_process_ids = other_ids_;
  }
}

}  // namespace mnv2
