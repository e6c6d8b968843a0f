// mnv2 plan: the cuda backend's plan for a GPU this machine need not have: which layers each step covers, which
// kernel and tile runs it (the planner is plain C++ in the engine; nothing is allocated or launched).
#include <iostream>
#include <string>

#include "commands.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/error.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_plan(Args& a) {
  model_options(a);
  a.value("--gpu", "t4, a100, rtx4090 or h200: the GPU's properties (default h200)");
  a.value("--code-arch", "the architecture the code was compiled for, e.g. 75 for compute_75 PTX (default: the GPU's)");
  batch_option(a);
  size_option(a);
  precision_option(a);
  cuda_option_set(a);
}

int cmd_plan(const Args& args, const OptionValues& options) {
  if (!args.positionals().empty()) throw UsageError("plan takes no positional arguments");
  const std::string gpu_name = args.get_or("--gpu", "h200");
  GpuProperties gpu;
  if (gpu_name == "t4") {
    gpu = GpuProperties::t4();
  } else if (gpu_name == "a100") {
    gpu = GpuProperties::a100();
  } else if (gpu_name == "rtx4090") {
    gpu = GpuProperties::rtx4090();
  } else if (gpu_name == "h200") {
    gpu = GpuProperties::h200();
  } else {
    throw UsageError("unknown --gpu '" + gpu_name + "' (choose t4, a100, rtx4090, h200)");
  }
  if (auto arch = args.get("--code-arch")) gpu.code_arch = parse_int(*arch, "--code-arch", 50, 200);
  LoadedModel m = load_model(args, options);
  const PrepareConfig pc = prepare_config_of(options, {m.model.input_height, m.model.input_width});
  print_warnings(std::cout, m.model);
  std::cout << describe(plan_cuda_network(m.model, pc, gpu));
  return 0;
}

}  // namespace mnv2::cli
