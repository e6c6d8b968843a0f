// The memory study's files (CSV, JSON schema mnv2.memory/1) and a MemoryReport's JSON, as every report
// writes it ("memory" of a run, of a bench result, "held" of a study).
#pragma once

#include <string>

#include "mnv2/json_io.h"
#include "mnv2/memory.h"

namespace mnv2 {

// nlohmann's to_json/from_json: `json::Json j = memory;`, `j.get<MemoryReport>()`. Fields an older report
// lacks (tensors, device_*) stay default; a wrong type throws Error naming the key.
void to_json(json::Json& j, const MemoryReport& memory);
void from_json(const json::Json& j, MemoryReport& memory);

// One row per layer: backend, precision, batch, input size, the layer, its output and its bytes.
std::string memory_csv(const MemoryStudy& study);
// Schema mnv2.memory/1: configuration, the model's totals, what the backend held, one record per layer.
std::string memory_json(const MemoryStudy& study);

}  // namespace mnv2
