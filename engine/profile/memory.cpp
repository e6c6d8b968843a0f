// The memory report (see mnv2/memory.h).
#include "mnv2/memory.h"

#include <cstdio>
#include <sstream>

#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/host_memory.h"

#include "gpu/plugin_api.h"

namespace mnv2 {

std::vector<LayerMemory> layer_memory(const Model& model, const std::vector<LayerStats>& stats) {
  std::vector<LayerMemory> out;
  for (size_t i = 0; i < model.layers.size() && i < stats.size(); ++i) {
    const Layer& l = model.layers[i];
    LayerMemory m;
    m.layer = l.index;
    m.activation_bytes = stats[i].activation_bytes;
    m.weight_bytes = stats[i].params * static_cast<int64_t>(sizeof(float));
    m.weight_tensors = (stats[i].params > 0 ? 1 : 0) + (l.bias.empty() ? 0 : 1);
    out.push_back(m);
  }
  return out;
}

DeviceMemoryUse device_memory_use(int device) {
  DeviceMemoryUse use;
  const gpu_plugin::Api* gpu = gpu_plugin::api();
  int64_t used = 0, total = 0;
  if (gpu != nullptr && gpu->memory_use(device, &used, &total)) {
    use.used_bytes = used;
    use.total_bytes = total;
  }
  return use;
}

void check_sizes_fit(const Model& model, const std::string& backend, const PrepareConfig& config) {
  const Shape input{config.batch, model.input_channels, config.height, config.width};
  const std::vector<LayerStats> stats = analyse(model, config.batch, config.height, config.width);
  const std::string where = backend + ": out of ";
  const std::string run = " for batch " + std::to_string(config.batch) + " at " + std::to_string(config.height) + "x" +
                          std::to_string(config.width);
  const char* what = "the input, the logits and the largest layer's input and output at once, at the least";
  const int64_t available = host_memory_available();
  if (is_host_backend(backend)) {
    const int64_t need = activation_floor_bytes(model, input, stats, sizeof(float));
    if (available >= 0 && need > available)
      throw Error(where + "host memory" + run + " (needs " + format_gib(need) + " for " + what + "; " +
                  format_gib(available) + " available)");
    return;
  }
  // A GPU backend: its input batch is host memory too (float32), and its activations device memory.
  const int64_t input_bytes = input.numel() * static_cast<int64_t>(sizeof(float));
  if (available >= 0 && input_bytes > available)
    throw Error(where + "host memory" + run + " (needs " + format_gib(input_bytes) + " for the input batch; " +
                format_gib(available) + " available)");
  const int64_t need = activation_floor_bytes(model, input, stats, config.precision == Precision::fp16 ? 2 : 4);
  if (const DeviceMemoryUse use = device_memory_use(config.device); use.used_bytes >= 0 && use.total_bytes > 0) {
    const int64_t free_bytes = use.total_bytes - use.used_bytes;
    if (need > free_bytes)
      throw Error(where + "device memory" + run + ": " + what + " need " + format_gib(need) + "; " +
                  format_gib(free_bytes) + " of " + format_gib(use.total_bytes) + " are free");
  }
}

DeviceMemoryProbe::DeviceMemoryProbe(bool gpu_backend, int device) : device_(device) {
  if (!gpu_backend) return;
  const gpu_plugin::Api* gpu = gpu_plugin::api();
  // Creates the context first, so that it is not counted as the network's.
  if (gpu == nullptr || !gpu->create_context(device)) return;
  before_ = device_memory_use(device);
  active_ = before_.used_bytes >= 0;
  peak_ = before_.used_bytes;
}

void DeviceMemoryProbe::sample() {
  if (!active_) return;
  peak_ = std::max(peak_, device_memory_use(device_).used_bytes);
}

void DeviceMemoryProbe::finish(MemoryReport& report) const {
  if (!active_) return;
  report.device_used_before_bytes = before_.used_bytes;
  report.device_used_peak_bytes = peak_;
  report.device_total_bytes = before_.total_bytes;
}

MemoryStudy memory_study(const Model& model, const std::string& backend_name, const PrepareConfig& config) {
  MemoryStudy s;
  s.backend = backend_name;
  s.config = config;
  s.warnings = model.warnings;
  s.stats = analyse(model, config.batch, config.height, config.width);
  s.layers = layer_memory(model, s.stats);
  for (const Layer& l : model.layers) {
    Layer copy = l;
    copy.weight.clear();
    copy.bias.clear();
    s.topology.push_back(std::move(copy));
  }
  s.activation_tensors = 1;  // the input
  for (const LayerMemory& m : s.layers) {
    s.model_weight_bytes += m.weight_bytes;
    s.model_activation_bytes += m.activation_bytes;
    s.weight_tensors += m.weight_tensors;
    ++s.activation_tensors;
  }
  auto backend = make_backend(backend_name);
  if (Availability a = backend->availability(); !a.available)
    throw Error("backend '" + backend_name + "' is not available: " + a.reason);
  s.backend_description = backend->description();
  const bool gpu = !is_host_backend(backend_name);
  if (gpu) gpu_device(config.device);  // a UsageError for a device this machine does not show
  DeviceMemoryProbe probe(gpu, config.device);
  auto net = backend->prepare(model, config);
  probe.sample();
  net->run(random_input(Shape{config.batch, model.input_channels, config.height, config.width}, 1));
  probe.sample();
  s.held = net->memory();
  probe.finish(s.held);
  return s;
}

std::string format_gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return buf;
}

std::string format_mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

std::string describe_memory(const MemoryReport& m) {
  std::string s = format_mib(m.total()) + " (weights " + format_mib(m.weight_bytes) + ", activations " +
                  format_mib(m.activation_bytes) + ", workspace " + format_mib(m.workspace_bytes) + ")";
  if (m.tensors > 0) s += " in " + std::to_string(m.tensors) + " buffers";
  if (m.driver_held_bytes() >= 0)
    s += "; driver (cudaMemGetInfo, whole device): " + format_mib(m.device_used_before_bytes) +
         " in use before prepare, " + format_mib(m.device_used_peak_bytes) +
         " at peak: " + format_mib(m.driver_held_bytes()) +
         " taken by this network (library handles and workspaces included)";
  return s;
}

}  // namespace mnv2
