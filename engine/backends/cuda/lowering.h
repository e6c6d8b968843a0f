// What the cuda backend's per-op lowering files share: a step of the plan (mnv2/cuda_plan.h) becomes weights
// re-laid out and uploaded, its output buffer, and the kernel launches (closures over device pointers) that
// run it. The planner decided everything else; lowering only turns its choices into the kernels' parameters.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/lab_kernel.h"
#include "backends/cuda/shapes.h"  // checked_int, the fused kernels' shapes
#include "gpu/device_memory.h"
#include "gpu/runtime.h"
#include "kernels/common.cuh"
#include "mnv2/cuda_plan.h"
#include "mnv2/model.h"

namespace mnv2::cuda_backend {

namespace k = kernels;

using Launch = std::function<void(cudaStream_t)>;

// A layer's output on the device (or the network input). Fused-away layers have none (data == nullptr).
struct Value {
  void* data = nullptr;
  Shape shape;                     // logical NCHW shape
  bool nhwc = false;               // storage order: [n, h, w, c] instead of [n, c, h, w]
  int64_t image_stride = 0;        // elements between images; 0: shape.per_image() (dense). Only a padded Linear
                                   // output (its features rounded up for 16-byte accesses) differs.
  k::DType dtype = k::DType::f32;  // element type: f16 for fp16 activations
  int64_t stride() const { return image_stride > 0 ? image_stride : shape.per_image(); }
  float* f32() const { return static_cast<float*>(data); }
};

// The step's activation element type as the planner chose it (CudaStep::half): what its kernels read, and what its
// GEMMs' weights are stored as. Lowering reads the step's precision; it never works it out from the options.
inline k::DType act_type(const CudaStep& step) { return step.half ? k::DType::f16 : k::DType::f32; }

// A prepared network's values and weights as lowering fills them, in the net's device memory (which holds and
// counts every allocation): the values, the workspaces (allocated before any step is lowered, from the plan's
// sizes, so launches capture their pointers).
class Lowering {
 public:
  Lowering(const Model& model, const CudaPlan& plan, std::vector<LayerStats> stats, cudaStream_t stream,
           gpu::DeviceMemory& memory);

  const Model& model;
  const CudaPlan& plan;
  const std::vector<LayerStats> stats;

  Value input;                 // the network input, NCHW float32
  void* input_nhwc = nullptr;  // its NHWC copy in the first step's activation type, when the plan wants one
  k::DType input_nhwc_type = k::DType::f32;
  std::vector<Value> values;               // per layer; data == nullptr where fused away
  float* gemm_workspace = nullptr;         // split-K partial sums, shared by every split GEMM
  unsigned* gemm_tile_counters = nullptr;  // in-kernel split-K arrival counters, shared, zero between GEMMs
  float* im2col_workspace = nullptr;       // the baseline's columns
  // The kernel lab's user kernel, when this net is "cuda+lab:NAME": the lowering of its slot launches it in
  // place of ours for the layers it replaces (lab_kernel.h).
  std::shared_ptr<const LabKernel> lab;

  const Layer& layer(int i) const { return model.layers[static_cast<size_t>(i)]; }
  const Shape& out_shape(int i) const { return stats[static_cast<size_t>(i)].output; }
  const Shape& shape_of(int j) const { return j == kNetworkInput ? input.shape : out_shape(j); }
  // What a fast-path kernel reads for input j: NHWC of the activation type (the input's copy for the network
  // input).
  const void* nhwc_input(int j) const { return j == kNetworkInput ? input_nhwc : values[static_cast<size_t>(j)].data; }
  // What a step reads for input j in its own layout: the fast path's NHWC values, or the baseline's NCHW ones.
  const void* step_input(const CudaStep& step, int j) const {
    if (step.reads_input_copy && j == kNetworkInput) return input_nhwc;
    return j == kNetworkInput ? input.data : values[static_cast<size_t>(j)].data;
  }

  void* allocate_bytes(int64_t bytes, gpu::MemoryUse use);
  float* allocate(int64_t floats, gpu::MemoryUse use);
  // An activation of `dtype`, poisoned (every element reads NaN, in both types): an element no kernel wrote
  // shows up at once in a diff instead of passing as a stale or zero value.
  void* new_activation(const Shape& shape, k::DType dtype);
  const float* upload(const std::vector<float>& host);
  // GEMM weights in `step`'s operand type: half where it stores half (rounded to nearest on the host), else float32.
  const void* upload_gemm_weights(const CudaStep& step, const std::vector<float>& host);
  // Half values already rounded (their bits), as weights.
  const void* upload_half_bits(const std::vector<uint16_t>& bits);
  const float* upload_bias(const Layer& l) { return l.bias.empty() ? nullptr : upload(l.bias); }

 private:
  cudaStream_t stream_;
  gpu::DeviceMemory& memory_;
};

k::Clip clip_of(const Layer& l);

// The kernel lab's slot that covers `step` ("depthwise", "pointwise", "stem", "pool", "classifier"), or "" where
// none does: by the step's kernel, as lab_slot_layers (mnv2/lab.h) picks the slot's layers from the topology.
std::string lab_slot_of(const Lowering& lw, const CudaStep& step);
// Whether this net's lab kernel (lw.lab) runs `step` in place of ours: its slot covers the step and the step's
// layer is selected. Each lowering launches the user's kernel exactly where this holds, and the backend labels
// those steps "lab:NAME" from it.
bool lab_runs(const Lowering& lw, const CudaStep& step);
// Appends the launch of this net's lab kernel over `items` work items with the slot's parameter struct; the launch
// holds the kernel (its module) alive and passes a copy of `params` each time it runs.
template <class Params>
void push_lab_launch(const Lowering& lw, const Params& params, int64_t items, std::vector<Launch>& launches) {
  std::shared_ptr<const LabKernel> keep = lw.lab;
  launches.push_back([keep, params, items](cudaStream_t s) {
    Params copy = params;
    keep->launch(items, &copy, s);
  });
}

// The per-op lowerings; each appends its launches to `launches` (the step's output is already allocated).
void lower_direct_conv(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);       // lower_conv.cpp
void lower_depthwise_conv(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);    // lower_depthwise.cpp
void lower_expand_depthwise(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);  // lower_depthwise.cpp
void lower_fused_block(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);       // lower_block.cpp
void lower_fused_stem(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);        // lower_block.cpp
void lower_pointwise(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);         // lower_gemm.cpp
void lower_linear(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);            // lower_gemm.cpp
void lower_im2col_gemm(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);       // lower_gemm.cpp
void lower_clip(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);  // lower_elementwise.cpp
void lower_add(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);   // lower_elementwise.cpp
void lower_pool(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);  // lower_pool.cpp

// Allocates the step's output and dispatches to its op's lowering.
void lower_step(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches);

}  // namespace mnv2::cuda_backend
