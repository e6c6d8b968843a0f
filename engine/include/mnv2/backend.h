// The backend interface: cpu (reference), cudnn (NVIDIA libraries), cuda (our kernels). A backend says
// whether it can run here and what it cannot run before it runs; prepare() builds a PreparedNet that owns
// every buffer for one (model, batch, input size, precision).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2 {

enum class Precision { fp32, tf32, fp16 };
const char* to_string(Precision p);
Precision parse_precision(const std::string& text);  // throws UsageError

struct PrepareConfig {
  int batch = 1;
  int height = 224;
  int width = 224;
  Precision precision = Precision::fp32;
};

struct Availability {
  bool available = false;
  std::string reason;  // why not, when not available
};

// One unit of work of a prepared network. A fused step covers several topology layers; time and
// diffs are attributed to all of them, never to a single one silently.
struct ExecStep {
  std::string name;         // e.g. "Conv2d 0", or "Conv2d 5 + ReLU6 6" when fused
  std::vector<int> layers;  // topology layer indices covered, ascending
  std::string variant;      // implementation detail shown in reports (algorithm, kernel variant)
};

// Called around each step's work, and around the whole run (input upload to logits download).
// `stream` is the backend's cudaStream_t, nullptr for host backends.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void run_begin(void* /*stream*/) {}
  virtual void run_end(void* /*stream*/) {}
  virtual void step_begin(int step, void* stream) = 0;
  virtual void step_end(int step, void* stream) = 0;
};

struct RunOptions {
  bool keep_layer_outputs = false;  // copy every layer output to the host (for diffs); slow
  StepObserver* observer = nullptr;
};

// Bytes a prepared network holds (device memory for GPU backends, host memory for cpu), as the backend
// accounts them; for GPU backends also what the driver saw (see mnv2/memory.h).
struct MemoryReport {
  int64_t weight_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t workspace_bytes = 0;
  int tensors = 0;  // buffers held (weights, activations, workspace); 0 where the backend does not count them
  // Device memory in use on the whole GPU (cudaMemGetInfo: every process, this one's CUDA context
  // included) before prepare(), and the highest reading after prepare() and after the runs; -1: not measured.
  int64_t device_used_before_bytes = -1;
  int64_t device_used_peak_bytes = -1;
  int64_t device_total_bytes = -1;
  int64_t total() const { return weight_bytes + activation_bytes + workspace_bytes; }
  // What the driver saw the network take (buffers, library handles and workspaces, allocator rounding);
  // -1 where not measured.
  int64_t driver_held_bytes() const {
    return device_used_before_bytes < 0 || device_used_peak_bytes < 0 ? -1
                                                                       : device_used_peak_bytes - device_used_before_bytes;
  }
};

class PreparedNet {
 public:
  virtual ~PreparedNet() = default;
  virtual const PrepareConfig& config() const = 0;
  virtual const std::vector<ExecStep>& steps() const = 0;
  // input: [batch, channels, height, width] as prepared; returns the logits [batch, classes, 1, 1].
  // Throws UsageError on a shape mismatch, Error on a failure (naming the layer).
  virtual Tensor run(const Tensor& input, const RunOptions& options = {}) = 0;
  // Every topology layer's output of the last run made with keep_layer_outputs; an empty Tensor for a
  // layer the backend does not materialise (fused away).
  virtual const std::vector<Tensor>& layer_outputs() const = 0;
  virtual MemoryReport memory() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu", "cudnn", "cuda"
  virtual std::string description() const = 0;  // "CPU reference (OpenBLAS, 2 threads)"
  virtual Availability availability() const = 0;
  // nullopt if the backend can run this layer, otherwise the reason it cannot.
  virtual std::optional<std::string> unsupported_reason(const Layer& layer) const = 0;
  // Throws Error if unavailable or a layer is unsupported (naming it), UsageError on a bad config.
  virtual std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const = 0;
};

std::vector<std::string> backend_names();  // every backend this build knows, available or not
std::unique_ptr<Backend> make_backend(const std::string& name);  // throws UsageError for unknown names

}  // namespace mnv2
