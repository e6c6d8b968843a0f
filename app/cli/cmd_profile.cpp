// mnv2 profile: an end-to-end run, then a per-layer run, through the profile study: the table and the reports;
// or, with --ncu-command, the Nsight Compute command line of one layer (the ncu-command study).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "commands.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/ncu.h"
#include "mnv2/printable.h"
#include "mnv2/profiler.h"
#include "mnv2/studies.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {
namespace {

void print_profile_table(const RunReport& r) {
  std::printf("%-4s %-22s %-18s %-16s %10s %10s %7s %9s %9s %s\n", "idx", "name", "kind", "output", "median_us",
              "p90_us", "share", "GFLOP/s", "GB/s", r.timer == "cupti_kernel" ? "kernels" : "variant");
  for (const auto& lp : r.layers) {
    const Layer& l = r.topology[static_cast<size_t>(lp.layer)];
    const StepProfile& p = r.steps[static_cast<size_t>(lp.step)];
    const std::string out = r.layer_stats[static_cast<size_t>(lp.layer)].output.str();
    if (p.layers.front() != lp.layer) {
      std::printf("%-4d %-22s %-18s %-16s %10s   (fused into %s)\n", l.index, l.name.c_str(), to_string(l.kind),
                  out.c_str(), "-", p.name.c_str());
      continue;
    }
    std::string detail = p.variant;
    if (r.timer == "cupti_kernel") {
      detail = std::to_string(static_cast<int>(std::lround(p.kernels_per_iter))) + "x ";
      for (size_t k = 0; k < p.kernel_names.size() && k < 2; ++k) {
        std::string n = p.kernel_names[k].substr(0, 48);
        detail += (k ? "; " : "") + n;
      }
      if (p.timers_disagree) detail += "  [event " + us(p.event_ns->median) + " us]";
    }
    std::printf("%-4d %-22s %-18s %-16s %10s %10s %6.2f%% %9.1f %9.1f %s\n", l.index, l.name.c_str(), to_string(l.kind),
                out.c_str(), us(p.time_ns.median).c_str(), us(p.time_ns.p90).c_str(), p.share * 100, p.gflops,
                p.gbytes_per_s, detail.c_str());
  }
}

int print_ncu_command(const Args& args, const ProfileRequest& req) {
  const std::string& backend = req.backends.front();
  if (is_host_backend(backend))
    throw UsageError("--ncu-command needs a GPU backend (--backend cudnn or cuda): the " + backend +
                     " backend launches no kernels");
  NcuCommandConfig c;
  c.mnv2_path = std::filesystem::read_symlink("/proc/self/exe").string();
  if (!req.m.location.path.empty()) c.model_path = std::filesystem::absolute(req.m.location.path).string();
  c.run = req.base;
  c.run.backend = backend;
  if (auto image = args.get("--image")) c.image = std::filesystem::absolute(*image).string();
  if (auto tensor = args.get("--tensor")) c.tensor = std::filesystem::absolute(*tensor).string();
  c.layer = *args.get("--ncu-command");
  const NcuCommand command = ncu_command(req.m.model, c);
  if (!command.warning.empty()) std::cerr << "WARNING: " << command.warning << "\n";
  std::cout << shell_join(command.argv) << "\n";
  return 0;
}

}  // namespace

void declare_profile(Args& a) {
  run_options(a, false);
  report_options(a, true);
  a.value("--ncu-command",
          "instead: print the Nsight Compute command line that profiles only this layer's "
          "kernels (index or name)");
  target_option(a);
}

int cmd_profile(const Args& args, const OptionValues& options) {
  if (args.get("--target")) {
    if (args.get("--ncu-command")) throw UsageError("--ncu-command prints a line for this machine: not with --target");
    return run_on_target(args, options, "profile");
  }
  ProfileRequest req = parse_profile_request(args, options, false);
  if (args.get("--ncu-command")) return print_ncu_command(args, req);
  ProfileConfig cfg = req.base;
  cfg.backend = req.backends.front();
  RunReport r = profile(req.m.model, cfg, stderr_progress(cfg.backend));
  print_warnings(std::cout, req.m.model);
  std::printf("model %s; input %s; batch %d; %dx%d; %s; warm-up %d, %d timed runs per phase; percentiles: type 7\n",
              printable(r.model_source).c_str(), printable(r.config.input_name).c_str(), r.config.batch,
              r.config.height, r.config.width, to_string(r.config.precision), r.config.warmup, r.config.iters);
  print_profile_table(r);
  print_summary(r);
  put_reports(args, {r});
  return 0;
}

}  // namespace mnv2::cli
