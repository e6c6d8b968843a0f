// The cuda backend: the network on this project's own kernels (kernels/). Precision: fp32 is strict float32
// (FFMA, no TF32); the fast variant also runs tf32 (float32 storage, the GEMMs of the 1x1 convolutions and the
// Linear layer on tensor cores with TF32 operands) and fp16 (half NHWC activations and GEMM weights, float32
// bias and accumulation everywhere, tensor-core GEMMs; the Linear layer's logits stay float32). Depthwise and
// direct convolutions stay FFMA in float32 arithmetic in every mode (they are memory- and latency-bound).
// Two variants, chosen by PrepareConfig::cuda when a network is prepared:
//  - fast (default): NHWC activations; the stem reads the NCHW input itself; every convolution carries its
//    bias, its clip (ReLU6) and, for 1x1 projections, the residual add in its epilogue, so one step covers
//    several topology layers ("Conv2d 14 + ResidualAdd 15"); depthwise 3x3 has its own kernel.
//  - baseline: NCHW, one step per layer: im2col + the tiled GEMM for every convolution, separate clip, add,
//    pool and Linear kernels. The reference point of the optimisation story.
// The backend is a planner (planner.cpp, mnv2/cuda_plan.h: the steps, kernels and tiles from the model, the
// options and the device's properties, as plain data) and a lowering (lower_*.cpp: each step's weights and
// launches) on the GPU prepared-network core (cuda_net.cpp, engine/gpu/prepared_net.h), which runs one CUDA graph
// of the whole network for un-instrumented runs (CudaOptions::graph). This file answers what the backend can run
// where: per device (PrepareConfig::device), probed once.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backends/cuda/cuda_net.h"
#include "backends/cuda/lab_kernel.h"
#include "backends/layer_checks.h"  // malformed_reason: the checks every backend shares
#include "gpu/check.h"
#include "gpu/device.h"  // the device ordinal, its properties, the checks before prepare
#include "kernels/common.cuh"
#include "mnv2/backend.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/lab.h"
#include "mnv2/model.h"

namespace mnv2 {
namespace cuda_backend {
namespace {

namespace k = kernels;

constexpr const char* kBackendName = "cuda";

// Whether a device can run the backend: the device (gpu::probe_device), code in this binary it runs (machine code,
// or PTX the driver compiles), and which architecture's features that code was compiled with (GpuProperties::
// code_arch, which the TF32 rule and the planner read).
using Probe = gpu::DeviceProbe;

Probe make_probe(int device) {
  Probe p = gpu::probe_device(device);
  if (!p.ok) return p;
  try {
    const gpu::DeviceScope on(device);  // the kernel image is asked of the current device
    k::KernelImage image;
    if (const cudaError_t e = k::probe_kernel_image(&image); e != cudaSuccess) {
      const std::string& cannot_run = gpu_device(device).cannot_run;
      p.ok = false;
      p.reason = "the kernels cannot run on " + p.gpu.name + " (compute capability " + std::to_string(p.gpu.cc_major) +
                 "." + std::to_string(p.gpu.cc_minor) +
                 "): " + (cannot_run.empty() ? std::string(cudaGetErrorString(e)) : cannot_run);
      return p;
    }
    p.gpu.code_arch = image.ptx_version;
  } catch (const Error& e) {
    p.ok = false;
    p.reason = e.what();
    return p;
  }
  p.tf32_why_not = tf32_refusal(p.gpu);
  return p;
}

const Probe& probe(int device) {
  static gpu::PerDevice<Probe> probes(make_probe);
  return probes.get(device);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() = default;
  // "cuda+lab:NAME": the fast variant's unfused plan with the user's kernel in its slot (mnv2/lab.h).
  explicit CudaBackend(LabKernelSpec lab) : lab_(std::move(lab)) {}

  std::string name() const override { return lab_ ? "cuda+lab:" + lab_->name : kBackendName; }

  // Both variants: the backend object has no options of its own, they come with each prepare(). The backend
  // object has no device either: description(), availability() and supports() answer for device 0, the default;
  // prepare() checks the device it is given.
  std::string description() const override { return backend_text(0); }

  Availability availability() const override {
    const Probe& p = probe(0);
    return {p.ok, p.reason};
  }

  std::optional<std::string> unsupported_reason(const Layer& layer) const override {
    if (auto r = malformed_reason(layer)) return r;
    // The clip kernels take any interval (a lower bound other than 0 too); only a non-interval is refused.
    if ((layer.kind == LayerKind::ReLU6 || layer.kind == LayerKind::ReLU) &&
        (std::isnan(layer.clip_min) || std::isnan(layer.clip_max) || layer.clip_min > layer.clip_max))
      return "clip bounds (" + format_number(layer.clip_min) + ", " + format_number(layer.clip_max) +
             ") are not an interval";
    return std::nullopt;
  }

  // Every mode (the fast variant, the default; the baseline refuses reduced precisions at prepare()); tf32 only
  // where the GPU and the code that runs on it have TF32 tensor cores (tf32_refusal).
  bool supports(Precision p) const override {
    if (p != Precision::tf32) return true;
    return !probe(0).ok || probe(0).tf32_why_not.empty();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    if (config.precision != Precision::fp32 && config.cuda.variant == CudaOptions::Variant::baseline)
      throw UsageError(std::string("cuda: precision ") + to_string(config.precision) +
                       " needs the fast variant; the baseline variant runs strict fp32 only (FFMA, no TF32)");
    gpu::check_prepare(*this, kBackendName, model, config, [](int device) {
      const Probe& p = probe(device);
      return gpu::DeviceSupport{{p.ok, p.reason}, p.tf32_why_not};
    });
    MNV2_CHECK_CUDA(cudaSetDevice(config.device));
    std::shared_ptr<const LabKernel> lab;
    PrepareConfig planned = config;
    if (lab_) {
      const bool unfused =
          config.cuda.fusion == CudaOptions::Fusion::none || config.cuda.fusion == CudaOptions::Fusion::automatic;
      if (config.cuda.variant != CudaOptions::Variant::fast || !unfused)
        throw UsageError(name() +
                         ": the kernel lab runs the fast variant's unfused plan (--cuda-variant fast, "
                         "--cuda-fusion none or auto)");
      planned.cuda.fusion = CudaOptions::Fusion::none;
      lab = std::make_shared<const LabKernel>(*lab_);  // loaded into the device's context
    }
    CudaPlan plan = plan_cuda_network(model, planned, probe(config.device).gpu);
    if (lab && config.cuda.fusion == CudaOptions::Fusion::automatic) {
      plan.config.cuda.fusion = config.cuda.fusion;  // asked: auto; runs: none, because the lab's slots are layers
      plan.fusion_note = "auto: a kernel lab run takes the per-layer plan (its kernels replace single layers)";
    }
    return make_prepared_net(model, config, std::move(plan), std::move(lab));
  }

 private:
  std::optional<LabKernelSpec> lab_;
};

}  // namespace
}  // namespace cuda_backend

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda_backend::CudaBackend>(); }
std::unique_ptr<Backend> make_cuda_lab_backend(const LabKernelSpec& spec) {
  return std::make_unique<cuda_backend::CudaBackend>(spec);
}

}  // namespace mnv2
