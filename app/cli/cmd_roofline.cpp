// mnv2 roofline: a profile placed under the measured ceilings of the device it ran on (cached per device), through
// the profile and roofline studies: each step's intensity and GFLOP/s against the roof.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <vector>

#include "commands.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/profiler.h"
#include "mnv2/roofline.h"
#include "mnv2/roofline_report.h"
#include "mnv2/studies.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_roofline(Args& a) {
  run_options(a, false);
  report_options(a, false);
  a.flag("--recalibrate", "measure the ceilings again instead of reading the cache");
  target_option(a);
}

int cmd_roofline(const Args& args, const OptionValues& options) {
  if (args.get("--target")) return study_on_target(args, options, "roofline");
  if (args.get("--trace")) throw UsageError("roofline writes --csv and --json (its points); profile writes traces");
  ProfileRequest req = parse_profile_request(args, options, false);
  ProfileConfig cfg = req.base;
  cfg.backend = req.backends.front();
  if (Availability a = make_backend(cfg.backend)->availability(); !a.available)
    throw Error("backend '" + cfg.backend + "' is not available: " + a.reason);
  const RunReport r = profile(req.m.model, cfg, stderr_progress(cfg.backend));
  const bool tty = isatty(2);
  if (tty) std::cerr << "calibrating (or reading the cache) ..." << std::flush;
  RooflineConfig roof;
  roof.recalibrate = args.flag("--recalibrate");
  const RooflineResult study = roofline_study(r, roof);
  if (tty) std::cerr << "\r\033[K";
  if (!study.warning.empty()) std::cerr << "WARNING: " << study.warning << "\n";
  const Ceilings& c = study.ceilings;
  print_warnings(std::cout, req.m.model);
  const std::string cache_file = roofline_cache_file();
  const std::string where = c.from_cache ? "cached in " + cache_file
                            : c.stored   ? "calibrated now, cached in " + cache_file
                                         : std::string("calibrated now, not cached");
  std::printf("%s: memory %.1f GB/s, compute %.1f GFLOP/s, ridge %.2f FLOP/byte (%s; %s)\n", c.device.c_str(),
              c.bandwidth_gb_s, c.gflop_s, c.ridge(), c.method.c_str(), where.c_str());
  std::printf("backend %s; batch %d; %dx%d; %s timer, median of %d runs\n", r.backend.c_str(), r.config.batch,
              r.config.height, r.config.width, r.timer.c_str(), r.config.iters);
  std::printf("%-4s %-26s %-18s %10s %10s %12s %7s %s\n", "idx", "step", "kind", "FLOP/B", "GFLOP/s", "roof_GFLOP/s",
              "of_roof", "bound");
  int memory_bound = 0;
  for (const RooflinePoint& p : study.points) {
    memory_bound += p.memory_bound ? 1 : 0;
    std::printf("%-4d %-26s %-18s %10.2f %10.1f %12.1f %6.1f%% %s\n", p.layer, p.name.c_str(), p.kind.c_str(),
                p.intensity, p.gflop_s, p.attainable_gflop_s,
                p.attainable_gflop_s > 0 ? 100 * p.gflop_s / p.attainable_gflop_s : 0.0,
                p.memory_bound ? "memory" : "compute");
  }
  std::printf("%zu steps: %d below the ridge (memory-bound), %zu above\n", study.points.size(), memory_bound,
              study.points.size() - static_cast<size_t>(memory_bound));
  if (args.wants("--csv")) args.put("--csv", roofline_csv(study.points));
  if (args.wants("--json")) args.put("--json", roofline_json(c, r));
  return 0;
}

}  // namespace mnv2::cli
