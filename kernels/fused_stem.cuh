// The stem and the first inverted-residual block of MobileNetV2 in one kernel (tiles.h: FusedStem*): conv 3x3
// stride 2 over the 3-channel NCHW float32 network input + bias + clip, depthwise 3x3 stride 1 + bias + clip,
// projection 1x1 + bias, NHWC output in half or float32. The stem's and the depthwise's maps stay in shared memory,
// stored in the output's type as the unfused plan stores them between its kernels. float32: FFMA throughout, the
// unfused plan's arithmetic. Half: the depthwise in half2 FMA from the bias (as the fused blocks and cuDNN's fp16
// depthwise); with compute_80 code the stem (its float32 inputs and weights rounded to half) and the projection
// (stem channels in multiples of 16) on tensor cores with float32 accumulation, FFMA with older code. Runs on every
// architecture the project builds.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// The weights as the kernel reads them, float32 in tiles.h's FusedStemOffsets layout (fused_stem_offsets(stem,
// out).total floats), from the model's layouts: stem [stem][3][3][3] (ONNX OIHW), dw [stem][1][3][3], project
// [out][stem][1][1], empty biases zeros. The projection is rounded to half for a half output, as the unfused plan's
// tensor-core GEMM takes it. Throws Error where the sizes do not match the shape.
std::vector<float> fused_stem_pack(const FusedStemShape& s, const std::vector<float>& stem,
                                   const std::vector<float>& stem_bias, const std::vector<float>& dw,
                                   const std::vector<float>& dw_bias, const std::vector<float>& project,
                                   const std::vector<float>& project_bias);

struct FusedStemParams {
  FusedStemShape shape;
  const float* input = nullptr;    // float32 NCHW [batch, 3, in_h, in_w]
  const float* weights = nullptr;  // fused_stem_pack's on the device, 16-byte aligned
  Clip stem_clip, dw_clip;
  void* output = nullptr;  // NHWC [batch, out_h, out_w, out_channels] of shape.dtype, 16-byte aligned
  // The weights are written by no kernel that may still be running when this one starts (uploaded before the
  // stream's work): under PDL they are loaded before the wait for the previous kernel (common.cuh
  // pdl_wait). false: after it.
  bool weights_before_wait = false;
};

// Throws Error for what cannot run (fused_stem_refusal, a tile other than 8 or 16 rows, null or misaligned
// operands, an output aliasing the input).
void launch_fused_stem(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
