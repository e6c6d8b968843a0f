// Elementwise layers as separate passes: clip (ReLU6, ReLU) and the residual add. The fast path fuses both
// into convolution epilogues; these are the baseline's kernels and the fallback for layers that cannot
// be fused (an activation whose input has other readers, say).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct ClipParams {
  int64_t count = 0;  // floats
  const float* input = nullptr;
  float* output = nullptr;  // may equal input
  Clip clip;                // clip.enabled must be true
};

struct AddParams {
  int64_t count = 0;  // floats
  const float* a = nullptr;
  const float* b = nullptr;
  float* output = nullptr;  // may equal a or b
};

// Both use 16-byte accesses when count % 4 == 0 and every pointer is 16-byte aligned, else one float each.
void launch_clip(const ClipParams& p, cudaStream_t stream);
void launch_add(const AddParams& p, cudaStream_t stream);

}  // namespace mnv2::kernels
