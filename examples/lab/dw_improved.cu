// Example, slot "depthwise": register-tiled and vectorised. One thread computes 4 channels x 2 neighbouring
// output columns: the 3x3 taps of its 4 channels are loaded once into registers for 8 outputs, the input columns
// the two outputs share are loaded once (4 per row at stride 1, 5 at stride 2, not 6), and every access moves
// 4 channels at a time (a float4 in fp32, 8 bytes of half in fp16) along the channel axis (NHWC), contiguous
// across a warp.
//
// Latency, not bandwidth, decides the small layers at batch 1 (a 7x7x960 map is 6720 threads: one partial wave,
// a few warps per multiprocessor, nothing to hide a load's latency behind). So the loop body has no branch
// between its loads: the element type, the channel tail and the column stride (1 or 2, MobileNetV2's) are
// template parameters chosen once per thread, and the padding is handled by clamping each address into the map
// and zeroing the loaded value (a select), not by skipping the load. Every load of a row is then independent and
// unconditional, so they are all in flight at once and a thread waits for about one memory latency per row
// instead of one per load. Every loop has a compile-time trip count and is unrolled, so the tap, input and
// accumulator arrays stay in registers.
// mnv2 lab --slot depthwise --kernel examples/lab/dw_improved.cu
#include <cuda_fp16.h>

#include "mnv2_lab/depthwise.h"

constexpr int kVec = 4;      // channels per thread
constexpr int kCols = 2;     // output columns per thread
MNV2_LAB_BLOCK(64, 1, 1);    // small blocks: at batch 1 the 7x7 and 14x14 layers then reach more multiprocessors
MNV2_LAB_TILE(kVec, kCols);  // grid rule: items = batch * out_h * ceil(out_w / kCols) * ceil(channels / kVec)

// kVec consecutive channels from element i of an activation map. kWhole: the channel count is a multiple of
// kVec, so the address is aligned for one 16-byte (fp32) or 8-byte (fp16) load; else one element at a time, the
// channels past the last (j >= valid) read from the last one (in bounds) and zeroed.
template <bool kHalf, bool kWhole>
__device__ __forceinline__ void load_vec(const void* base, long long i, int valid, float (&v)[kVec]) {
  if (kWhole && !kHalf) {
    const float4 x = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(base) + i));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else if (kWhole) {
    const uint2 raw = __ldg(reinterpret_cast<const uint2*>(static_cast<const __half*>(base) + i));
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
    v[0] = lo.x, v[1] = lo.y, v[2] = hi.x, v[3] = hi.y;
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const long long at = i + min(j, valid - 1);
      const float x = kHalf ? __half2float(__ldg(static_cast<const __half*>(base) + at))
                            : __ldg(static_cast<const float*>(base) + at);
      v[j] = j < valid ? x : 0.0f;
    }
  }
}

template <bool kHalf, bool kWhole>
__device__ __forceinline__ void store_vec(void* base, long long i, int valid, const float (&v)[kVec]) {
  if (kWhole && !kHalf) {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + i) = make_float4(v[0], v[1], v[2], v[3]);
  } else if (kWhole) {
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
      if (kHalf)
        static_cast<__half*>(base)[i + j] = __float2half_rn(v[j]);
      else
        static_cast<float*>(base)[i + j] = v[j];
    }
  }
}

// One thread's tile: channels c .. c + valid - 1, output columns ow0 .. ow0 + kCols - 1 of output row oh of image
// n. kStride: the column stride when it is 1 or 2 (the input columns of a row are loaded once, kSpan of them),
// 0 for any other (each output's three columns loaded for it).
template <int kStride, bool kHalf, bool kWhole>
__device__ __forceinline__ void depthwise_tile(const mnv2_lab::DepthwiseParams& p, int n, int oh, int ow0, int c,
                                               int valid) {
  constexpr int kSpan = kStride > 0 ? (kCols - 1) * kStride + 3 : 3 * kCols;
  const int stride_w = kStride > 0 ? kStride : p.stride_w;

  float w[9][kVec];
#pragma unroll
  for (int t = 0; t < 9; ++t) {
    if (kWhole) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(p.weight + t * p.channels + c));
      w[t][0] = x.x, w[t][1] = x.y, w[t][2] = x.z, w[t][3] = x.w;
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float x = __ldg(p.weight + t * p.channels + c + min(j, valid - 1));
        w[t][j] = j < valid ? x : 0.0f;
      }
    }
  }
  float acc[kCols][kVec];
