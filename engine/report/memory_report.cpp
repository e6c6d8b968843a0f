// The memory study's CSV and JSON, and a MemoryReport's JSON (see mnv2/memory_report.h).
#include "mnv2/memory_report.h"

#include <algorithm>

#include <sstream>

#include "mnv2/csv.h"
#include "mnv2/error.h"

namespace mnv2 {

using json::Json;

void to_json(Json& j, const MemoryReport& m) {
  j = Json{{"weight_bytes", m.weight_bytes},
           {"activation_bytes", m.activation_bytes},
           {"workspace_bytes", m.workspace_bytes},
           {"total_bytes", m.total()},
           {"tensors", m.tensors},
           {"device_used_before_bytes", m.device_used_before_bytes},
           {"device_used_peak_bytes", m.device_used_peak_bytes},
           {"device_total_bytes", m.device_total_bytes},
           {"driver_held_bytes", m.driver_held_bytes()}};
}

void from_json(const Json& j, MemoryReport& m) {
  // Sizes are never negative; a device figure is -1 where it was not measured.
  auto bytes_at = [&j](const char* key, int64_t lowest) {
    const int64_t x = json::int_at(j, key);
    if (x < lowest) throw Error(std::string(key) + " " + std::to_string(x) + " is negative");
    return x;
  };
  m = MemoryReport{};
  m.weight_bytes = bytes_at("weight_bytes", 0);
  m.activation_bytes = bytes_at("activation_bytes", 0);
  m.workspace_bytes = bytes_at("workspace_bytes", 0);
  // Absent in reports written before the memory report.
  if (json::find(j, "tensors")) m.tensors = static_cast<int>(std::min<int64_t>(bytes_at("tensors", 0), 1 << 30));
  if (json::find(j, "device_used_before_bytes")) m.device_used_before_bytes = bytes_at("device_used_before_bytes", -1);
  if (json::find(j, "device_used_peak_bytes")) m.device_used_peak_bytes = bytes_at("device_used_peak_bytes", -1);
  if (json::find(j, "device_total_bytes")) m.device_total_bytes = bytes_at("device_total_bytes", -1);
}

std::string memory_csv(const MemoryStudy& s) {
  std::ostringstream out;
  out << "backend,precision,batch,input_hw,layer_index,layer_name,kind,block,output_shape,activation_bytes,"
         "weight_bytes,weight_tensors\n";
  const std::string hw = std::to_string(s.config.height) + "x" + std::to_string(s.config.width);
  for (const LayerMemory& m : s.layers) {
    const Layer& l = s.topology.at(static_cast<size_t>(m.layer));
    out << csv_quote(s.backend) << ',' << to_string(s.config.precision) << ',' << s.config.batch << ',' << hw << ','
        << l.index << ',' << csv_quote(l.name) << ',' << to_string(l.kind) << ',' << csv_quote(l.block_name) << ','
        << s.stats.at(static_cast<size_t>(m.layer)).output.str() << ',' << m.activation_bytes << ',' << m.weight_bytes
        << ',' << m.weight_tensors << "\n";
  }
  return out.str();
}

std::string memory_json(const MemoryStudy& s) {
  Json layers = Json::array();
  for (const LayerMemory& m : s.layers) {
    const Layer& l = s.topology.at(static_cast<size_t>(m.layer));
    layers.push_back({{"index", l.index},
                      {"name", l.name},
                      {"kind", to_string(l.kind)},
                      {"block_name", l.block_name},
                      {"activation_bytes", m.activation_bytes},
                      {"weight_bytes", m.weight_bytes},
                      {"weight_tensors", m.weight_tensors}});
  }
  const Json j = {{"schema", "mnv2.memory/1"},
                  {"backend", s.backend},
                  {"backend_description", s.backend_description},
                  {"precision", to_string(s.config.precision)},
                  {"batch", s.config.batch},
                  {"height", s.config.height},
                  {"width", s.config.width},
                  {"model",
                   {{"weight_bytes", s.model_weight_bytes},
                    {"activation_bytes", s.model_activation_bytes},
                    {"weight_tensors", s.weight_tensors},
                    {"activation_tensors", s.activation_tensors}}},
                  {"held", s.held},
                  {"layers", layers},
                  {"warnings", s.warnings}};
  return json::dump(j, 2) + "\n";
}

}  // namespace mnv2
