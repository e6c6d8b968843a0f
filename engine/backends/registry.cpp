// The backend registry: every backend this build knows by name, and the Precision names. The GPU backends
// come from the GPU plugin; where it is not loaded they are stand-ins that say why they cannot run.
#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "gpu/plugin_api.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/lab.h"
#include "mnv2/option_values.h"

namespace mnv2 {

namespace {

// Stands in for a GPU backend when the GPU plugin is not loaded (not built, not installed, or an NVIDIA
// library missing), so listings and error messages stay the same everywhere and say why.
class UnloadedBackend final : public Backend {
 public:
  UnloadedBackend(std::string name, std::string description, std::string reason)
      : name_(std::move(name)), description_(std::move(description)), reason_(std::move(reason)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  Availability availability() const override { return {false, reason_}; }
  std::optional<std::string> unsupported_reason(const Layer&) const override { return reason_; }
  std::unique_ptr<PreparedNet> prepare(const Model&, const PrepareConfig&) const override {
    throw Error(name_ + ": " + reason_);
  }

 private:
  std::string name_;
  std::string description_;
  std::string reason_;
};

std::unique_ptr<Backend> plugin_cudnn_backend() {
  if (const gpu_plugin::Api* gpu = gpu_plugin::api()) return gpu->make_cudnn_backend();
  return std::make_unique<UnloadedBackend>("cudnn", "NVIDIA cuDNN/cuBLAS", gpu_plugin::status().problem);
}
std::unique_ptr<Backend> plugin_cuda_backend() {
  if (const gpu_plugin::Api* gpu = gpu_plugin::api()) return gpu->make_cuda_backend();
  return std::make_unique<UnloadedBackend>("cuda", "custom CUDA kernels", gpu_plugin::status().problem);
}

struct RegistryEntry {
  const char* name;
  std::unique_ptr<Backend> (*factory)();
};

// The order is the order of backend_names() and of the "choose ..." hint.
const std::array<RegistryEntry, 4> kRegistry{{
    {"cpu", &make_cpu_backend},
    {"cpu-ref", &make_cpu_reference_backend},
    {"cudnn", &plugin_cudnn_backend},
    {"cuda", &plugin_cuda_backend},
}};

std::string lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

}  // namespace

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::tf32:
      return "tf32";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

Precision parse_precision(const std::string& text) {
  const std::string key = lower(text);
  for (Precision p : kPrecisions)
    if (key == to_string(p)) return p;
  throw UsageError("unknown precision '" + text + "' (choose fp32, tf32, fp16)");
}

const char* to_string(CudaOptions::Variant v) { return v == CudaOptions::Variant::fast ? "fast" : "baseline"; }

const char* to_string(CudaOptions::Fusion f) {
  switch (f) {
    case CudaOptions::Fusion::automatic:
      return "auto";
    case CudaOptions::Fusion::none:
      return "none";
    case CudaOptions::Fusion::expand_dw:
      return "expand_dw";
    case CudaOptions::Fusion::block:
      return "block";
    case CudaOptions::Fusion::block_split:
      return "block_split";
  }
  return "?";
}

const char* to_string(CudaOptions::Graph g) {
  switch (g) {
    case CudaOptions::Graph::automatic:
      return "auto";
    case CudaOptions::Graph::on:
      return "on";
    case CudaOptions::Graph::off:
      return "off";
  }
  return "?";
}

const char* to_string(CudaOptions::Pdl p) {
  switch (p) {
    case CudaOptions::Pdl::automatic:
      return "auto";
    case CudaOptions::Pdl::on:
      return "on";
    case CudaOptions::Pdl::off:
      return "off";
    case CudaOptions::Pdl::late_weights:
      return "late_weights";
  }
  return "?";
}

const char* to_string(CudaOptions::SplitK s) {
  switch (s) {
    case CudaOptions::SplitK::separate:
      return "separate";
    case CudaOptions::SplitK::in_kernel:
      return "in_kernel";
    case CudaOptions::SplitK::cluster:
      return "cluster";
  }
  return "?";
}

namespace {

// The value of `values` whose name is `text` (case-insensitive), else a UsageError listing the names.
template <typename E, size_t N>
E parse_named(const std::string& text, const char* what, const std::array<E, N>& values) {
  const std::string key = lower(text);
  std::string names;
  for (E v : values) {
    if (key == to_string(v)) return v;
    names += (names.empty() ? "" : ", ") + std::string(to_string(v));
  }
  throw UsageError(std::string("unknown ") + what + " '" + text + "' (choose " + names + ")");
}

}  // namespace

CudaOptions::Variant parse_cuda_variant(const std::string& text) {
  return parse_named(text, "cuda variant", kCudaVariants);
}

CudaOptions::Fusion parse_cuda_fusion(const std::string& text) {
  return parse_named(text, "cuda fusion", kCudaFusions);
}

CudaOptions::Graph parse_cuda_graph(const std::string& text) {
  return parse_named(text, "cuda graph mode", kCudaGraphs);
}

CudaOptions::Pdl parse_cuda_pdl(const std::string& text) { return parse_named(text, "cuda PDL mode", kCudaPdls); }

CudaOptions::SplitK parse_cuda_splitk(const std::string& text) {
  return parse_named(text, "cuda split-K reduction", kCudaSplitKs);
}

const char* to_string(CudnnOptions::Variant v) { return v == CudnnOptions::Variant::fused ? "fused" : "naive"; }

const char* to_string(CudnnOptions::Graph g) {
  switch (g) {
    case CudnnOptions::Graph::automatic:
      return "auto";
    case CudnnOptions::Graph::on:
      return "on";
    case CudnnOptions::Graph::off:
      return "off";
  }
  return "?";
}

const char* to_string(CudnnOptions::Layout l) {
  switch (l) {
    case CudnnOptions::Layout::automatic:
      return "auto";
    case CudnnOptions::Layout::nchw:
      return "nchw";
    case CudnnOptions::Layout::nhwc:
      return "nhwc";
  }
  return "?";
}

CudnnOptions::Variant parse_cudnn_variant(const std::string& text) {
  return parse_named(text, "cudnn variant", kCudnnVariants);
}

CudnnOptions::Graph parse_cudnn_graph(const std::string& text) {
  return parse_named(text, "cudnn graph mode", kCudnnGraphs);
}

CudnnOptions::Layout parse_cudnn_layout(const std::string& text) {
  return parse_named(text, "cudnn layout", kCudnnLayouts);
}

bool is_host_backend(const std::string& name) { return name == "cpu" || name == "cpu-ref"; }

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : kRegistry) names.emplace_back(entry.name);
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  // The kernel lab's backends ("cuda+lab:NAME", mnv2/lab.h) exist once their kernel is registered.
  if (name.rfind("cuda+lab:", 0) == 0) {
    const std::optional<LabKernelSpec> spec = registered_lab_kernel(name.substr(9));
    if (!spec) throw UsageError("backend '" + name + "' has no compiled kernel in this process (run 'mnv2 lab')");
    if (const gpu_plugin::Api* gpu = gpu_plugin::api()) return gpu->make_cuda_lab_backend(*spec);
    return std::make_unique<UnloadedBackend>(name, "custom CUDA kernels", gpu_plugin::status().problem);
  }
  for (const RegistryEntry& entry : kRegistry)
    if (name == entry.name) return entry.factory();
  std::string choices;
  for (const RegistryEntry& entry : kRegistry) choices += std::string(choices.empty() ? "" : ", ") + entry.name;
  throw UsageError("unknown backend '" + name + "' (choose " + choices + ")");
}

