// The stem and the first block in one kernel (fused_stem.cuh). A block of kFusedStemThreads threads owns
// TH x kFusedStemTileW output pixels of one image:
//   0. the packed weights (fused_stem_pack, about 7 KB) into shared memory with 16-byte loads, before waiting for
//      the previous kernel (PDL: they are constants);
//   1. the input window the tile needs ((TH + 1) * 2 + 3 rows of each of the 3 channels, zero outside the
//      image), float32, into shared memory, its columns stored even ones first (fused_stem_window_pitch);
//   2. the stem over the (TH + 2) x (kFusedStemTileW + 2) pixels the depthwise reads (stem_mma on tensor cores for
//      a half output with compute_80 code, else stem_ffma), + bias, clip, rounded to the activation type T, into
//      shared memory; zero where the pixel lies outside the stem's map (the depthwise's padding);
//   3. the depthwise 3x3 over that, 8 channels of one pixel per item, FFMA, + bias, clip, T, into shared memory;
//   4. the projection (project_mma or project_ffma), + bias, into a staging tile that the block then stores with
//      16-byte accesses, the tile's rows contiguous in NHWC.
// v1 took every weight as a kernel parameter (constant bank): ptxas gave each FFMA a uniform-register operand
// loaded by ULDC (one per two FFMA), and ncu on the H200 measured 40% of the warps' stall cycles waiting for
// immediate-constant cache misses (7 KB of weights, read by warps in different phases), 1.31 ms at batch 256
// (docs/PERFORMANCE.md run 10). v2 staged them in shared memory (0.61 ms, ncu: 4.7k instructions per thread);
// v3 moves the stem and the projection of the half kernel to tensor cores.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "kernels/fused_stem.cuh"
#include "kernels/layout.cuh"  // to_half_bits
#include "kernels/mma.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kThreads = kFusedStemThreads;
constexpr int kTileW = kFusedStemTileW;
constexpr int kStride = 2;  // the stem's (fused_stem_refusal)
constexpr int kPitch = fused_stem_window_pitch(kStride);

struct Geometry {
  int in_h, in_w, stem_h, stem_w, out_h, out_w;
  int stem_pad_top, stem_pad_left, dw_pad_top, dw_pad_left;
  int tiles_w;
  Clip stem_clip, dw_clip;
  bool weights_before_wait;  // FusedStemParams::weights_before_wait
};

// The layout of one block's shared memory (elements), as fused_stem_smem_bytes counts it: the weights
// (FusedStemLayout), the input window (float32, rounded up to 16 bytes: the maps after it take 16-byte accesses),
// the stem's map and the depthwise's (T, a pixel's pitch 16 bytes more than its channels).
template <class T, int C1, int C2, int TH>
struct Smem {
  using W = FusedStemLayout<C1, C2>;
  static constexpr int kRows = TH + 2, kCols = kTileW + 2;  // the stem's map the depthwise reads
  static constexpr int kStemPixels = kRows * kCols;
  static constexpr int kWinRows = (kRows - 1) * kStride + 3, kWinCols = (kCols - 1) * kStride + 3;
  static constexpr int kEvenCols = (kWinCols + 1) / 2;
  static constexpr int kWindow = (3 * kWinRows * kPitch + 3) / 4 * 4;  // floats
  static constexpr int kPer = 16 / static_cast<int>(sizeof(T));        // elements per 16-byte access
  static constexpr int kLd = C1 + kPer;
  static constexpr int kLdOut = C2 + kPer;  // the projection's staging tile (over the stem's map)
  static constexpr int kTile = TH * kTileW;
  static constexpr int kBytes = (W::kTotal + kWindow) * 4 + (kStemPixels + kTile) * kLd * static_cast<int>(sizeof(T));
  static_assert(kPitch >= kWinCols, "the window's rows fit their pitch");
  static_assert(kStemPixels % 2 == 0 && kTile % 64 == 0, "pixel pairs, and whole warps per channel group");
};

