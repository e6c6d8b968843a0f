// What two runs have in common (mnv2/studies.h): every recorded setting compared, each difference weighed by
// what it does to a comparison of the two runs' figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "mnv2/options.h"
#include "mnv2/profiler.h"
#include "mnv2/studies.h"

namespace mnv2 {
namespace {

using Weight = SettingDifference::Weight;

// Options with their own finding above (worded for what they do to a comparison).
// The GPU's ordinal says nothing across machines: the card itself (metadata.gpu) is compared instead.
const std::set<std::string> kComparedAbove = {"backend", "precision", "batch", "input-size", "warmup",
                                              "iters",   "timing",    "exec",  "device"};

// Clocks further apart than this (relative) change kernel times by about as much: worth a warning.
constexpr double kClockTolerance = 0.05;

std::string size_text(const ProfileConfig& c) { return std::to_string(c.height) + "×" + std::to_string(c.width); }

std::string clock_text(const RunReport& r) {
  if (r.sm_clock_mhz_start < 0 && r.sm_clock_mhz_end < 0) return "not recorded";
  if (r.sm_clock_mhz_start == r.sm_clock_mhz_end || r.sm_clock_mhz_end < 0)
    return std::to_string(r.sm_clock_mhz_start) + " MHz";
  if (r.sm_clock_mhz_start < 0) return std::to_string(r.sm_clock_mhz_end) + " MHz";
  return std::to_string(r.sm_clock_mhz_start) + "→" + std::to_string(r.sm_clock_mhz_end) + " MHz";
}

// The clock a run ran at, in MHz: the mean of its start and end readings; 0 when it recorded none.
double run_clock(const RunReport& r) {
  const int s = r.sm_clock_mhz_start, e = r.sm_clock_mhz_end;
  if (s > 0 && e > 0) return (s + e) / 2.0;
  return s > 0 ? s : (e > 0 ? e : 0);
}

std::string mhz_text(int mhz) { return mhz > 0 ? std::to_string(mhz) + " MHz" : "not recorded"; }

std::string watts_text(double w) {
  if (w <= 0) return "not recorded";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f W", w);
  return buf;
}

// Two recorded settings further apart than the tolerance (relative); unrecorded ones (<= 0) are not compared.
bool apart(double a, double b) { return a > 0 && b > 0 && std::abs(a - b) > kClockTolerance * std::max(a, b); }

bool clock_moved(const RunReport& r) {
  const int s = r.sm_clock_mhz_start, e = r.sm_clock_mhz_end;
  return s > 0 && e > 0 && std::abs(s - e) > kClockTolerance * std::max(s, e);
}

// The layer kinds in order: two runs of one architecture agree here even when their weights differ.
bool same_topology(const RunReport& a, const RunReport& b) {
  if (a.topology.size() != b.topology.size() || a.layers.size() != b.layers.size()) return false;
  for (size_t i = 0; i < a.topology.size(); ++i)
    if (a.topology[i].kind != b.topology[i].kind) return false;
  return true;
}

std::string model_text(const RunReport& r) {
  std::string t = r.model_synthetic ? "built-in (synthetic weights)" : r.model_source;
  // The algorithm and the first 12 hex digits: "sha256:0123456789ab", "fnv1a64:0123456789ab".
  const size_t colon = r.model_checksum.find(':');
  const std::string sum = r.model_checksum.substr(0, colon == std::string::npos ? 12 : colon + 13);
  if (!sum.empty()) t += " [" + sum + "]";
  return t + ", " + std::to_string(r.topology.size()) + " layers";
}

std::string checksum_algorithm(const std::string& checksum) {
  const size_t colon = checksum.find(':');
  return colon == std::string::npos ? "no named algorithm" : checksum.substr(0, colon);
}

// Whether the two runs used the same model bytes: the .onnx file's checksum and its external data files'.
// Checksums of different algorithms (a report written while they were FNV-1a against a SHA-256 one) say
// nothing either way.
ChecksumMatch same_model(const RunReport& a, const RunReport& b) {
  if (a.model_synthetic != b.model_synthetic) return ChecksumMatch::different;
  const ChecksumMatch m = match_checksums(a.model_checksum, b.model_checksum);
  if (m != ChecksumMatch::same) return m;
  return a.model_data_files == b.model_data_files ? ChecksumMatch::same : ChecksumMatch::different;
}

}  // namespace

const char* to_string(SettingDifference::Weight weight) {
  switch (weight) {
    case Weight::note:
      return "note";
    case Weight::warn:
      return "warn";
    case Weight::refuse:
      return "refuse";
  }
  return "?";
}

bool RunComparability::refused() const {
  return std::any_of(differences.begin(), differences.end(),
                     [](const SettingDifference& d) { return d.weight == Weight::refuse; });
}

bool RunComparability::warned() const {
  return std::any_of(differences.begin(), differences.end(),
                     [](const SettingDifference& d) { return d.weight != Weight::note; });
}

std::string RunComparability::refusal() const {
  for (const SettingDifference& d : differences)
    if (d.weight == Weight::refuse) return d.consequence;
  return {};
}

RunComparability compare_settings(const RunReport& a, const RunReport& b) {
  RunComparability out;
  auto add = [&](std::string setting, std::string va, std::string vb, Weight w, std::string why) {
    out.differences.push_back({std::move(setting), std::move(va), std::move(vb), w, std::move(why)});
  };
  const ProfileConfig& ca = a.config;
  const ProfileConfig& cb = b.config;

  // The network itself.
  if (!same_topology(a, b)) {
    add("model", model_text(a), model_text(b), Weight::refuse,
        "the two runs are of different networks: a layer-by-layer comparison would pair unrelated layers");
  } else if (const ChecksumMatch m = same_model(a, b); m == ChecksumMatch::different) {
    add("model", model_text(a), model_text(b), Weight::warn,
        "same layers, different weights or file: timings compare, outputs and predictions do not");
  } else if (m == ChecksumMatch::unknown) {
    add("model", model_text(a), model_text(b), Weight::note,
        "same layers; whether the weights are the same is unknown: the checksums are of different algorithms (" +
            checksum_algorithm(a.model_checksum) + " and " + checksum_algorithm(b.model_checksum) +
            ", one report written by an older version): timings compare; outputs compare only if the file is the "
            "same");
  }

  // The work per run.
  if (ca.batch != cb.batch && ca.batch > 0 && cb.batch > 0) {
    out.images_ratio = static_cast<double>(cb.batch) / ca.batch;
    add("batch", std::to_string(ca.batch), std::to_string(cb.batch), Weight::warn,
        "B processes " + std::to_string(cb.batch) + " image(s) per run and A " + std::to_string(ca.batch) +
            ": compare per-image times, not run times");
  }
  if (ca.height != cb.height || ca.width != cb.width)
    add("input size", size_text(ca), size_text(cb), Weight::warn,
        "the layers do different amounts of work per image: times differ by that as well as by the code");

  // The machine.
  if (a.origin.target != b.origin.target || a.origin.host != b.origin.host) {
    auto where = [](const RunReport& r) {
      return r.origin.target.empty() ? std::string("this machine") : origin_text(r.origin);
    };
    add("where", where(a), where(b), Weight::note, "the runs ran on different machines (remote targets)");
  }
  // A CPU against a GPU is what a compare of backends is for; two GPUs (or two CPUs) apart are not.
  const bool cpu_vs_gpu = (a.device == "CPU") != (b.device == "CPU");
  if (a.device != b.device)
    add("device", a.device, b.device, cpu_vs_gpu ? Weight::note : Weight::warn,
        cpu_vs_gpu ? "a CPU against a GPU"
                   : "the runs are from different processors: differences are the hardware's as much as the code's");
  // Two GPU runs: the card, and the settings that bound its speed (NVML, at each run's start).
  const GpuRecord &ga = a.gpu, &gb = b.gpu;
  if (ga.index >= 0 && gb.index >= 0) {
    if (a.device == b.device && !ga.uuid.empty() && !gb.uuid.empty() && ga.uuid != gb.uuid)
      add("GPU card", ga.uuid + " (" + ga.pci_bus_id + ")", gb.uuid + " (" + gb.pci_bus_id + ")", Weight::note,
          "two cards of the same model: their power limits and clocks are compared below");
    if (ga.power_limit_w > 0 && gb.power_limit_w > 0 && std::abs(ga.power_limit_w - gb.power_limit_w) >= 1)
      add("GPU power limit", watts_text(ga.power_limit_w), watts_text(gb.power_limit_w), Weight::warn,
          "a card held to less power lowers its clocks under load: kernel times differ by that as well as by the "
          "code");
    if (apart(ga.sm_clock_max_mhz, gb.sm_clock_max_mhz))
      add("GPU max SM clock", mhz_text(ga.sm_clock_max_mhz), mhz_text(gb.sm_clock_max_mhz), Weight::warn,
          "the cards allow different SM clocks: kernel times scale with the clock");
    if (apart(ga.sm_clock_applications_mhz, gb.sm_clock_applications_mhz))
      add("GPU application clock", mhz_text(ga.sm_clock_applications_mhz), mhz_text(gb.sm_clock_applications_mhz),
          Weight::warn, "the cards target different SM clocks under load (nvidia-smi -ac): kernel times scale with it");
    if (apart(ga.memory_clock_mhz, gb.memory_clock_mhz))
      add("GPU memory clock", mhz_text(ga.memory_clock_mhz), mhz_text(gb.memory_clock_mhz), Weight::warn,
          "different memory clocks: memory-bound layers (most of this network) scale with it");
  }
  const double fa = run_clock(a), fb = run_clock(b);
  if (clock_moved(a) || clock_moved(b) ||
      (fa > 0 && fb > 0 && std::abs(fa - fb) > kClockTolerance * std::max(fa, fb))) {
    add("SM clock", clock_text(a), clock_text(b), Weight::warn,
        "the GPU ran at different clocks (more than 5% apart, or changing during a run): kernel times scale "
        "with the clock");
  } else if (clock_text(a) != clock_text(b)) {
    add("SM clock", clock_text(a), clock_text(b), Weight::note, "within 5%: comparable");
  }

  // How the figures were taken.
  if (a.timer != b.timer)
    add("timer", a.timer, b.timer, cpu_vs_gpu ? Weight::note : Weight::warn,
        "the per-layer times measure different things (CUPTI: kernel time only; events and host clock: "
        "launch and gaps included)");
  if (a.execution != b.execution)
    add("per-layer execution", a.execution, b.execution, Weight::warn,
        "a graph replay has no per-step launch overhead that a layer-by-layer run pays");

  // What ran.
  if (ca.precision != cb.precision)
    add("precision", to_string(ca.precision), to_string(cb.precision), Weight::note,
        "different arithmetic: times and outputs are expected to differ");
  if (a.backend != b.backend)
    add("backend", a.backend, b.backend, Weight::note, "different implementations of the same network");
  // Every other run option of the table (mnv2/options.h) that either run's backend honours: the cuda and cudnn
  // options, the host threads. One finding per option, naming where each value came from.
  // The values that ran (the configuration's fields) with the sources the run recorded.
  ProfileConfig ra = ca, rb = cb;
  ra.backend = a.backend;
  rb.backend = b.backend;
  const OptionValues oa = options_of(ra), ob = options_of(rb);
  for (const OptionSpec& spec : option_table()) {
    if (!spec.per_run || kComparedAbove.count(spec.name)) continue;
    if (!honours(spec, a.backend) && !honours(spec, b.backend)) continue;
    const OptionValue& va = oa.at(spec.name);
    const OptionValue& vb = ob.at(spec.name);
    // An option the backend resolved (cuda-fusion auto -> block): the value that ran counts as well as the one asked.
    auto resolved = [&spec](const RunReport& r) -> const ResolvedOption* {
      for (const ResolvedOption& o : r.resolved_options)
        if (o.option == spec.name) return &o;
      return nullptr;
    };
    const ResolvedOption *xa = resolved(a), *xb = resolved(b);
    const std::string ran_a = xa != nullptr ? xa->resolved : va.value, ran_b = xb != nullptr ? xb->resolved : vb.value;
    if (va.value == vb.value && ran_a == ran_b) continue;
    auto shown = [](const OptionValue& v, const ResolvedOption* x) {
      std::string value = v.value.empty() ? "(unset)" : v.value;
      if (x != nullptr && x->resolved != v.value) value += " → " + x->resolved;
      return v.source == OptionSource::default_value ? value : value + " (" + to_string(v.source) + ")";
    };
    // A backend that ignores the option ran the same either way.
    const bool matters = honours(spec, a.backend) && honours(spec, b.backend) && a.backend == b.backend;
    add(spec.name, shown(va, xa), shown(vb, xb), Weight::note,
        !matters         ? spec.name + " applies to one of the two backends only"
        : ran_a == ran_b ? "asked differently, the same value ran (" + ran_a + ")"
                         : spec.help);
  }
  // The checksum covers the whole input tensor: another batch or size of the same image changes it, and that
  // difference is stated above. Same name, same shape, other data (an image file changed) shows the checksums.
  const bool same_shape = ca.batch == cb.batch && ca.height == cb.height && ca.width == cb.width;
  if (ca.input_name != cb.input_name || (same_shape && a.input_checksum != b.input_checksum)) {
    const bool same_name = ca.input_name == cb.input_name;
    add("input", same_name ? ca.input_name + " [" + a.input_checksum.substr(0, 12) + "]" : ca.input_name,
        same_name ? cb.input_name + " [" + b.input_checksum.substr(0, 12) + "]" : cb.input_name, Weight::note,
        "different input data: times rarely depend on it, outputs do");
  }
  if (ca.iters != cb.iters || ca.warmup != cb.warmup)
    add("iterations", std::to_string(ca.warmup) + " warm-up + " + std::to_string(ca.iters),
        std::to_string(cb.warmup) + " warm-up + " + std::to_string(cb.iters), Weight::note,
        "different sample counts: the percentiles are of different precision");

  // The software.
  if (a.driver != b.driver) add("driver", a.driver, b.driver, Weight::note, "different NVIDIA driver");
  if (a.cuda_runtime != b.cuda_runtime)
    add("CUDA runtime", a.cuda_runtime, b.cuda_runtime, Weight::note, "different CUDA runtime");
  if (a.cudnn != b.cudnn) add("cuDNN", a.cudnn, b.cudnn, Weight::note, "different cuDNN");
  if (a.commit != b.commit) add("commit", a.commit, b.commit, Weight::note, "built from different source");

  std::stable_sort(out.differences.begin(), out.differences.end(),
                   [](const SettingDifference& x, const SettingDifference& y) {
                     return static_cast<int>(x.weight) > static_cast<int>(y.weight);
                   });
  return out;
}

}  // namespace mnv2
