// Example, slot "pointwise": the naive kernel (the template as shipped): one thread per output element.
// mnv2 lab --slot pointwise --kernel examples/lab/pw_naive.cu
#include <cuda_fp16.h>

#include "mnv2_lab/pointwise.h"

MNV2_LAB_BLOCK(256, 1, 1);  // threads per block
MNV2_LAB_TILE(1, 1);        // per thread: 1 output channel x 1 pixel (the slot's grid rule)

__device__ __forceinline__ float load(const void* p, long long i, int dtype) {
  return dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
}

__global__ void pointwise1x1(const mnv2_lab::PointwiseParams p) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<long long>(p.pixels) * p.out_channels) return;
  const int o = static_cast<int>(idx % p.out_channels);  // neighbouring threads: neighbouring output channels
  const long long pixel = idx / p.out_channels;
  float acc = 0.0f;
  for (int k = 0; k < p.in_channels; ++k)
    acc = fmaf(load(p.input, pixel * p.in_channels + k, p.dtype),
               load(p.weight, static_cast<long long>(k) * p.out_channels + o, p.dtype), acc);
  if (p.bias != nullptr) acc += p.bias[o];
  acc = mnv2_lab::apply_clip(acc, p.clip);
  if (p.residual != nullptr) acc += load(p.residual, idx, p.dtype);
  if (p.dtype == mnv2_lab::kF16)
    static_cast<__half*>(p.output)[idx] = __float2half_rn(acc);
  else
    static_cast<float*>(p.output)[idx] = acc;
}
