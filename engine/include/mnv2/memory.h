// The memory report: per layer, the activation and weight bytes of the model at a batch and input size;
// per backend, what a prepared network holds (MemoryReport) and, on a GPU, what the driver saw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"

namespace mnv2 {

struct LayerMemory {
  int layer = 0;
  int64_t activation_bytes = 0;  // the layer's output tensor, whole batch, float32
  int64_t weight_bytes = 0;      // weights and bias as imported (float32)
  int weight_tensors = 0;        // 0 (no weights), 1 (weights) or 2 (weights and bias)
};

std::vector<LayerMemory> layer_memory(const Model& model, const std::vector<LayerStats>& stats);

// Device memory in use on GPU `device` (cudaMemGetInfo); used_bytes -1 without CUDA or a device.
struct DeviceMemoryUse {
  int64_t used_bytes = -1;
  int64_t total_bytes = -1;
};
DeviceMemoryUse device_memory_use(int device);

// Fills MemoryReport's device_* fields: begin() before prepare() (after the CUDA context exists, so the
// context is not counted), sample() after prepare() and after runs, finish() into the report. Does
// nothing for host backends.
class DeviceMemoryProbe {
 public:
  DeviceMemoryProbe(bool gpu_backend, int device);
  void sample();
  void finish(MemoryReport& report) const;

 private:
  bool active_ = false;
  int device_ = 0;
  DeviceMemoryUse before_;
  int64_t peak_ = -1;
};

struct MemoryStudy {
  std::string backend, backend_description;
  PrepareConfig config;
  std::vector<Layer> topology;  // weights dropped
  std::vector<LayerStats> stats;
  std::vector<LayerMemory> layers;
  int64_t model_weight_bytes = 0;      // sum over layers
  int64_t model_activation_bytes = 0;  // sum of every layer's output (what keeping every output costs)
  int weight_tensors = 0;              // of the model
  int activation_tensors = 0;          // the input and every layer's output
  MemoryReport held;                   // the prepared network's own account, with the driver's readings
  std::vector<std::string> warnings;   // the model's
};

// The check every backend makes first in prepare(), without preparing anything: the network's least memory
// (activation_floor_bytes() from analyse()'s shapes, at the precision's bytes per value) against the host's memory
// for the cpu backends (host_memory_available()) and the device's free memory for the GPU ones (where the GPU
// plugin can tell; the backend's prepare checks again), and the input batch against the host's memory for every
// backend. Throws Error "BACKEND: out of host memory for batch B at HxW (needs ... for ...; ... available)" or
// "... out of device memory ...", or analyse()'s Error for a size the network cannot take. Front ends call it before
// they decode an input whose size the model's preprocessing decides (a 16384x16384 crop took 9.3 GB and a minute
// before the network was found not to fit).
void check_sizes_fit(const Model& model, const std::string& backend, const PrepareConfig& config);

// Prepares `backend` for `config`, runs it once on a random input and reports. Throws Error when the
// backend is unavailable or fails (out of memory included).
MemoryStudy memory_study(const Model& model, const std::string& backend, const PrepareConfig& config);

// "12.3 MiB".
std::string format_mib(int64_t bytes);
// "12.3 GiB": every memory budget's message (the backends' checks, eval's loader queue).
std::string format_gib(int64_t bytes);
// One line: the backend's own account (total, weights, activations, workspace, buffers), then the
// driver's reading where there is one. The CLI and the app print this.
std::string describe_memory(const MemoryReport& memory);

}  // namespace mnv2
