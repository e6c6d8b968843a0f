// Example, slot "depthwise": register-tiled and vectorised. One thread computes 4 channels x 2 neighbouring
// output columns: the 3x3 taps of its 4 channels are loaded once into registers for 8 outputs, the input
// columns the two outputs share are read once, and every access moves 4 channels at a time (a float4 in fp32,
// 8 bytes of half in fp16) along the channel axis (NHWC), contiguous across a warp. Every loop has a
// compile-time trip count and is unrolled, so the tap and accumulator arrays stay in registers.
// mnv2 lab --slot depthwise --kernel examples/lab/dw_improved.cu
#include <cuda_fp16.h>

#include "mnv2_lab/depthwise.h"

constexpr int kVec = 4;   // channels per thread
constexpr int kCols = 2;  // output columns per thread
MNV2_LAB_BLOCK(128, 1, 1);
MNV2_LAB_TILE(kVec, kCols);  // grid rule: items = batch * out_h * ceil(out_w / kCols) * ceil(channels / kVec)

// kVec consecutive channels from element i: one 16-byte (fp32) or 8-byte (fp16) load when `whole` (the
// channel count is a multiple of kVec, so the address is aligned), else one element at a time up to `valid`.
__device__ __forceinline__ void load4(const void* base, long long i, int dtype, int valid, bool whole,
                                      float (&v)[kVec]) {
  if (whole) {
    if (dtype == mnv2_lab::kF32) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(base) + i));
      v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
      const uint2 raw = __ldg(reinterpret_cast<const uint2*>(static_cast<const __half*>(base) + i));
      const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
      v[0] = lo.x, v[1] = lo.y, v[2] = hi.x, v[3] = hi.y;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    v[j] = j >= valid                ? 0.0f
           : dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(base)[i + j])
                                     : static_cast<const float*>(base)[i + j];
}

__device__ __forceinline__ void store4(void* base, long long i, int dtype, int valid, bool whole,
                                       const float (&v)[kVec]) {
  if (whole && dtype == mnv2_lab::kF32) {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + i) = make_float4(v[0], v[1], v[2], v[3]);
  } else if (whole) {
    const __half2 lo = __floats2half2_rn(v[0], v[1]);
    const __half2 hi = __floats2half2_rn(v[2], v[3]);
    uint2 raw;
    raw.x = *reinterpret_cast<const unsigned*>(&lo);
    raw.y = *reinterpret_cast<const unsigned*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__half*>(base) + i) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (j >= valid) break;
      if (dtype == mnv2_lab::kF16)
        static_cast<__half*>(base)[i + j] = __float2half_rn(v[j]);
      else
        static_cast<float*>(base)[i + j] = v[j];
    }
  }
}

__global__ void __launch_bounds__(128) depthwise3x3_tiled(const mnv2_lab::DepthwiseParams p) {
  const int groups = mnv2_lab::ceil_div(p.channels, kVec);
  const int col_groups = mnv2_lab::ceil_div(p.out_w, kCols);
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<long long>(p.batch) * p.out_h * col_groups * groups) return;
  const int g = static_cast<int>(idx % groups);
  long long rest = idx / groups;
  const int cg = static_cast<int>(rest % col_groups);
  rest /= col_groups;
  const int oh = static_cast<int>(rest % p.out_h);
  const int n = static_cast<int>(rest / p.out_h);
  const int c = g * kVec;
  const int valid = min(kVec, p.channels - c);
  const bool whole = p.channels % kVec == 0;  // every group complete: aligned vector accesses

  float w[9][kVec];
#pragma unroll
  for (int t = 0; t < 9; ++t) {
    if (whole) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(p.weight + t * p.channels + c));
      w[t][0] = x.x, w[t][1] = x.y, w[t][2] = x.z, w[t][3] = x.w;
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) w[t][j] = j < valid ? p.weight[t * p.channels + c + j] : 0.0f;
    }
  }
  float acc[kCols][kVec];
#pragma unroll
  for (int o = 0; o < kCols; ++o)
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[o][j] = 0.0f;

  const int ow0 = cg * kCols;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int ih = oh * p.stride_h - p.pad_top + r;
    if (ih < 0 || ih >= p.in_h) continue;
    const long long row = (static_cast<long long>(n) * p.in_h + ih) * p.in_w;
#pragma unroll
    for (int o = 0; o < kCols; ++o) {
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int iw = (ow0 + o) * p.stride_w - p.pad_left + s;
        if (iw < 0 || iw >= p.in_w) continue;
        float x[kVec];
        load4(p.input, (row + iw) * p.channels + c, p.dtype, valid, whole, x);
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[o][j] = fmaf(x[j], w[r * 3 + s][j], acc[o][j]);
      }
    }
  }
  float b[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) b[j] = p.bias != nullptr && j < valid ? p.bias[c + j] : 0.0f;
#pragma unroll
  for (int o = 0; o < kCols; ++o) {
    const int ow = ow0 + o;
    if (ow >= p.out_w) break;
    float v[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = mnv2_lab::apply_clip(acc[o][j] + b[j], p.clip);
    store4(p.output, ((static_cast<long long>(n) * p.out_h + oh) * p.out_w + ow) * p.channels + c, p.dtype, valid,
           whole, v);
  }
}
