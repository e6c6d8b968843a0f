// A whole inverted-residual block in one kernel, fp16 (tiles.h: FusedBlock*): expansion 1x1 + bias + clip,
// depthwise 3x3 (stride 1 or 2) + bias + clip, projection 1x1 + bias (+ the residual, the block's input), NHWC
// half activations, float32 accumulation in the 1x1 convolutions (tensor cores), half in the depthwise (half2
// FMA over the 9 taps from the bias, as cuDNN's fp16 depthwise); the expanded maps never leave shared memory. Needs
// code compiled for compute_80 or newer (mma.sync m16n8k16, cp.async): the launch refuses older code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// The weights as the kernel reads them (fused_block_pack): half matrices zero-padded to the layout's sizes,
// float32 depthwise weights and biases padded to e_pad (co_pad for the projection's bias); the kernel rounds the
// depthwise weights and bias to half as it stages them. Padded expanded
// channels have zero weights and biases, so they contribute nothing.
struct FusedBlockWeights {
  std::vector<uint16_t> expand;     // half bits [k_pad][e_pad]: row k holds every expanded channel's weight
  std::vector<float> expand_bias;   // [e_pad]
  std::vector<float> dw;            // [9][e_pad], tap-major
  std::vector<float> dw_bias;       // [e_pad]
  std::vector<uint16_t> project;    // half bits [e_pad][co_pad]
  std::vector<float> project_bias;  // [co_pad]
};
// From the model's layouts: expand [expanded][in] (ONNX 1x1), dw [expanded][3][3], project [out][expanded];
// empty biases are zeros.
FusedBlockWeights fused_block_pack(const FusedBlockShape& s, const std::vector<float>& expand,
                                   const std::vector<float>& expand_bias, const std::vector<float>& dw,
                                   const std::vector<float>& dw_bias, const std::vector<float>& project,
                                   const std::vector<float>& project_bias);

struct FusedBlockParams {
  FusedBlockShape shape;
  const void* input = nullptr;          // half NHWC [batch, in_h, in_w, in_channels]; also the residual
  const void* expand_weight = nullptr;  // FusedBlockWeights::expand on the device (and so on)
  const float* expand_bias = nullptr;
  Clip expand_clip;
  const float* dw_weight = nullptr;
  const float* dw_bias = nullptr;
  Clip dw_clip;
  const void* project_weight = nullptr;
  const float* project_bias = nullptr;
  void* output = nullptr;  // half NHWC [batch, out_h, out_w, out_channels]; not the input
};

// Throws Error for what cannot run (fused_block_refusal, a variant that does not fit, null or misaligned
// operands, code below compute_80).
void launch_fused_block(const FusedBlockParams& p, const FusedBlockVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
