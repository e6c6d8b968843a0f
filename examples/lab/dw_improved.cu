// Example, slot "depthwise": register-tiled and vectorised. One thread computes 4 channels (one float4 in
// fp32) x 2 neighbouring output columns, so the 3x3 taps are loaded once per 8 outputs instead of once per
// output, and the input columns the two outputs share are read once. Loads and stores are 16-byte accesses
// along the channel axis (NHWC), contiguous across a warp.
// mnv2 lab --slot depthwise --kernel examples/lab/dw_improved.cu
#include <cuda_fp16.h>

#include "mnv2_lab/depthwise.h"

constexpr int kVec = 4;   // channels per thread
constexpr int kCols = 2;  // output columns per thread
MNV2_LAB_BLOCK(128, 1, 1);
MNV2_LAB_TILE(kVec, kCols);  // grid rule: items = batch * out_h * ceil(out_w / kCols) * ceil(channels / kVec)

// kVec consecutive channels from element `i`: one float4 when the data are float32 and whole (every group
// complete, so 16-byte aligned), else one by one.
__device__ __forceinline__ void load4(const void* base, long long i, int dtype, int valid, bool whole,
                                      float (&v)[kVec]) {
  if (dtype == mnv2_lab::kF32 && whole) {
    const float4 x = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(base) + i));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    return;
  }
  for (int j = 0; j < kVec; ++j)
    v[j] = j >= valid                ? 0.0f
           : dtype == mnv2_lab::kF16 ? __half2float(static_cast<const __half*>(base)[i + j])
                                     : static_cast<const float*>(base)[i + j];
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
  const bool whole = valid == kVec && p.channels % kVec == 0;  // 16-byte aligned float4s

  float w[9][kVec];
  for (int t = 0; t < 9; ++t) {
    if (whole) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(p.weight + t * p.channels + c));
      w[t][0] = x.x, w[t][1] = x.y, w[t][2] = x.z, w[t][3] = x.w;
    } else {
      for (int j = 0; j < kVec; ++j) w[t][j] = j < valid ? p.weight[t * p.channels + c + j] : 0.0f;
    }
  }
  float acc[kCols][kVec] = {};
  const int ow0 = cg * kCols;
  // Input columns the kCols outputs read: (kCols - 1) * stride + 3.
  const int sw = p.stride_w;
  for (int r = 0; r < 3; ++r) {
    const int ih = oh * p.stride_h - p.pad_top + r;
    if (ih < 0 || ih >= p.in_h) continue;
    const long long row = (static_cast<long long>(n) * p.in_h + ih) * p.in_w;
    for (int o = 0; o < kCols; ++o) {
      for (int s = 0; s < 3; ++s) {
        const int iw = (ow0 + o) * sw - p.pad_left + s;
        if (iw < 0 || iw >= p.in_w) continue;
        float x[kVec];
        load4(p.input, (row + iw) * p.channels + c, p.dtype, valid, whole, x);
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[o][j] = fmaf(x[j], w[r * 3 + s][j], acc[o][j]);
      }
    }
  }
  float b[kVec] = {};
  if (p.bias != nullptr)
    for (int j = 0; j < valid; ++j) b[j] = p.bias[c + j];
  for (int o = 0; o < kCols; ++o) {
    const int ow = ow0 + o;
    if (ow >= p.out_w) break;
    const long long out = ((static_cast<long long>(n) * p.out_h + oh) * p.out_w + ow) * p.channels + c;
    float v[kVec];
    for (int j = 0; j < kVec; ++j) v[j] = mnv2_lab::apply_clip(acc[o][j] + b[j], p.clip);
    if (whole && p.dtype == mnv2_lab::kF32) {
      *reinterpret_cast<float4*>(static_cast<float*>(p.output) + out) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      for (int j = 0; j < valid; ++j) {
        if (p.dtype == mnv2_lab::kF16)
          static_cast<__half*>(p.output)[out + j] = __float2half_rn(v[j]);
        else
          static_cast<float*>(p.output)[out + j] = v[j];
      }
    }
  }
}
