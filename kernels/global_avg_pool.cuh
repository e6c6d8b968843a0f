// Global average pooling: the mean over each channel's map, [batch, channels, h, w] -> [batch, channels],
// for NHWC (fast path) and NCHW (baseline) inputs.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"
#include "kernels/direct_conv.cuh"  // Layout

namespace mnv2::kernels {

struct GlobalAvgPoolParams {
  int batch = 0;
  int channels = 0;
  int64_t plane = 0;             // height * width of the map
  Layout layout = Layout::nhwc;  // of the input
  const void* input = nullptr;   // [batch, plane, channels] (nhwc) or [batch, channels, plane] (nchw)
  void* output = nullptr;        // [batch, channels]
  DType dtype = DType::f32;      // of input and output (f16: NHWC only); the sum is float32 either way
};

// NHWC: one thread per image and 16 bytes of channels (4 floats or 8 halves, when the channel count is a
// multiple and the operands aligned) or per channel, walking the map; NCHW: one warp per plane, lanes strided
// over it, then a shuffle reduction.
void launch_global_avg_pool(const GlobalAvgPoolParams& p, cudaStream_t stream);

}  // namespace mnv2::kernels
