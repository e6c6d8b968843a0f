// Elementwise layers as separate passes: clip (ReLU6, ReLU) and the residual add. The fast path fuses both
// into convolution epilogues; these are the baseline's kernels and the fallback for layers that cannot
// be fused (an activation whose input has other readers, say).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct ClipParams {
  int64_t count = 0;  // elements
  const void* input = nullptr;
  void* output = nullptr;    // may equal input
  Clip clip;                 // clip.enabled must be true
  DType dtype = DType::f32;  // of input and output
};

struct AddParams {
  int64_t count = 0;  // elements
  const void* a = nullptr;
  const void* b = nullptr;
  void* output = nullptr;    // may equal a or b
  DType dtype = DType::f32;  // of a, b and output; the sum is formed in float32 and rounded once
};

// Both use 16-byte accesses (4 floats, 8 halves) when the count is a multiple of that and every pointer is
// 16-byte aligned, else one element each.
void launch_clip(const ClipParams& p, cudaStream_t stream);
void launch_add(const AddParams& p, cudaStream_t stream);

}  // namespace mnv2::kernels
