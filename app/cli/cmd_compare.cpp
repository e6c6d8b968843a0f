// mnv2 compare: each backend profiled, side by side, with each layer's output error against the first backend,
// through the compare study.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/studies.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_compare(Args& a) {
  run_options(a, true);
  report_options(a, true);
  target_option(a);
}

int cmd_compare(const Args& args, const OptionValues& options) {
  if (args.get("--target")) return run_on_target(args, options, "compare");
  ProfileRequest req = parse_profile_request(args, options, true);
  CompareConfig config;
  config.backends = req.backends;
  config.base = req.base;
  for (const std::string& note : resolve_compare(req.backends, req.base.precision).notes) std::cerr << note << "\n";
  auto phases = std::make_shared<std::vector<ProfileProgress>>();
  for (const auto& b : req.backends) phases->push_back(stderr_progress(b));
  CompareResult result =
      run_compare(req.m.model, config, [&](int i, const std::string& b, const std::string& phase, int done, int total) {
        if (phase != "diff") return (*phases)[static_cast<size_t>(i)](phase, done, total);
        if (done == 0) std::cerr << "diff " << b << " vs " << req.backends.front() << "\n";
        return true;
      });
  std::vector<RunReport>& reports = result.reports;

  print_warnings(std::cout, req.m.model);
  std::printf("model %s; input %s; batch %d; %dx%d; %s; warm-up %d, %d timed runs per phase\n",
              req.m.model.source.c_str(), req.base.input_name.empty() ? "random(seed=1)" : req.base.input_name.c_str(),
              req.base.batch, req.base.height, req.base.width, to_string(req.base.precision), req.base.warmup,
              req.base.iters);
  std::printf("%-4s %-22s %-18s", "idx", "name", "kind");
  for (const auto& r : reports) std::printf(" %12s", (r.backend + "_us").c_str());
  for (size_t i = 1; i < reports.size(); ++i)
    std::printf(" %13s %10s", (reports[i].backend + "_relL2").c_str(), "max_abs");
  std::printf("\n");
  for (size_t l = 0; l < reports.front().layers.size(); ++l) {
    const Layer& layer = reports.front().topology[l];
    std::printf("%-4d %-22s %-18s", layer.index, layer.name.c_str(), to_string(layer.kind));
    for (const auto& r : reports) {
      const StepProfile& p = r.steps[static_cast<size_t>(r.layers[l].step)];
      std::printf(" %12s", p.layers.front() == static_cast<int>(l) ? us(p.time_ns.median).c_str() : "(fused)");
    }
    for (size_t i = 1; i < reports.size(); ++i) {
      const LayerDiff& d = reports[i].diff->layers[l];
      if (d.compared)
        std::printf(" %13.3e %10.3e", d.error.rel_l2, d.error.max_abs);
      else
        std::printf(" %13s %10s", "-", "-");
    }
    std::printf("\n");
  }
  for (const auto& r : reports) print_summary(r);
  for (size_t i = 1; i < reports.size(); ++i) {
    const DiffReport& d = *reports[i].diff;
    std::printf("diff %s vs %s (first image): logits rel L2 %.3e, max abs %.3e, cosine %.9f; top-5 %s; ",
                d.backend.c_str(), d.reference.c_str(), d.logits.rel_l2, d.logits.max_abs, d.logits.cosine,
                d.top5_agree ? "agrees" : "DIFFERS");
    if (d.first_divergent_layer >= 0)
      std::printf("first layer over rel L2 %.0e: %d\n", d.threshold, d.first_divergent_layer);
    if (!d.outputs_plan.empty())
      std::printf("%s: %s\n", d.backend.c_str(), d.outputs_plan.c_str());
    else
      std::printf("no layer over rel L2 %.0e\n", d.threshold);
  }
  put_reports(args, reports);
  return 0;
}

}  // namespace mnv2::cli