Tensor PreparedNet::run_u8(const uint8_t* hwc, int64_t images, const InputNormaliser& n) {
  const PrepareConfig& c = config();
  if (hwc == nullptr || images < 1 || images % c.batch != 0)
    throw UsageError("run_u8: " + std::to_string(images) + " images are not a whole number of batches of " +
                     std::to_string(c.batch));
  const int64_t per_image = int64_t{3} * c.height * c.width;
  Tensor sub(Shape{c.batch, 3, c.height, c.width});
  Tensor out;
  int64_t classes = 0;
  for (int64_t first = 0; first < images; first += c.batch) {
    normalise_u8(hwc + first * per_image, c.batch, c.height, c.width, n, sub.data.data());
    const Tensor logits = run(sub);
    if (first == 0) {
      classes = logits.shape.per_image();
      out = Tensor(Shape{images, logits.shape.c, logits.shape.h, logits.shape.w});
    }
    std::copy(logits.data.begin(), logits.data.end(), out.data.begin() + first * classes);
  }
  return out;
}

Precision reference_precision(const std::string& backend, Precision wanted) {
  return make_backend(backend)->supports(wanted) ? wanted : Precision::fp32;
}

double precision_logits_bound(Precision p) {
  switch (p) {
    case Precision::fp32:
      return 1e-5;
    case Precision::tf32:
      return 1e-2;
    case Precision::fp16:
      return 2e-2;
  }
  return 0.0;
}

int storage_bytes(Precision p) { return p == Precision::fp16 ? 2 : 4; }

double precision_layer_threshold(Precision p) { return p == Precision::fp32 ? 1e-4 : precision_logits_bound(p); }

}  // namespace mnv2
