// Kernel lab template, slot "classifier": our simplest correct Linear layer (one thread per output element: one
// class of one image, a dot product over the input features, accumulated in float32). Edit it, then:
// mnv2 lab --slot classifier --kernel THIS_FILE.cu
#include <cuda_fp16.h>

#include "mnv2_lab/classifier.h"

MNV2_LAB_BLOCK(256, 1, 1);  // threads per block
MNV2_LAB_TILE(1, 1);        // per thread: 1 output feature x 1 image (the slot's grid rule)

__device__ __forceinline__ float load(const void* p, long long i, int dtype) {
  return dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
}

__global__ void linear(const mnv2_lab::ClassifierParams p) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<long long>(p.batch) * p.out_features) return;
  const int o = static_cast<int>(idx % p.out_features);  // neighbouring threads: neighbouring classes
  const long long n = idx / p.out_features;
  float acc = 0.0f;
  for (int k = 0; k < p.in_features; ++k)
    acc = fmaf(load(p.input, n * p.in_features + k, p.dtype),
               load(p.weight, static_cast<long long>(k) * p.ld_weight + o, p.dtype), acc);
  if (p.bias != nullptr) acc += p.bias[o];
  const long long out = n * p.ld_output + o;  // output rows are ld_output apart (padded for 16-byte rows)
  if (p.out_dtype == mnv2_lab::kF16)
    static_cast<__half*>(p.output)[out] = __float2half_rn(acc);
  else
    static_cast<float*>(p.output)[out] = acc;
}
