// The backend registry: every backend this build knows by name, and the Precision names. A build without
// CUDA still lists cudnn and cuda, as stand-ins that say why they cannot run.
#include <array>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "mnv2/backend.h"
#include "mnv2/error.h"

namespace mnv2 {

#ifdef MNV2_HAVE_CUDA_BACKENDS
// Defined by the GPU backends when they are built: engine/backends/cudnn always in a CUDA build, and
// engine/backends/cuda once it exists (its build then defines MNV2_HAVE_CUDA_KERNELS_BACKEND).
std::unique_ptr<Backend> make_cudnn_backend();
#ifdef MNV2_HAVE_CUDA_KERNELS_BACKEND
std::unique_ptr<Backend> make_cuda_backend();
#endif
#endif

namespace {

#if !defined(MNV2_HAVE_CUDA_BACKENDS) || !defined(MNV2_HAVE_CUDA_KERNELS_BACKEND)
// Stands in for a GPU backend this build left out, so listings and error messages stay the same in
// every build.
class UnbuiltBackend final : public Backend {
 public:
  UnbuiltBackend(std::string name, std::string description, std::string reason)
      : name_(std::move(name)), description_(std::move(description)), reason_(std::move(reason)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_ + " (not built)"; }
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
#endif

#ifndef MNV2_HAVE_CUDA_BACKENDS
constexpr const char* kNoCudaReason = "this build has no CUDA backends (configured with MNV2_WITH_CUDA=OFF)";

std::unique_ptr<Backend> make_cudnn_backend() {
  return std::make_unique<UnbuiltBackend>("cudnn", "NVIDIA cuDNN/cuBLAS", kNoCudaReason);
}
std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<UnbuiltBackend>("cuda", "custom CUDA kernels", kNoCudaReason);
}
#elif !defined(MNV2_HAVE_CUDA_KERNELS_BACKEND)
std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<UnbuiltBackend>("cuda", "custom CUDA kernels", "custom CUDA kernels backend not built yet");
}
#endif

struct RegistryEntry {
  const char* name;
  std::unique_ptr<Backend> (*factory)();
};

// The order is the order of backend_names() and of the "choose ..." hint.
const std::array<RegistryEntry, 4> kRegistry{{
    {"cpu", &make_cpu_backend},
    {"cpu-ref", &make_cpu_reference_backend},
    {"cudnn", &make_cudnn_backend},
    {"cuda", &make_cuda_backend},
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
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16})
    if (key == to_string(p)) return p;
  throw UsageError("unknown precision '" + text + "' (choose fp32, tf32, fp16)");
}

bool is_host_backend(const std::string& name) { return name == "cpu" || name == "cpu-ref"; }

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : kRegistry) names.emplace_back(entry.name);
  return names;
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  for (const RegistryEntry& entry : kRegistry)
    if (name == entry.name) return entry.factory();
  std::string choices;
  for (const RegistryEntry& entry : kRegistry) choices += std::string(choices.empty() ? "" : ", ") + entry.name;
  throw UsageError("unknown backend '" + name + "' (choose " + choices + ")");
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

double precision_layer_threshold(Precision p) {
  return p == Precision::fp32 ? 1e-4 : precision_logits_bound(p);
}

}  // namespace mnv2
