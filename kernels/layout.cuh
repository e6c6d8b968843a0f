// Layout changes between NCHW and NHWC: a batched matrix transpose through shared memory, so both the read
// and the write side are coalesced. Converts the network input (when the first layer cannot read NCHW
// itself) and layer outputs the caller downloads for comparison with NCHW backends.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// output[n][c][r] = input[n][r][c] for each of `batch` matrices.
// NCHW -> NHWC: rows = channels, cols = height * width; NHWC -> NCHW: rows = height * width, cols = channels.
struct TransposeParams {
  int64_t batch = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  const float* input = nullptr;  // [batch, rows, cols]
  float* output = nullptr;       // [batch, cols, rows]; must not alias input
};

void launch_transpose(const TransposeParams& p, cudaStream_t stream);

}  // namespace mnv2::kernels