// Column j of the window at its place in a row: even columns first.
__device__ __forceinline__ int window_col(int j, int even_cols) { return (j & 1) ? even_cols + (j >> 1) : (j >> 1); }

// 8 consecutive float32 from shared memory (two 16-byte loads; every lane of a warp reads the same ones).
__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// The stem, FFMA: 8 channels of pixels p and p + kPairs per work item (consecutive lanes, consecutive pixels: the
// window reads hit consecutive banks); each tap's 8 weights, two broadcast 16-byte loads, feed 16 FFMA.
template <class T, int C1, int C2, int TH>
__device__ __forceinline__ void stem_ffma(const Geometry& g, const float* w, const float* win, T* stem, int sy0,
                                          int sx0) {
  using L = Smem<T, C1, C2, TH>;
  using W = typename L::W;
  constexpr int G1 = C1 / 8;
  const int tid = threadIdx.x;
  constexpr int kPairs = L::kStemPixels / 2;
  for (int item = tid; item < G1 * kPairs; item += kThreads) {
    const int grp = item / kPairs, p0 = item - grp * kPairs;
    float x[2][27];
    bool inside[2];
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int px = p0 + q * kPairs;
      const int sy = px / L::kCols, sx = px - sy * L::kCols;
      inside[q] = sy0 + sy >= 0 && sy0 + sy < g.stem_h && sx0 + sx >= 0 && sx0 + sx < g.stem_w;
#pragma unroll
      for (int ci = 0; ci < 3; ++ci)
#pragma unroll
        for (int ky = 0; ky < 3; ++ky) {
          const float* row = win + (ci * L::kWinRows + sy * kStride + ky) * kPitch;
          x[q][(ky * 3 + 0) * 3 + ci] = row[sx];
          x[q][(ky * 3 + 1) * 3 + ci] = row[L::kEvenCols + sx];
          x[q][(ky * 3 + 2) * 3 + ci] = row[sx + 1];
        }
    }
    float acc[2][8];
    {
      float b[8];
      load8(w + W::kStemBias + grp * 8, b);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[0][j] = acc[1][j] = b[j];
    }
#pragma unroll
    for (int t = 0; t < 27; ++t) {
      float wt[8];
      load8(w + W::kStem + t * C1 + grp * 8, wt);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        acc[0][j] = fmaf(x[0][t], wt[j], acc[0][j]);
        acc[1][j] = fmaf(x[1][t], wt[j], acc[1][j]);
      }
    }
#pragma unroll
    for (int q = 0; q < 2; ++q) {
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[q][j] = inside[q] ? apply_clip(acc[q][j], g.stem_clip) : 0.0f;
      store_floats<T, 8>(stem + (p0 + q * kPairs) * L::kLd + grp * 8, acc[q]);
    }
  }
}

