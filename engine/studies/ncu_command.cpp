// The ncu-command study: the Nsight Compute command line of one layer of a run (mnv2/studies.h).
#include <filesystem>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/ncu.h"
#include "mnv2/studies.h"

namespace mnv2 {
namespace {

void refuse_host_backend(const std::string& backend) {
  if (is_host_backend(backend))
    throw UsageError("the " + backend +
                     " backend launches no GPU kernels: Nsight Compute profiles cudnn and cuda runs");
}

// The command that repeats `config`'s run with only `range`'s kernels profiled: with the values the run resolved
// (cuda-fusion auto -> block) in place of the ones that asked the backend to choose, so that Nsight Compute sees
// the very plan even where its own process would resolve differently.
NcuCommand command_of(const NcuCommandConfig& config, const std::vector<ResolvedOption>& resolved, int layer,
                      std::string range, std::vector<int> step_layers, std::string warning) {
  NcuTarget t;
  t.mnv2_path = config.mnv2_path;
  t.backend = config.run.backend;
  t.model_path = config.model_path;
  t.batch = config.run.batch;
  t.height = config.run.height;
  t.width = config.run.width;
  t.options = config.run.options;
  for (const ResolvedOption& o : resolved) t.options.assign(o.option, o.resolved, OptionSource::flag);
  t.image = config.image;
  t.tensor = config.tensor;
  t.nvtx_range = range;
  t.layer = layer;
  NcuCommand c;
  c.layer = layer;
  c.nvtx_range = std::move(range);
  c.step_layers = std::move(step_layers);
  c.argv = ncu_argv(t);
  c.warning = std::move(warning);
  return c;
}

}  // namespace

NcuCommand ncu_command(const Model& model, const NcuCommandConfig& config) {
  const ProfileConfig& run = config.run;
  refuse_host_backend(run.backend);
  const int layer = resolve_layer(model, config.layer);
  // The backend's own step names: a fusing backend names the range after the fused step.
  auto backend = make_backend(run.backend);
  if (const Availability a = backend->availability(); !a.available) {
    const std::string range = default_step_name(model, layer);
    return command_of(config, {}, layer, range, {layer},
                      "backend '" + run.backend + "' cannot run here (" + a.reason + "); the NVTX range '" + range +
                          "' assumes layer " + std::to_string(layer) +
                          " runs as a step of its own: where the backend fuses it, the range is the fused step's name "
                          "(see the 'step' column of a profile report from the GPU machine)");
  }
  PrepareConfig pc{run.batch, run.height, run.width, run.precision, run.cuda, 0, run.cudnn};
  pc.device = run.device;
  const auto net = backend->prepare(model, pc);
  const ExecStep& step = net->steps().at(static_cast<size_t>(step_of_layer(net->steps(), layer)));
  return command_of(config, net->resolved_options(), layer, step.name, step.layers, {});
}

NcuCommand ncu_command(const RunReport& run, int layer, const std::string& mnv2_path) {
  refuse_host_backend(run.backend);
  if (layer < 0 || layer >= static_cast<int>(run.layers.size()))
    throw UsageError("the run has no layer " + std::to_string(layer) + " (it has " + std::to_string(run.layers.size()) +
                     ")");
  const int step = run.layers[static_cast<size_t>(layer)].step;
  if (step < 0 || step >= static_cast<int>(run.steps.size()))
    throw Error("layer " + std::to_string(layer) + " has no step in the run's report");
  NcuCommandConfig config;
  config.mnv2_path = mnv2_path;
  if (!run.model_synthetic) config.model_path = run.model_source;
  config.run = run.config;
  config.run.backend = run.backend;
  config.run.options = run.options;  // every option the run had (the cuda ones too), as its report keeps them
  // The run's input where it was a file that is still there: a raw tensor (.f32) or an image.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path input(run.config.input_name);
  if (!run.config.input_name.empty() && fs::is_regular_file(input, ec)) {
    const std::string absolute = fs::absolute(input, ec).string();
    (input.extension() == ".f32" ? config.tensor : config.image) = absolute;
  }
  // The run's own step names are exact (a fused layer's range is its step's name).
  const StepProfile& p = run.steps[static_cast<size_t>(step)];
  return command_of(config, run.resolved_options, layer, p.name, p.layers, {});
}

}  // namespace mnv2