#pragma unroll
  for (int o = 0; o < kCols; ++o)
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[o][j] = 0.0f;

  const int iw0 = ow0 * stride_w - p.pad_left;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int ih = oh * p.stride_h - p.pad_top + r;
    const bool row_ok = ih >= 0 && ih < p.in_h;
    const long long row = (static_cast<long long>(n) * p.in_h + min(max(ih, 0), p.in_h - 1)) * p.in_w;
    // The row's input columns, all loaded before any is used: column q is iw0 + q (kStride > 0), or output
    // q / 3's tap q % 3 (kStride == 0). Out of the map: the clamped column's value, zeroed.
    float x[kSpan][kVec];
#pragma unroll
    for (int q = 0; q < kSpan; ++q) {
      const int iw = kStride > 0 ? iw0 + q : (ow0 + q / 3) * stride_w - p.pad_left + q % 3;
      const bool ok = row_ok && iw >= 0 && iw < p.in_w;
      load_vec<kHalf, kWhole>(p.input, (row + min(max(iw, 0), p.in_w - 1)) * p.channels + c, valid, x[q]);
#pragma unroll
      for (int j = 0; j < kVec; ++j) x[q][j] = ok ? x[q][j] : 0.0f;
    }
#pragma unroll
    for (int o = 0; o < kCols; ++o)
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int q = kStride > 0 ? o * kStride + s : o * 3 + s;
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc[o][j] = fmaf(x[q][j], w[r * 3 + s][j], acc[o][j]);
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
    store_vec<kHalf, kWhole>(p.output, ((static_cast<long long>(n) * p.out_h + oh) * p.out_w + ow) * p.channels + c,
                             valid, v);
  }
}

template <int kStride>
__device__ __forceinline__ void depthwise_dispatch(const mnv2_lab::DepthwiseParams& p, int n, int oh, int ow0, int c,
                                                   int valid) {
  const bool whole = p.channels % kVec == 0;  // every group complete: aligned vector accesses
  if (p.dtype == mnv2_lab::kF16) {
    if (whole)
      depthwise_tile<kStride, true, true>(p, n, oh, ow0, c, valid);
    else
      depthwise_tile<kStride, true, false>(p, n, oh, ow0, c, valid);
  } else {
    if (whole)
      depthwise_tile<kStride, false, true>(p, n, oh, ow0, c, valid);
    else
      depthwise_tile<kStride, false, false>(p, n, oh, ow0, c, valid);
  }
}

__global__ void __launch_bounds__(64) depthwise3x3_tiled(const mnv2_lab::DepthwiseParams p) {
  const int groups = mnv2_lab::ceil_div(p.channels, kVec);
  const int col_groups = mnv2_lab::ceil_div(p.out_w, kCols);
  const long long items = static_cast<long long>(p.batch) * p.out_h * col_groups * groups;
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= items) return;
  // Channel groups fastest (neighbouring threads: neighbouring 16-byte channel vectors), then column groups, rows,
  // images. 32-bit division where the items fit (every MobileNetV2 layer at any batch the lab takes): a 64-bit
  // division costs several times as many instructions.
  int g, cg, oh, n;
  if (items <= 0x7fffffffll) {
    unsigned rest = static_cast<unsigned>(idx);
    g = static_cast<int>(rest % static_cast<unsigned>(groups));
    rest /= static_cast<unsigned>(groups);
    cg = static_cast<int>(rest % static_cast<unsigned>(col_groups));
    rest /= static_cast<unsigned>(col_groups);
    oh = static_cast<int>(rest % static_cast<unsigned>(p.out_h));
    n = static_cast<int>(rest / static_cast<unsigned>(p.out_h));
  } else {
    long long rest = idx;
    g = static_cast<int>(rest % groups);
    rest /= groups;
    cg = static_cast<int>(rest % col_groups);
    rest /= col_groups;
    oh = static_cast<int>(rest % p.out_h);
    n = static_cast<int>(rest / p.out_h);
  }
  const int c = g * kVec;
  const int valid = min(kVec, p.channels - c);
  const int ow0 = cg * kCols;
  if (p.stride_w == 1)
    depthwise_dispatch<1>(p, n, oh, ow0, c, valid);
  else if (p.stride_w == 2)
    depthwise_dispatch<2>(p, n, oh, ow0, c, valid);
  else
    depthwise_dispatch<0>(p, n, oh, ow0, c, valid);
}
