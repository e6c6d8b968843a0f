// Pointwise (1x1, stride 1, no padding, groups 1) convolution on NHWC maps: one GEMM of the batch's pixels
// [batch * h * w, in_channels] by the weights [in_channels, out_channels], bias, clip (ReLU6) and the
// residual add fused in the GEMM's epilogue.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/gemm.cuh"

namespace mnv2::kernels {

struct PointwiseConvParams {
  int64_t pixels = 0;                 // batch * height * width: rows of the GEMM
  int in_channels = 0;                // K
  int out_channels = 0;               // N
  const float* input = nullptr;       // NHWC [pixels, in_channels]
  const float* weight = nullptr;      // [in_channels, out_channels] (the ONNX [out, in] transposed)
  const float* bias = nullptr;        // [out_channels] or null
  Clip clip;                          // applied to conv + bias
  const float* residual = nullptr;    // NHWC [pixels, out_channels], added after the clip; null: none
  float* output = nullptr;            // NHWC [pixels, out_channels]; must not alias input or residual
  float* workspace = nullptr;         // split-K partial sums (gemm_workspace_floats); null: no split variants
  unsigned* tile_counters = nullptr;  // in-kernel split-K arrival counters (GemmParams::tile_counters)
  bool weight_before_wait = false;    // the weights are constants: loaded before the PDL wait (GemmParams)
};

// The GEMM these parameters describe (throws mnv2::Error when the pixels exceed the GEMM's int rows).
GemmParams pointwise_gemm_params(const PointwiseConvParams& p);

// Tile, split and access width for this problem (see choose_gemm_variant).
GemmVariant choose_pointwise_variant(const PointwiseConvParams& p, int num_sms, bool allow_split = false,
                                     const GemmTile* only_tile = nullptr);

void launch_pointwise_conv(const PointwiseConvParams& p, const GemmVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
