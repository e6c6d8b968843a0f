// Example, slot "pool": the naive kernel (the template as shipped): one thread per output element.
// mnv2 lab --slot pool --kernel examples/lab/pool_naive.cu
#include <cuda_fp16.h>

#include "mnv2_lab/pool.h"

MNV2_LAB_BLOCK(256, 1, 1);  // threads per block
MNV2_LAB_TILE(1, 1);        // per thread: 1 channel of one image (the slot's grid rule; b is not used)

__device__ __forceinline__ float load(const void* p, long long i, int dtype) {
  return dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
}

__global__ void global_avg_pool(const mnv2_lab::PoolParams p) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<long long>(p.batch) * p.channels) return;
  const int c = static_cast<int>(idx % p.channels);  // neighbouring threads: neighbouring channels
  const long long n = idx / p.channels;
  // NHWC: pixel q's channel c is at (n * plane + q) * channels + c (neighbouring threads read neighbouring
  // addresses); NCHW: (n * channels + c) * plane + q.
  const bool nhwc = p.layout == mnv2_lab::kNHWC;
  const long long base = nhwc ? n * p.plane * p.channels + c : (n * p.channels + c) * p.plane;
  const long long step = nhwc ? p.channels : 1;
  float sum = 0.0f;
  for (int q = 0; q < p.plane; ++q) sum += load(p.input, base + q * step, p.dtype);
  const float mean = sum / static_cast<float>(p.plane);
  if (p.dtype == mnv2_lab::kF16)
    static_cast<__half*>(p.output)[idx] = __float2half_rn(mean);
  else
    static_cast<float*>(p.output)[idx] = mean;
}