// The stem on tensor cores (half output): the stem's map as a GEMM of (pixels x 32) by (32 x C1), k = tap * 3 +
// channel (27, zero-padded to 32), one m16n8k16 tile row of 16 pixels per warp iteration. Each lane gathers its
// A fragment from the float32 window (its 8 k columns fixed, their window offsets computed once) and rounds it to
// half; the B fragments (weights rounded to half) stay in registers; float32 accumulation, then bias, clip, zero
// outside the stem's map, half pairs into the map.
template <int C1, int C2, int TH>
__device__ __forceinline__ void stem_mma(const Geometry& g, const float* w, const float* win, __half* stem, int sy0,
                                         int sx0) {
#ifndef MNV2_HAS_MMA
  __trap();  // never instantiated for older code: kMma is false there
#else
  using L = Smem<__half, C1, C2, TH>;
  using W = typename L::W;
  constexpr int kNT = C1 / 8;
  constexpr int kRowTiles = (L::kStemPixels + 15) / 16;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int quad = lane % 4, r_in = lane / 4;
  // This lane's k columns: j = 4 s + 2 h + e -> k = 16 s + 8 h + 2 quad + e.
  int off[8];
  bool kin[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int k = (j / 4) * 16 + (j / 2 % 2) * 8 + quad * 2 + j % 2;
    kin[j] = k < 27;
    const int t = k / 3, ci = k % 3, ky = t / 3, kx = t % 3;
    off[j] = kin[j] ? (ci * L::kWinRows + ky) * kPitch + (kx == 0 ? 0 : kx == 1 ? L::kEvenCols : 1) : 0;
  }
  unsigned b[kNT][2][2];
  float bias[kNT][2];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int n = nt * 8 + r_in;
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = s * 16 + h * 8 + quad * 2;
        const float w0 = k < 27 ? w[W::kStem + k * C1 + n] : 0.0f;
        const float w1 = k + 1 < 27 ? w[W::kStem + (k + 1) * C1 + n] : 0.0f;
        b[nt][s][h] = pack_half2(w0, w1);
      }
    bias[nt][0] = w[W::kStemBias + nt * 8 + quad * 2];
    bias[nt][1] = w[W::kStemBias + nt * 8 + quad * 2 + 1];
  }
  for (int rt = warp; rt < kRowTiles; rt += kThreads / 32) {
    int base[2];
    bool valid[2], inside[2];
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int r = rt * 16 + r_in + q * 8;
      valid[q] = r < L::kStemPixels;
      const int sy = valid[q] ? r / L::kCols : 0, sx = valid[q] ? r % L::kCols : 0;
      base[q] = sy * kStride * kPitch + sx;
      inside[q] = sy0 + sy >= 0 && sy0 + sy < g.stem_h && sx0 + sx >= 0 && sx0 + sx < g.stem_w;
    }
    unsigned a[2][4];
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const int j = s * 4 + h * 2;
          const float x0 = kin[j] ? win[base[q] + off[j]] : 0.0f;
          const float x1 = kin[j + 1] ? win[base[q] + off[j + 1]] : 0.0f;
          a[s][h * 2 + q] = pack_half2(x0, x1);
        }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma16816(c, a[0], b[nt][0][0], b[nt][0][1]);
      mma16816(c, a[1], b[nt][1][0], b[nt][1][1]);
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        if (!valid[q]) continue;
        const float v0 = inside[q] ? apply_clip(c[q * 2] + bias[nt][0], g.stem_clip) : 0.0f;
        const float v1 = inside[q] ? apply_clip(c[q * 2 + 1] + bias[nt][1], g.stem_clip) : 0.0f;
        *reinterpret_cast<unsigned*>(stem + (rt * 16 + r_in + q * 8) * L::kLd + nt * 8 + quad * 2) = pack_half2(v0, v1);
      }
    }
  }
#endif
}

// The projection on tensor cores (half): 16 tile pixels per warp iteration, A by ldmatrix from the depthwise's map,
// the B fragments (the weights, already rounded to half by fused_stem_pack) in registers, float32 accumulation,
// bias, half pairs into the staging tile.
template <int C1, int C2, int TH>
__device__ __forceinline__ void project_mma(const float* w, const __half* dwo, __half* stage) {
#ifndef MNV2_HAS_MMA
  __trap();  // never instantiated for older code: kMma is false there
#else
  using L = Smem<__half, C1, C2, TH>;
  using W = typename L::W;
  constexpr int kKS = C1 / 16, kNT = C2 / 8, kRowTiles = L::kTile / 16;
  constexpr int kLdOut = L::kLdOut;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int quad = lane % 4, r_in = lane / 4;
  unsigned b[kNT][kKS][2];
  float bias[kNT][2];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int n = nt * 8 + r_in;
#pragma unroll
    for (int s = 0; s < kKS; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = s * 16 + h * 8 + quad * 2;
        b[nt][s][h] = pack_half2(w[W::kProject + k * C2 + n], w[W::kProject + (k + 1) * C2 + n]);
      }
    bias[nt][0] = w[W::kProjectBias + nt * 8 + quad * 2];
    bias[nt][1] = w[W::kProjectBias + nt * 8 + quad * 2 + 1];
  }
  for (int rt = warp; rt < kRowTiles; rt += kThreads / 32) {
    unsigned a[kKS][4];
#pragma unroll
    for (int s = 0; s < kKS; ++s) ldmatrix_x4(a[s], dwo + (rt * 16 + lane % 16) * L::kLd + s * 16 + (lane / 16) * 8);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int s = 0; s < kKS; ++s) mma16816(c, a[s], b[nt][s][0], b[nt][s][1]);
