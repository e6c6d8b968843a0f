// mnv2 memory: activation and weight bytes per layer, what the prepared backend holds and what the driver saw,
// through the memory study.
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/memory.h"
#include "mnv2/memory_report.h"
#include "output.h"
#include "remote_run.h"
#include "run_request.h"

namespace mnv2::cli {

void declare_memory(Args& a) {
  model_options(a);
  backend_option(a);
  batch_option(a);
  size_option(a);
  precision_option(a);
  report_options(a, false);
  device_option(a);
  cuda_option_set(a);
  target_option(a);
}

int cmd_memory(const Args& args, const OptionValues& options) {
  if (args.get("--target")) return study_on_target(args, options, "memory");
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  const std::string backend = args.get_or("--backend", "cpu");
  make_backend(backend);  // unknown names are usage errors
  LoadedModel m = load_model(args, options);
  const PrepareConfig pc = prepare_config_of(options, {m.model.input_height, m.model.input_width});
  const MemoryStudy s = memory_study(m.model, backend, pc);
  print_warnings(std::cout, m.model);
  std::printf("model %s; backend %s (%s); batch %d; %dx%d; %s\n", m.model.source.c_str(), backend.c_str(),
              s.backend_description.c_str(), pc.batch, pc.height, pc.width, to_string(pc.precision));
  std::printf("%-4s %-22s %-18s %-18s %16s %14s\n", "idx", "name", "kind", "output", "activation_bytes",
              "weight_bytes");
  for (const LayerMemory& l : s.layers) {
    const Layer& layer = s.topology[static_cast<size_t>(l.layer)];
    std::printf("%-4d %-22s %-18s %-18s %16lld %14lld\n", layer.index, layer.name.c_str(), to_string(layer.kind),
                s.stats[static_cast<size_t>(l.layer)].output.str().c_str(), static_cast<long long>(l.activation_bytes),
                static_cast<long long>(l.weight_bytes));
  }
  std::printf("model: weights %s in %d tensors; activations %s in %d tensors (the input and every layer's output)\n",
              format_mib(s.model_weight_bytes).c_str(), s.weight_tensors, format_mib(s.model_activation_bytes).c_str(),
              s.activation_tensors);
  std::printf("held by the %s backend: %s\n", backend.c_str(), describe_memory(s.held).c_str());
  if (s.held.driver_held_bytes() < 0)
    std::printf("driver: not measured (%s)\n",
                backend == "cpu" ? "host backend: host memory, as accounted above" : "no reading");
  if (args.wants("--csv")) args.put("--csv", memory_csv(s));
  if (args.wants("--json")) args.put("--json", memory_json(s));
  return 0;
}

}  // namespace mnv2::cli
