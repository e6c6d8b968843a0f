// The cudnn backend's engine choice: for the fused variant, how deep each convolution group fuses and which engine
// configuration runs its operation graph (timed on the real buffers among what cuDNN's heuristics offer, kept in
// the persistent plan cache, plan_cache.h); for the convolutions left to legacy calls, the algorithm cuDNN's Find
// measures fastest (conv_algorithm.h). Prepare-time only: nothing here runs in a run.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cudnn/cudnn_lowering.h"
#include "backends/cudnn/cudnn_plan.h"
#include "backends/cudnn/plan_cache.h"
#include "gpu/device_memory.h"
#include "gpu/runtime.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"

namespace mnv2::cudnn_backend {

class Autotuner {
 public:
  // Times on ctx's stream with ctx's handles; `ops` are the lowered layers (operands bound), `gpu` the device the
  // plan cache's keys name; tuning scratch comes from `memory`.
  Autotuner(const CudnnContext& ctx, const CudnnPlan& plan, const Model& model, std::vector<LayerOp>& ops,
            const GpuProperties& gpu, gpu::DeviceMemory& memory);

  // Each convolution group's graph: all its ops where cuDNN offers an allowed engine, else fewer (the rest as legacy
  // calls), else the legacy convolution; every unit's variant says which and why. Loads and saves the plan cache
  // (a bad file is ignored with a warning, cache_warning()). Returns the workspace the chosen plans need.
  size_t tune(std::vector<Unit>& units);
  const std::string& cache_warning() const { return cache_warning_; }

 private:
  std::string cache_key(const ConvGraphSpec& spec) const;
  float time_on_stream(const std::function<bool()>& work, int repeats);
  float time_plan(const ExecutionPlan& plan, const BackendDescriptor& pack, float best_ms);
  std::unique_ptr<FusedGraph> choose_plan(const LayerGroup& group, const ConvGraphSpec& spec, void* tune_ws,
                                          size_t tune_bytes, std::string* why);

  const CudnnContext& ctx_;
  const CudnnPlan& plan_;
  const Model& model_;
  std::vector<LayerOp>& ops_;
  std::string gpu_;  // "NVIDIA H200 cc9.0"
  gpu::DeviceMemory& memory_;
  PlanCache plan_cache_;
  bool plan_cache_dirty_ = false;
  std::string cache_warning_;
  gpu::Event tune_start_, tune_end_;
  std::chrono::steady_clock::time_point tune_begin_;
};

// Legacy algorithms for the convolutions run by the legacy call (LayerOp::needs_algo), measured by Find on the
// real buffers; returns the workspace every step then shares: the largest any chosen algorithm needs, at least
// `fused_workspace`. Throws Error naming a layer no allowed algorithm supports.
size_t choose_conv_algorithms(std::vector<LayerOp>& ops, const CudnnContext& ctx, int device, size_t fused_workspace,
                              const gpu::DeviceMemory& memory);

// "9.19.0" from cudnnGetVersion()'s 91900.
std::string cudnn_version_string(size_t version);

}  // namespace mnv2::cudnn_backend