#pragma unroll
      for (int q = 0; q < 2; ++q)
        *reinterpret_cast<unsigned*>(stage + (rt * 16 + r_in + q * 8) * kLdOut + nt * 8 + quad * 2) =
            pack_half2(c[q * 2] + bias[nt][0], c[q * 2 + 1] + bias[nt][1]);
    }
  }
#endif
}

// The projection, FFMA: 8 output channels of pixels p and p + kTile / 2 per item (each input channel's 8 weights
// feed 16 FFMA), into the staging tile.
template <class T, int C1, int C2, int TH>
__device__ __forceinline__ void project_ffma(const float* w, const T* dwo, T* stage) {
  using L = Smem<T, C1, C2, TH>;
  using W = typename L::W;
  constexpr int G1 = C1 / 8, G2 = C2 / 8;
  constexpr int kLdOut = L::kLdOut;
  const int tid = threadIdx.x;
  constexpr int kHalf = L::kTile / 2;
  for (int item = tid; item < G2 * kHalf; item += kThreads) {
    const int grp = item / kHalf, p0 = item - grp * kHalf;
    float acc[2][8];
    {
      float b[8];
      load8(w + W::kProjectBias + grp * 8, b);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[0][j] = acc[1][j] = b[j];
    }
#pragma unroll
    for (int c8 = 0; c8 < G1; ++c8) {
      float d[2][8];
      load_floats<T, 8, true>(dwo + p0 * L::kLd + c8 * 8, d[0]);
      load_floats<T, 8, true>(dwo + (p0 + kHalf) * L::kLd + c8 * 8, d[1]);
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        float wt[8];
        load8(w + W::kProject + (c8 * 8 + c) * C2 + grp * 8, wt);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          acc[0][j] = fmaf(d[0][c], wt[j], acc[0][j]);
          acc[1][j] = fmaf(d[1][c], wt[j], acc[1][j]);
        }
      }
    }
    store_floats<T, 8>(stage + p0 * kLdOut + grp * 8, acc[0]);
    store_floats<T, 8>(stage + (p0 + kHalf) * kLdOut + grp * 8, acc[1]);
  }
}

