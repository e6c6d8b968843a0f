// Kernel lab template, slot "depthwise": our simplest correct depthwise 3x3 kernel (one thread per output
// element: one channel of one output pixel). Edit it, then: mnv2 lab --slot depthwise --kernel THIS_FILE.cu
#include <cuda_fp16.h>

#include "mnv2_lab/depthwise.h"

MNV2_LAB_BLOCK(256, 1, 1);  // threads per block
MNV2_LAB_TILE(1, 1);        // per thread: 1 channel x 1 output column (the slot's grid rule)

__device__ __forceinline__ float load(const void* p, long long i, int dtype) {
  return dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void store(void* p, long long i, int dtype, float v) {
  if (dtype == mnv2_lab::kF16)
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  else
    static_cast<float*>(p)[i] = v;
}

__global__ void depthwise3x3(const mnv2_lab::DepthwiseParams p) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long total = static_cast<long long>(p.batch) * p.out_h * p.out_w * p.channels;
  if (idx >= total) return;
  // NHWC: the channel varies fastest, so neighbouring threads read neighbouring addresses.
  const int c = static_cast<int>(idx % p.channels);
  long long rest = idx / p.channels;
  const int ow = static_cast<int>(rest % p.out_w);
  rest /= p.out_w;
  const int oh = static_cast<int>(rest % p.out_h);
  const int n = static_cast<int>(rest / p.out_h);
  float acc = 0.0f;
  for (int r = 0; r < 3; ++r) {
    const int ih = oh * p.stride_h - p.pad_top + r;
    if (ih < 0 || ih >= p.in_h) continue;
    for (int s = 0; s < 3; ++s) {
      const int iw = ow * p.stride_w - p.pad_left + s;
      if (iw < 0 || iw >= p.in_w) continue;
      const long long in_index = ((static_cast<long long>(n) * p.in_h + ih) * p.in_w + iw) * p.channels + c;
      acc = fmaf(load(p.input, in_index, p.dtype), p.weight[(r * 3 + s) * p.channels + c], acc);
    }
  }
  if (p.bias != nullptr) acc += p.bias[c];
  store(p.output, idx, p.dtype, mnv2_lab::apply_clip(acc, p.clip));
}
