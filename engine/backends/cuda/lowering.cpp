// The lowering's device memory (lowering.h) and the dispatch from a planned step to its op's lowering file.
#include "backends/cuda/lowering.h"

#include <algorithm>
#include <utility>

#include "gpu/check.h"
#include "kernels/layout.cuh"  // to_half_bits
#include "mnv2/error.h"

namespace mnv2::cuda_backend {

namespace {
// Activation buffers start filled with this byte: every float and every half reads NaN.
constexpr int kPoisonByte = 0xFF;
}  // namespace

Lowering::Lowering(const Model& m, const CudaPlan& p, std::vector<LayerStats> s, cudaStream_t stream,
                   gpu::DeviceMemory& memory)
    : model(m), plan(p), stats(std::move(s)), stream_(stream), memory_(memory) {
  const Shape input_shape{p.config.batch, m.input_channels, p.config.height, p.config.width};
  input = Value{new_activation(input_shape, k::DType::f32), input_shape, false};
  if (p.input_nhwc_copy && !p.steps.empty()) {  // made by the first step, for the steps that read it
    input_nhwc_type = act_type(p.steps.front());
    input_nhwc = new_activation(input_shape, input_nhwc_type);
  }
  values.assign(m.layers.size(), Value{});
  if (p.im2col_workspace_floats > 0) im2col_workspace = allocate(p.im2col_workspace_floats, gpu::MemoryUse::workspace);
  if (p.gemm_workspace_floats > 0) gemm_workspace = allocate(p.gemm_workspace_floats, gpu::MemoryUse::workspace);
  if (p.gemm_tile_counters > 0) {  // zero once; every in-kernel split-K GEMM leaves them at zero again
    const int64_t bytes = p.gemm_tile_counters * static_cast<int64_t>(sizeof(unsigned));
    gemm_tile_counters = static_cast<unsigned*>(allocate_bytes(bytes, gpu::MemoryUse::workspace));
    MNV2_CHECK_CUDA(cudaMemsetAsync(gemm_tile_counters, 0, static_cast<size_t>(bytes), stream_));
  }
}

void* Lowering::allocate_bytes(int64_t bytes, gpu::MemoryUse use) {
  const char* what = use == gpu::MemoryUse::weights       ? "the weights"
                     : use == gpu::MemoryUse::activations ? "the activations"
                                                          : "the workspaces";
  return memory_.allocate(use, static_cast<size_t>(std::max<int64_t>(bytes, 1)), what);
}

float* Lowering::allocate(int64_t floats, gpu::MemoryUse use) {
  return static_cast<float*>(allocate_bytes(floats * static_cast<int64_t>(sizeof(float)), use));
}

void* Lowering::new_activation(const Shape& shape, k::DType dtype) {
  const int64_t bytes = shape.numel() * k::dtype_bytes(dtype);
  void* p = allocate_bytes(bytes, gpu::MemoryUse::activations);
  MNV2_CHECK_CUDA(cudaMemsetAsync(p, kPoisonByte, static_cast<size_t>(bytes), stream_));
  return p;
}

const float* Lowering::upload(const std::vector<float>& host) {
  float* p = allocate(static_cast<int64_t>(host.size()), gpu::MemoryUse::weights);
  // Pageable source: the call returns once the bytes are staged; prepare() synchronises before returning.
  MNV2_CHECK_CUDA(cudaMemcpyAsync(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
  return p;
}

const void* Lowering::upload_gemm_weights(const CudaStep& step, const std::vector<float>& host) {
  if (act_type(step) != k::DType::f16) return upload(host);
  return upload_half_bits(k::to_half_bits(host));
}

const void* Lowering::upload_half_bits(const std::vector<uint16_t>& bits) {
  void* p = allocate_bytes(static_cast<int64_t>(bits.size() * sizeof(uint16_t)), gpu::MemoryUse::weights);
  // A pageable source is staged before the call returns, so the temporary may go.
  MNV2_CHECK_CUDA(cudaMemcpyAsync(p, bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice, stream_));
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_));
  return p;
}

k::Clip clip_of(const Layer& l) { return k::Clip{true, l.clip_min, l.clip_max}; }

std::string lab_slot_of(const Lowering& lw, const CudaStep& step) {
  switch (step.kernel) {
    case CudaKernel::depthwise_conv:
      return "depthwise";
    case CudaKernel::pointwise_gemm:
    case CudaKernel::pointwise_tc:
      return "pointwise";
    case CudaKernel::direct_conv:  // the stem reads the NCHW network input; other direct convolutions are no slot
      return lw.layer(step.layers.front()).inputs.at(0) == kNetworkInput ? "stem" : "";
    case CudaKernel::avg_pool:
      return "pool";
    case CudaKernel::linear_gemm:
    case CudaKernel::linear_tc:
      return "classifier";
    default:
      return "";
  }
}

bool lab_runs(const Lowering& lw, const CudaStep& step) {
  if (!lw.lab) return false;
  const std::string slot = lab_slot_of(lw, step);
  return !slot.empty() && lw.lab->replaces(slot, step.layers.front());
}

void lower_step(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int out = step.output_layer;
  if (out < 0 || out >= static_cast<int>(lw.values.size()))
    throw Error("cuda: step '" + step.name + "' materialises no layer");
  const Shape& ys = lw.out_shape(out);
  const k::DType dtype = step.half_output ? k::DType::f16 : k::DType::f32;
  Value& value = lw.values[static_cast<size_t>(out)];
  if (step.padded_features > 0) {  // a Linear layer: its features padded for 16-byte accesses
    value = Value{nullptr, ys, step.nhwc_output, step.padded_features, dtype};
    value.data = lw.new_activation(Shape{ys.n, step.padded_features, 1, 1}, dtype);
  } else {
    value = Value{lw.new_activation(ys, dtype), ys, step.nhwc_output, 0, dtype};
  }
  switch (step.kernel) {
    case CudaKernel::direct_conv:
      return lower_direct_conv(lw, step, launches);
    case CudaKernel::depthwise_conv:
      return lower_depthwise_conv(lw, step, launches);
    case CudaKernel::expand_depthwise:
      return lower_expand_depthwise(lw, step, launches);
    case CudaKernel::fused_block:
      return lower_fused_block(lw, step, launches);
    case CudaKernel::fused_stem:
      return lower_fused_stem(lw, step, launches);
    case CudaKernel::pointwise_gemm:
    case CudaKernel::pointwise_tc:
      return lower_pointwise(lw, step, launches);
    case CudaKernel::im2col_gemm:
      return lower_im2col_gemm(lw, step, launches);
    case CudaKernel::linear_gemm:
    case CudaKernel::linear_tc:
      return lower_linear(lw, step, launches);
    case CudaKernel::clip:
      return lower_clip(lw, step, launches);
    case CudaKernel::add:
      return lower_add(lw, step, launches);
    case CudaKernel::avg_pool:
      return lower_pool(lw, step, launches);
  }
  throw Error("cuda: step '" + step.name + "' has an unknown kernel");
}

}  // namespace mnv2::cuda_backend