template <class T, int C1, int C2, int TH>
__global__ void __launch_bounds__(kThreads, sizeof(T) == 2 ? 3 : 2)
    fused_stem_kernel(const Geometry g, const float* __restrict__ input, const float* __restrict__ weights,
                      void* __restrict__ output) {
  using L = Smem<T, C1, C2, TH>;
  using W = typename L::W;
  constexpr int G1 = C1 / 8;
  static_assert(C1 % 8 == 0 && C2 % 8 == 0, "channels come in groups of 8");
#ifdef MNV2_HAS_MMA
  constexpr bool kMma = std::is_same_v<T, __half>;
#else
  constexpr bool kMma = false;
#endif
  extern __shared__ __align__(16) unsigned char smem[];
  float* w = reinterpret_cast<float*>(smem);
  float* win = w + W::kTotal;
  T* stem = reinterpret_cast<T*>(win + L::kWindow);
  T* dwo = stem + L::kStemPixels * L::kLd;
  T* stage = stem;  // the projection's tile, once the depthwise has read the stem's map
  constexpr int kLdOut = L::kLdOut;

  const int tid = threadIdx.x;
  const int n = blockIdx.y;
  const int ty0 = static_cast<int>(blockIdx.x) / g.tiles_w * TH;
  const int tx0 = static_cast<int>(blockIdx.x) % g.tiles_w * kTileW;
  const int sy0 = ty0 - g.dw_pad_top, sx0 = tx0 - g.dw_pad_left;  // the stem's map at the tile's corner
  const int iy0 = sy0 * kStride - g.stem_pad_top, ix0 = sx0 * kStride - g.stem_pad_left;

  // 0. The weights: where they are constants (weights_before_wait), before the wait for the previous kernel.
  auto load_weights = [&] {
    for (int e = tid; e < W::kTotal / 4; e += kThreads)
      reinterpret_cast<float4*>(w)[e] = __ldg(reinterpret_cast<const float4*>(weights) + e);
  };
  if (g.weights_before_wait) load_weights();
  pdl_enter();  // the input may come from the previous kernel (the uint8 conversion)
  if (!g.weights_before_wait) load_weights();

  // 1. The input window.
  const float* in = input + static_cast<int64_t>(n) * 3 * g.in_h * g.in_w;
  constexpr int kWinElems = 3 * L::kWinRows * L::kWinCols;
  for (int e = tid; e < kWinElems; e += kThreads) {
    const int ci = e / (L::kWinRows * L::kWinCols);
    const int r = e / L::kWinCols % L::kWinRows, j = e % L::kWinCols;
    const int y = iy0 + r, x = ix0 + j;
    const bool inside = y >= 0 && y < g.in_h && x >= 0 && x < g.in_w;
    win[(ci * L::kWinRows + r) * kPitch + window_col(j, L::kEvenCols)] =
        inside ? __ldg(in + (static_cast<int64_t>(ci) * g.in_h + y) * g.in_w + x) : 0.0f;
  }
  __syncthreads();

  // 2. The stem over the depthwise's window (half output with compute_80 code: tensor cores; else FFMA).
  if constexpr (kMma) {
    stem_mma<C1, C2, TH>(g, w, win, stem, sy0, sx0);
  } else {
    stem_ffma<T, C1, C2, TH>(g, w, win, stem, sy0, sx0);
  }
  __syncthreads();
  // 3. The depthwise, 8 channels of one output pixel per item (the group uniform in a warp: kTile is a multiple
  // of 32): half2 FMA over the 9 taps from the bias for a half map (as the fused blocks and cuDNN's fp16
  // depthwise), else float32 FFMA.
  if constexpr (std::is_same_v<T, __half>) {
    const ClipH2 clip = clip_h2(g.dw_clip);
    const __half2* wh = reinterpret_cast<const __half2*>(w + W::kDwHalf);  // [10][C1 / 2]
    for (int item = tid; item < G1 * L::kTile; item += kThreads) {
      const int grp = item / L::kTile, px = item - grp * L::kTile;
      const int oy = px / kTileW, ox = px % kTileW;
      uint4 raw = *reinterpret_cast<const uint4*>(wh + 9 * (C1 / 2) + grp * 4);
      __half2 acc[4];
      std::memcpy(acc, &raw, 16);
#pragma unroll
      for (int ky = 0; ky < 3; ++ky)
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          const uint4 sr = *reinterpret_cast<const uint4*>(stem + ((oy + ky) * L::kCols + ox + kx) * L::kLd + grp * 8);
          const uint4 wr = *reinterpret_cast<const uint4*>(wh + (ky * 3 + kx) * (C1 / 2) + grp * 4);
          const __half2* s2 = reinterpret_cast<const __half2*>(&sr);
          const __half2* w2 = reinterpret_cast<const __half2*>(&wr);
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[j] = __hfma2(s2[j], w2[j], acc[j]);
        }
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] = clip2(acc[j], clip);
      std::memcpy(&raw, acc, 16);
      *reinterpret_cast<uint4*>(dwo + px * L::kLd + grp * 8) = raw;
    }
  } else {
    for (int item = tid; item < G1 * L::kTile; item += kThreads) {
      const int grp = item / L::kTile, px = item - grp * L::kTile;
      const int oy = px / kTileW, ox = px % kTileW;
      float acc[8];
      load8(w + W::kDwBias + grp * 8, acc);
#pragma unroll
      for (int ky = 0; ky < 3; ++ky)
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          float s[8], wt[8];
          load_floats<T, 8, true>(stem + ((oy + ky) * L::kCols + ox + kx) * L::kLd + grp * 8, s);
          load8(w + W::kDw + (ky * 3 + kx) * C1 + grp * 8, wt);
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[j] = fmaf(s[j], wt[j], acc[j]);
        }
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = apply_clip(acc[j], g.dw_clip);
      store_floats<T, 8>(dwo + px * L::kLd + grp * 8, acc);
    }
  }
  __syncthreads();

  // 4. The projection into the staging tile (tensor cores where the stem's channels are whole k steps of 16).
  if constexpr (kMma && C1 % 16 == 0) {
    project_mma<C1, C2, TH>(w, dwo, stage);
  } else {
    project_ffma<T, C1, C2, TH>(w, dwo, stage);
  }
  __syncthreads();
  // The tile's rows, 16 bytes per access.
  constexpr int kPer = L::kPer;
  constexpr int kChunksPerPixel = C2 / kPer;
  T* out = static_cast<T*>(output);
  for (int q = tid; q < L::kTile * kChunksPerPixel; q += kThreads) {
    const int px = q / kChunksPerPixel, part = q % kChunksPerPixel;
    const int oy = ty0 + px / kTileW, ox = tx0 + px % kTileW;
    if (oy >= g.out_h || ox >= g.out_w) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(stage + px * kLdOut + part * kPer);
    *reinterpret_cast<uint4*>(out + ((static_cast<int64_t>(n) * g.out_h + oy) * g.out_w + ox) * C2 + part * kPer) = v;
  }
}

