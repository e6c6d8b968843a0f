// mnv2 deep-dive: one layer's step under Nsight Compute, through the deep-dive study (mnv2/deep_dive.h): speed of
// light, occupancy and its limiter, the top warp stalls, L1/L2/DRAM bytes and both tensor pipes, per kernel and over
// the step, beside the layer's measured time where the run is a profile report.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "commands.h"
#include "mnv2/deep_dive.h"
#include "mnv2/error.h"
#include "mnv2/ncu.h"
#include "mnv2/report.h"
#include "mnv2/studies.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {
namespace {

std::string fixed(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char b[64];
  std::snprintf(b, sizeof b, format, *v);
  return b;
}

std::string bytes(const std::optional<double>& v) {
  if (!v) return "-";
  char b[64];
  if (*v >= 1e6)
    std::snprintf(b, sizeof b, "%.2f MB", *v / 1e6);
  else if (*v >= 1e3)
    std::snprintf(b, sizeof b, "%.1f kB", *v / 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f B", *v);
  return b;
}

void print_row(const std::string& label, const NcuKernel& k) {
  std::string stalls;
  for (size_t i = 0; i < k.stalls.size() && i < 3; ++i)
    stalls += (i ? ", " : "") + k.stalls[i].reason + " " + fixed(k.stalls[i].warps_per_issue, "%.2f");
  std::printf("%-10s %9s %6s %6s %6s %13s %-22s %6s %6s %10s %10s %10s  %s\n", label.c_str(),
              fixed(k.duration_ns ? std::optional<double>(*k.duration_ns / 1e3) : std::nullopt, "%.2f").c_str(),
              fixed(k.sm_throughput_pct, "%.1f").c_str(), fixed(k.memory_throughput_pct, "%.1f").c_str(),
              fixed(k.dram_throughput_pct, "%.1f").c_str(),
              (fixed(k.achieved_occupancy_pct, "%.1f") + " / " + fixed(k.theoretical_occupancy_pct, "%.1f")).c_str(),
              (k.occupancy_limiter.empty() ? std::string("-")
                                           : k.occupancy_limiter + " (" + fixed(k.occupancy_limit_blocks, "%.0f") + ")")
                  .c_str(),
              fixed(k.hmma_pipe_pct, "%.1f").c_str(), fixed(k.gmma_pipe_pct, "%.1f").c_str(), bytes(k.bytes.l1).c_str(),
              bytes(k.bytes.l2).c_str(), bytes(k.bytes.dram).c_str(), stalls.c_str());
}

void print_deep_dive(const DeepDiveResult& r) {
  std::string layers;
  for (size_t i = 0; i < r.layers.size(); ++i)
    layers += (i ? ", " : "") + std::to_string(r.layers[i]) +
              (i < r.layer_names.size() ? " " + r.layer_names[i] : std::string());
  std::printf("deep dive of layer %d (%s): step '%s', covering layers %s\n", r.layer, r.backend.c_str(),
              r.step_name.c_str(), layers.c_str());
  const NcuStepSummary& s = r.ncu.summary;
  std::printf(
      "Nsight Compute %s, clocks as the GPU sets them (--clock-control none); the step ran %d time%s under ncu, "
      "the last shown\n",
      r.ncu.ncu_version.c_str(), s.runs_in_report, s.runs_in_report == 1 ? "" : "s");
  if (r.measured_median_ns)
    std::printf("measured in the run: median %.2f us (%s timer)%s\n", *r.measured_median_ns / 1e3, r.timer.c_str(),
                r.intensity_flop_per_byte ? (", roofline point " + fixed(r.intensity_flop_per_byte, "%.2f") +
                                             " FLOP/byte at " + fixed(r.gflops, "%.1f") + " GFLOP/s")
                                                .c_str()
                                          : "");
  std::printf("%-10s %9s %6s %6s %6s %13s %-22s %6s %6s %10s %10s %10s  %s\n", "kernel", "time_us", "SM%", "mem%",
              "DRAM%", "occ% ach/theo", "occupancy limiter", "hmma%", "gmma%", "L1", "L2", "DRAM",
              "top stalls (warps/issue)");
  for (size_t i = 0; i < s.kernels.size(); ++i) print_row("#" + std::to_string(i + 1), s.kernels[i]);
  print_row("step", s.total);
  for (size_t i = 0; i < s.kernels.size(); ++i) std::printf("#%zu %s\n", i + 1, s.kernels[i].name.c_str());
  // ncu's advice (its details page's rules), the three with the largest estimated speedup per kernel; --json has all.
  for (size_t i = 0; i < s.kernels.size(); ++i)
    for (size_t n = 0; n < s.kernels[i].notes.size() && n < 3; ++n)
      std::printf("#%zu %s\n", i + 1, s.kernels[i].notes[n].c_str());
}

}  // namespace

void declare_deep_dive(Args& a) {
  run_options(a, false);
  a.value("--layer", "the layer (index or name) whose step Nsight Compute profiles");
  a.input("--report",
          "the layer of this profile report's run (its options, input and step names; its measured time "
          "shown beside ncu's) instead of the run options");
  a.value("--ncu", "the Nsight Compute program (default: ncu on PATH)");
  a.output("--json", "write the deep dive as JSON to this file ('-': standard output)");
}

int cmd_deep_dive(const Args& args, const OptionValues& options) {
  const auto layer = args.get("--layer");
  if (!layer) throw UsageError("deep-dive needs --layer (an index or a name from 'mnv2 topology')");
  DeepDiveConfig config;
  config.mnv2_path = std::filesystem::read_symlink("/proc/self/exe").string();
  config.ncu = args.get_or("--ncu", "ncu");
  const DeepDiveProgress progress = [](const std::string& line) {
    if (!line.empty()) std::cerr << line << "\n";
    return true;
  };
  DeepDiveResult r;
  if (const auto report = args.get("--report")) {
    const std::vector<RunReport> runs = read_reports_file(*report);
    if (runs.size() != 1)
      throw UsageError("--report " + *report + " holds " + std::to_string(runs.size()) +
                       " runs: give a profile report of one run");
    const RunReport& run = runs.front();
    Model topology;
    topology.layers = run.topology;
    r = deep_dive(run, resolve_layer(topology, *layer), config, progress);
  } else {
    ProfileRequest req = parse_profile_request(args, options, false);
    NcuCommandConfig c;
    c.mnv2_path = config.mnv2_path;
    if (!req.m.location.path.empty()) c.model_path = std::filesystem::absolute(req.m.location.path).string();
    c.run = req.base;
    c.run.backend = req.backends.front();
    if (auto image = args.get("--image")) c.image = std::filesystem::absolute(*image).string();
    if (auto tensor = args.get("--tensor")) c.tensor = std::filesystem::absolute(*tensor).string();
    c.layer = *layer;
    r = deep_dive(req.m.model, c, config, progress);
  }
  print_deep_dive(r);
  if (args.wants("--json")) args.put("--json", deep_dive_json(r));
  return 0;
}

}  // namespace mnv2::cli
