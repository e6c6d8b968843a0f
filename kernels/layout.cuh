// Layout and element-type changes: a batched matrix transpose through shared memory (both the read and the
// write side coalesced) between NCHW and NHWC, and a float32 <-> half conversion. Converts the network input
// (when the first layer cannot read NCHW itself) and layer outputs the caller downloads for comparison with
// NCHW float32 backends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// output[n][c][r] = input[n][r][c] for each of `batch` matrices.
// NCHW -> NHWC: rows = channels, cols = height * width; NHWC -> NCHW: rows = height * width, cols = channels.
// The element types may differ: the network input (float32 NCHW) becomes a half NHWC map in fp16, and half
// layer outputs become float32 NCHW for download.
struct TransposeParams {
  int64_t batch = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* input = nullptr;  // [batch, rows, cols] of in_type
  void* output = nullptr;       // [batch, cols, rows] of out_type; must not alias input
  DType in_type = DType::f32;
  DType out_type = DType::f32;
};

void launch_transpose(const TransposeParams& p, cudaStream_t stream);

// Element type conversion without a layout change (half <-> float32, rounding to nearest).
struct ConvertParams {
  int64_t count = 0;  // elements
  const void* input = nullptr;
  void* output = nullptr;  // must not alias input
  DType in_type = DType::f32;
  DType out_type = DType::f16;
};

void launch_convert(const ConvertParams& p, cudaStream_t stream);

// Host-side rounding of float32 values to IEEE half (nearest, ties to even) as 16-bit patterns, for weights
// uploaded in half.
std::vector<uint16_t> to_half_bits(const std::vector<float>& values);
// And back (exact), for references in tests.
float half_bits_to_float(uint16_t bits);

}  // namespace mnv2::kernels