template <class T, int C1, int C2, int TH>
void launch_one(const FusedStemParams& p, cudaStream_t stream) {
  using L = Smem<T, C1, C2, TH>;
  const FusedStemShape& s = p.shape;
  Geometry g{};
  g.in_h = s.in_h;
  g.in_w = s.in_w;
  g.stem_h = s.stem_h;
  g.stem_w = s.stem_w;
  g.out_h = s.out_h;
  g.out_w = s.out_w;
  g.stem_pad_top = s.stem_pad_top;
  g.stem_pad_left = s.stem_pad_left;
  g.dw_pad_top = s.dw_pad_top;
  g.dw_pad_left = s.dw_pad_left;
  g.tiles_w = static_cast<int>(ceil_div(s.out_w, kTileW));
  g.stem_clip = p.stem_clip;
  g.dw_clip = p.dw_clip;
  g.weights_before_wait = p.weights_before_wait;
  auto* kernel = fused_stem_kernel<T, C1, C2, TH>;
  static const cudaError_t opted =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes));
  MNV2_KERNEL_CALL("fused_stem", opted);
  const dim3 grid(static_cast<unsigned>(ceil_div(s.out_h, TH) * g.tiles_w), static_cast<unsigned>(s.batch));
  kernel<<<grid, kThreads, L::kBytes, stream>>>(g, p.input, p.weights, p.output);
  MNV2_CHECK_LAUNCH("fused_stem");
}

template <class T, int C1, int C2>
void launch_tile(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  static_assert(FusedStemLayout<C1, C2>::kTotal == fused_stem_offsets(C1, C2).total);
  if (v.tile_h == 16) return launch_one<T, C1, C2, 16>(p, stream);
  return launch_one<T, C1, C2, 8>(p, stream);
}

template <class T>
void launch_type(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  static_assert(std::size(kFusedStemChannels) == 4, "one branch per built channel pair");
  const int c1 = p.shape.stem_channels, c2 = p.shape.out_channels;
  if (c1 == 32 && c2 == 16) return launch_tile<T, 32, 16>(p, v, stream);
  if (c1 == 16 && c2 == 8) return launch_tile<T, 16, 8>(p, v, stream);
  if (c1 == 24 && c2 == 16) return launch_tile<T, 24, 16>(p, v, stream);
  if (c1 == 48 && c2 == 24) return launch_tile<T, 48, 24>(p, v, stream);
  throw Error("fused_stem: no kernel for " + std::to_string(c1) + "->" + std::to_string(c2) + " channels");
}

}  // namespace

