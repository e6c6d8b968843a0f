// The cudnn backend: every layer through NVIDIA's libraries (cuDNN convolutions, activations, adds and
// pooling; cuBLAS for the classifier), one stream per network. Two variants (PrepareConfig::cudnn):
//  - fused (default): each convolution with the bias, ReLU6/ReLU and residual add that follow it is one cuDNN
//    graph-API operation graph (graph_api.h) with virtual intermediates and the asymmetric pads as pre/post
//    paddings; its engine configuration is autotuned among what the heuristics (mode A, fallback) offer and kept
//    in a persistent plan cache (plan_cache.h). Where cuDNN offers no allowed engine for the whole group, fewer
//    ops are fused and the rest run as legacy calls (the step's variant says which and why). NHWC activations in
//    tf32 and fp16 (CudnnOptions::layout).
//  - naive: one legacy cuDNN call per topology layer, NCHW, bias as cudnnAddTensor, asymmetric pads by a copy.
// Un-instrumented runs replay one CUDA graph of the whole run (CudnnOptions::graph), with the same semantics as
// the cuda backend: per-step timing inside a replay only through an observer with a graph id (CUPTI).
// Precision: fp32 (default) is strict float32, FMA math only; tf32 lets convolutions and the classifier use
// tensor cores on float32 data (TF32 operands, float32 accumulation); fp16 stores weights and activations
// as half and accumulates in float32 on tensor cores.
// The backend is a planner (cudnn_plan.h: layout, pads, arenas, groups, as plain data), a lowering
// (cudnn_lowering.h: descriptors and calls), the engine choice (autotune.h, plan_cache.h, conv_algorithm.h) and a
// prepared net on the GPU core (cudnn_net.h, engine/gpu/prepared_net.h). This file answers what the backend can
// run where: the libraries once per process, each device (PrepareConfig::device) once.
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "backends/cudnn/cudnn_net.h"
#include "backends/cudnn/cudnn_plan.h"
#include "backends/layer_checks.h"
#include "gpu/check.h"
#include "gpu/device.h"  // the device ordinal, its properties, the checks before prepare
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"

namespace mnv2 {
namespace cudnn_backend {
namespace {

constexpr const char* kBackendName = "cudnn";

// Whether this machine can run the backend at all: a CUDA device, and cuDNN and cuBLAS that initialise. Asked once
// per process, on first use (creating a cuDNN handle takes a moment).
struct LibraryProbe {
  bool ok = false;
  std::string reason;
};

const LibraryProbe& library_probe() {
  static const LibraryProbe probe = [] {
    LibraryProbe p;
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) {
      p.reason = env.why_none.empty() ? std::string("no CUDA device") : env.why_none;
      return p;
    }
    const size_t loaded = cudnnGetVersion();
    if (loaded / 10000 != CUDNN_MAJOR) {
      p.reason = "cuDNN " + std::to_string(loaded / 10000) + "." + std::to_string((loaded % 10000) / 100) + "." +
                 std::to_string(loaded % 100) + " is loaded, this build needs cuDNN " + std::to_string(CUDNN_MAJOR) +
                 ".x";
      return p;
    }
    cudnnHandle_t cudnn = nullptr;
    if (cudnnStatus_t s = cudnnCreate(&cudnn); s != CUDNN_STATUS_SUCCESS) {
      p.reason = "cuDNN could not be initialised: " + gpu::StatusTraits<decltype(s)>::describe(s);
      return p;
    }
    MNV2_CHECK_LOG(cudnnDestroy(cudnn));
    cublasHandle_t cublas = nullptr;
    if (cublasStatus_t s = cublasCreate(&cublas); s != CUBLAS_STATUS_SUCCESS) {
      p.reason = "cuBLAS could not be initialised: " + gpu::StatusTraits<decltype(s)>::describe(s);
      return p;
    }
    MNV2_CHECK_LOG(cublasDestroy(cublas));
    p.ok = true;
    return p;
  }();
  return probe;
}

// One device as the backend sees it: its properties (the plan cache's keys name it) and the TF32 rule there, with
// code_arch 0 (cuDNN brings its own kernels for the hardware; before Ampere it would silently compute tf32 in fp32,
// mislabelled).
const gpu::DeviceProbe& device_probe(int device) {
  static gpu::PerDevice<gpu::DeviceProbe> probes(gpu::probe_device);
  return probes.get(device);
}

// cuDNN restrictions beyond the structural checks every backend makes (layer_checks.h).
std::optional<std::string> conv_unsupported_reason(const Layer& layer) {
  const ConvParams& c = layer.conv;
  if (c.dilation_h != 1 || c.dilation_w != 1)
    return "dilation " + std::to_string(c.dilation_h) + "x" + std::to_string(c.dilation_w) +
           " is not supported by the cudnn backend (dilation 1 only)";
  return std::nullopt;
}

// cuDNN's clipped ReLU is min(max(x, 0), coef): a lower bound other than 0 has no cuDNN activation.
std::optional<std::string> clip_unsupported_reason(const Layer& layer) {
  if (layer.clip_min != 0.0f || !(layer.clip_max > 0.0f))
    return "clip bounds (" + format_number(layer.clip_min) + ", " + format_number(layer.clip_max) +
           ") are not supported by the cudnn backend (lower bound 0 and a positive upper bound only)";
  return std::nullopt;
}

class CudnnBackend final : public Backend {
 public:
  std::string name() const override { return kBackendName; }

  // The backend object has no device: description(), availability() and supports() answer for device 0, the
  // default; prepare() checks the device it is given.
  std::string description() const override {
    std::string text = libraries_text() +
                       ", fused by default (graph-API conv + bias + ReLU6 + residual, autotuned, plan cache, CUDA "
                       "graph; naive on request: one legacy call per layer), fp32 (FMA math, no TF32) by default; "
                       "tf32 and fp16 on request";
    if (const std::string gpu = gpu::device_name(0); !gpu.empty()) text += " on " + gpu;
    return text;
  }

  Availability availability() const override {
    const LibraryProbe& probe = library_probe();
    return {probe.ok, probe.reason};
  }

  std::optional<std::string> unsupported_reason(const Layer& layer) const override {
    if (auto r = malformed_reason(layer)) return r;
    if (layer.kind == LayerKind::Conv2d) return conv_unsupported_reason(layer);
    if (layer.kind == LayerKind::ReLU6 || layer.kind == LayerKind::ReLU) return clip_unsupported_reason(layer);
    return std::nullopt;
  }

  bool supports(Precision p) const override {
    return p != Precision::tf32 || !device_probe(0).ok || device_probe(0).tf32_why_not.empty();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    gpu::check_prepare(*this, kBackendName, model, config, [](int device) {
      const LibraryProbe& libraries = library_probe();
      const gpu::DeviceProbe& d = device_probe(device);
      const Availability a = !libraries.ok ? Availability{false, libraries.reason} : Availability{d.ok, d.reason};
      return gpu::DeviceSupport{a, d.tf32_why_not};
    });
    return make_prepared_net(model, plan_cudnn_network(model, config), device_probe(config.device).gpu);
  }
};

}  // namespace
}  // namespace cudnn_backend

std::unique_ptr<Backend> make_cudnn_backend() { return std::make_unique<cudnn_backend::CudnnBackend>(); }

}  // namespace mnv2
