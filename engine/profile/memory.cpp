// The memory report (see mnv2/memory.h).
#include "mnv2/memory.h"

#include <cstdio>
#include <sstream>

#include "mnv2/bench.h"
#include "mnv2/error.h"
#include "mnv2/json.h"
#include "mnv2/report.h"

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

DeviceMemoryProbe::DeviceMemoryProbe(bool gpu_backend) {
  if (!gpu_backend) return;
  const gpu_plugin::Api* gpu = gpu_plugin::api();
  // Creates the context first, so that it is not counted as the network's.
  if (gpu == nullptr || !gpu->create_context()) return;
  before_ = device_memory_use();
  active_ = before_.used_bytes >= 0;
  peak_ = before_.used_bytes;
}

void DeviceMemoryProbe::sample() {
  if (!active_) return;
  peak_ = std::max(peak_, device_memory_use().used_bytes);
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
  DeviceMemoryProbe probe(!is_host_backend(backend_name));
  auto net = backend->prepare(model, config);
  probe.sample();
  net->run(random_input(Shape{config.batch, model.input_channels, config.height, config.width}, 1));
  probe.sample();
  s.held = net->memory();
  probe.finish(s.held);
  return s;
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

std::string memory_csv(const MemoryStudy& s) {
  std::ostringstream out;
  out << "backend,precision,batch,input_hw,layer_index,layer_name,kind,block,output_shape,activation_bytes,"
         "weight_bytes,weight_tensors\n";
  const std::string hw = std::to_string(s.config.height) + "x" + std::to_string(s.config.width);
  for (const LayerMemory& m : s.layers) {
    const Layer& l = s.topology.at(static_cast<size_t>(m.layer));
    out << s.backend << ',' << to_string(s.config.precision) << ',' << s.config.batch << ',' << hw << ',' << l.index
        << ',' << csv_quote(l.name) << ',' << to_string(l.kind) << ',' << csv_quote(l.block_name) << ','
        << s.stats.at(static_cast<size_t>(m.layer)).output.str() << ',' << m.activation_bytes << ',' << m.weight_bytes
        << ',' << m.weight_tensors << "\n";
  }
  return out.str();
}

std::string memory_json(const MemoryStudy& s) {
  json::Value j;
  j.set("schema", "mnv2.memory/1");
  j.set("backend", s.backend);
  j.set("backend_description", s.backend_description);
  j.set("precision", to_string(s.config.precision));
  j.set("batch", s.config.batch);
  j.set("height", s.config.height);
  j.set("width", s.config.width);
  json::Value model;
  model.set("weight_bytes", s.model_weight_bytes);
  model.set("activation_bytes", s.model_activation_bytes);
  model.set("weight_tensors", s.weight_tensors);
  model.set("activation_tensors", s.activation_tensors);
  j.set("model", model);
  j.set("held", memory_json(s.held));
  json::Array layers;
  for (const LayerMemory& m : s.layers) {
    const Layer& l = s.topology.at(static_cast<size_t>(m.layer));
    json::Value lj;
    lj.set("index", l.index);
    lj.set("name", l.name);
    lj.set("kind", to_string(l.kind));
    lj.set("block_name", l.block_name);
    lj.set("activation_bytes", m.activation_bytes);
    lj.set("weight_bytes", m.weight_bytes);
    lj.set("weight_tensors", m.weight_tensors);
    layers.push_back(lj);
  }
  j.set("layers", json::Value(layers));
  json::Array warnings;
  for (const auto& w : s.warnings) warnings.emplace_back(w);
  j.set("warnings", json::Value(warnings));
  return json::dump(j, 2) + "\n";
}

}  // namespace mnv2