// tiles.h's arithmetic is the kernel's own.
static_assert(Smem<__half, 32, 16, 16>::kBytes ==
              (fused_stem_offsets(32, 16).total + (3 * 37 * kPitch + 3) / 4 * 4) * 4 + (18 * 18 + 256) * 40 * 2);
static_assert(Smem<float, 48, 24, 8>::kWindow % 4 == 0 && Smem<__half, 16, 8, 8>::kWindow % 4 == 0);

std::vector<float> fused_stem_pack(const FusedStemShape& s, const std::vector<float>& stem,
                                   const std::vector<float>& stem_bias, const std::vector<float>& dw,
                                   const std::vector<float>& dw_bias, const std::vector<float>& project,
                                   const std::vector<float>& project_bias) {
  const size_t c1 = static_cast<size_t>(std::max(0, s.stem_channels));
  const size_t c2 = static_cast<size_t>(std::max(0, s.out_channels));
  if (stem.size() != c1 * 27 || dw.size() != c1 * 9 || project.size() != c2 * c1 ||
      (!stem_bias.empty() && stem_bias.size() != c1) || (!dw_bias.empty() && dw_bias.size() != c1) ||
      (!project_bias.empty() && project_bias.size() != c2))
    throw Error("fused_stem: weight sizes do not match " + std::to_string(c1) + "->" + std::to_string(c2) +
                " channels");
  const FusedStemOffsets o = fused_stem_offsets(s.stem_channels, s.out_channels);
  std::vector<float> w(static_cast<size_t>(o.total), 0.0f);
  for (size_t oc = 0; oc < c1; ++oc)
    for (size_t ci = 0; ci < 3; ++ci)
      for (size_t t = 0; t < 9; ++t) w[o.stem + (t * 3 + ci) * c1 + oc] = stem[(oc * 3 + ci) * 9 + t];
  for (size_t oc = 0; oc < c1; ++oc)
    for (size_t t = 0; t < 9; ++t) w[o.dw + t * c1 + oc] = dw[oc * 9 + t];
  // The projection transposed to [input channel][output channel]; rounded to half for a half output.
  std::vector<float> pw = project;
  if (s.dtype == DType::f16) {
    const std::vector<uint16_t> bits = to_half_bits(project);
    for (size_t i = 0; i < bits.size(); ++i) pw[i] = half_bits_to_float(bits[i]);
  }
  for (size_t oc = 0; oc < c2; ++oc)
    for (size_t c = 0; c < c1; ++c) w[o.project + c * c2 + oc] = pw[oc * c1 + c];
  std::copy(stem_bias.begin(), stem_bias.end(), w.begin() + o.stem_bias);
  std::copy(dw_bias.begin(), dw_bias.end(), w.begin() + o.dw_bias);
  std::copy(project_bias.begin(), project_bias.end(), w.begin() + o.project_bias);
  // The depthwise's weights and bias as half, tap-major then the bias: [10][c1] halves in 5 * c1 float slots.
  const std::vector<uint16_t> dw_half = to_half_bits(std::vector<float>(w.begin() + o.dw, w.begin() + o.dw + 10 * c1));
  std::memcpy(w.data() + o.dw_half, dw_half.data(), dw_half.size() * sizeof(uint16_t));
  return w;
}

void launch_fused_stem(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  const FusedStemShape& s = p.shape;
  if (const std::string why = fused_stem_refusal(s); !why.empty()) throw Error("fused_stem: " + why);
  if (v.tile_h != 8 && v.tile_h != 16)
    throw Error("fused_stem: tile of " + std::to_string(v.tile_h) + " rows (8 or 16 only)");
  if (p.input == nullptr || p.weights == nullptr || p.output == nullptr) throw Error("fused_stem: null operand");
  if (!aligned16(p.output) || !aligned16(p.weights))
    throw Error("fused_stem: the output and the weights must be 16-byte aligned");
  if (p.output == p.input) throw Error("fused_stem: the output must not alias the input");
  if (s.dtype == DType::f16) return launch_type<__half>(p, v, stream);
  return launch_type<float>(p, v, stream);
}

}  // namespace mnv2::kernels
