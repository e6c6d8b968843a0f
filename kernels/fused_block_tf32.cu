// A whole inverted-residual block in one kernel, TF32 (fused_block.cuh; the plan in tiles.h: FusedBlock* with
// FusedBlockMath::tf32; the launch and its checks in fused_block.cu). The fp16 kernel's tile ownership, warp items
// and two-barrier chunk loop over float32 activations: a block of 256 threads owns tile_h x tile_w output pixels of
// one image:
//   1. cp.async brings the tile's input window (zero outside the map) and the first chunk's weights and vectors
//      into shared memory;
//   2. per chunk of 32 expanded channels (the next chunk's in flight meanwhile): the expansion of the whole window
//      on tensor cores (mma.sync m16n8k8 TF32, float32 accumulators; the window rounded to TF32 as it is read, the
//      matrices on the host), bias and clip in float32 into shared memory (zero for window pixels outside the map:
//      the depthwise padding); the depthwise in float32 FFMA (4 pixels x 4 channels per item, from the bias over
//      the 9 taps, each window column loaded once for every tap and pixel it feeds), clip, rounded to TF32 into a
//      second buffer; the projection of that buffer on tensor cores into accumulators that stay in registers;
//   3. the projection's bias, the residual from the float32 input window already on chip, float32 NHWC stores.
// The fragments are read 8 bytes (A) and 4 bytes (B) a lane: the k index of an m16n8k8 step is permuted (a lane's
// logical columns l % 4 and l % 4 + 4 are the physical columns 2 (l % 4) and 2 (l % 4) + 1, for A and B alike, which
// leaves the sum unchanged), so a lane's two A values of a row are one 8-byte load; tiles.h gives the pitches that
// keep every fragment load free of bank conflicts.
#include <string>

#include "kernels/fused_block.cuh"
#include "kernels/fused_block_parts.cuh"
#include "kernels/mma.cuh"

namespace mnv2::kernels {
namespace {

using fused_block_detail::DwWalk;
using fused_block_detail::Geometry;
using fused_block_detail::TileOrigin;
constexpr int kChunk = kFusedBlockChunk;
constexpr int kThreads = kFusedBlockThreads;
static_assert(kChunk == 32, "the expansion computes 4 n-tiles of 8 channels per row tile");
// Used by the kernel's body only (compiled for compute_80 and newer).
[[maybe_unused]] constexpr int kWarps = kFusedBlockWarps;
// A chunk's vectors in its dw buffer (floats): the depthwise's weights [9][chunk], then its bias.
[[maybe_unused]] constexpr int kDwBias = 9 * kChunk;

template <int kItems, int kStride>
__global__ void __launch_bounds__(kThreads, kItems <= 4 ? 2 : 1)
    fused_block_tf32_kernel(const FusedBlockParams p, const Geometry g) {
#ifdef MNV2_HAS_MMA
  extern __shared__ __align__(128) unsigned char smem[];
  const FusedBlockShape& s = p.shape;
  const FusedBlockLayout& l = g.l;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const TileOrigin<kStride> tile(s, g.tiles, g.tiles_w, g.tile_h, g.tile_w);
  const int pout = g.tile_h * g.tile_w;
  float* X = reinterpret_cast<float*>(smem + l.x);
  float* Ex = reinterpret_cast<float*>(smem + l.ex);
  float* D = reinterpret_cast<float*>(smem + l.d);
  // One chunk's matrices and vectors into buffer `buf`.
  auto load_chunk = [&](int c, int buf) {
    const int e0 = c * kChunk;
    fused_block_detail::copy_chunk_matrices<kThreads>(
        static_cast<const float*>(p.expand_weight), static_cast<const float*>(p.project_weight), l.k_pad, l.e_pad,
        l.co_pad, e0, reinterpret_cast<float*>(smem + l.we + buf * l.we_bytes), l.ld_e,
        reinterpret_cast<float*>(smem + l.wp + buf * l.wp_bytes), l.ld_p, tid);
    // Thread t < 8: the expansion's bias; 8..79: the depthwise's taps; 80..87: its bias (4 channels each).
    constexpr int kQuads = kChunk / 4;
    float* eb = reinterpret_cast<float*>(smem + l.eb + buf * l.bias_bytes);
    float* dw = reinterpret_cast<float*>(smem + l.dw + buf * l.dw_bytes);
    if (tid < kQuads) {
      cp16(eb + tid * 4, p.expand_bias + e0 + tid * 4, true);
    } else if (tid < 10 * kQuads) {
      const int t = (tid - kQuads) / kQuads, c4 = ((tid - kQuads) % kQuads) * 4;
      cp16(dw + t * kChunk + c4, p.dw_weight + static_cast<int64_t>(t) * l.e_pad + e0 + c4, true);
    } else if (tid < 11 * kQuads) {
      cp16(dw + kDwBias + (tid - 10 * kQuads) * 4, p.dw_bias + e0 + (tid - 10 * kQuads) * 4, true);
    }
  };
  // The first chunk's weights, where they are constants (weights_before_wait), in flight before the wait for the
  // previous kernel (PDL); then the input window, both in the first copy group.
  if (p.weights_before_wait) load_chunk(0, 0);
  pdl_enter();
  if (!p.weights_before_wait) load_chunk(0, 0);
  fused_block_detail::copy_window<kThreads>(tile, s, l, static_cast<const float*>(p.input), X, tid);
  cp_commit();
  // The projection's padding rows (pixels past the tile) read zeros.
  for (int i = tid; i < (l.m2 - pout) * (kChunk / 4); i += kThreads) {
    const int r = pout + i / (kChunk / 4), c4 = (i % (kChunk / 4)) * 4;
    *reinterpret_cast<float4*>(D + r * l.ld_d + c4) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  const int col_groups = l.co_pad / 32;
  const int items_total = (l.m2 / 16) * col_groups;
  const int gq = lane >> 2, tq = lane & 3;  // the fragments' row (and row + 8) and column (pair)
  float acc[kItems][4][4];
  fused_block_detail::zero_accumulators(acc);

  // Per tile, not per chunk: which of this thread's expansion rows are inside the map, the projection items'
  // fragment offsets, the depthwise's first item.
  const int row_tiles = l.m1 / 16;
  const uint32_t inside_bits = fused_block_detail::row_inside_bits(tile, s, l, warp, gq);
  // Item j's offsets in floats at k0 = 0: D's A fragment, row gq (low 16 bits: m2 <= 256 rows of 40 floats), and
  // wp's B fragment, row 2 tq, column gq (high 16 bits: 6 rows of co_pad + 4 and a column < co_pad; a launch has at
  // most 48 items, so co_pad <= 1536).
  uint32_t ab_off[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int item = min(warp + j * kWarps, items_total - 1);
    const int rt = item / col_groups, cg = item - rt * col_groups;
    ab_off[j] = static_cast<uint32_t>((rt * 16 + gq) * l.ld_d + 2 * tq) |
                static_cast<uint32_t>(2 * tq * l.ld_p + cg * 32 + gq) << 16;
  }
  // Depthwise items: 4 output pixels of a row x 4 channels (DwWalk).
  const DwWalk<kThreads> walk(tid, g.tile_h, g.tile_w);
  const int dw_c4 = (tid % (kChunk / 4)) * 4;

  // Phase 1 of a chunk (weights from buffer buf): the expansion of the window into Ex, row tiles of 16 window pixels
  // over the warps, 32 channels each.
  auto expand_chunk = [&](int buf) {
    const float* we = reinterpret_cast<const float*>(smem + l.we + buf * l.we_bytes) + 2 * tq * l.ld_e + gq;
    const float* eb = reinterpret_cast<const float*>(smem + l.eb + buf * l.bias_bytes) + 2 * tq;
    const float* xa = X + gq * l.ld_x + 2 * tq;  // row gq of row tile 0, k0 = 0
    float* exs = Ex + gq * l.ld_ex + 2 * tq;
    int j = 0;
    for (int rt = warp; rt < row_tiles; rt += kWarps, ++j) {
      float e[4][4];
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int q = 0; q < 4; ++q) e[t][q] = 0.0f;
      const float* xr = xa + rt * 16 * l.ld_x;
#pragma unroll 2
      for (int k0 = 0; k0 < l.k_pad; k0 += 8) {
        const float2 lo = *reinterpret_cast<const float2*>(xr + k0);
        const float2 hi = *reinterpret_cast<const float2*>(xr + 8 * l.ld_x + k0);
        const unsigned a[4] = {tf32_bits(lo.x), tf32_bits(hi.x), tf32_bits(lo.y), tf32_bits(hi.y)};
        const float* wk = we + k0 * l.ld_e;
#pragma unroll
        for (int t = 0; t < 4; ++t)
          mma1688_tf32(e[t], a, __float_as_uint(wk[t * 8]), __float_as_uint(wk[l.ld_e + t * 8]));
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool inside = ((inside_bits >> (2 * j + h)) & 1u) != 0;
        float* row = exs + (rt * 16 + h * 8) * l.ld_ex;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const float2 b = *reinterpret_cast<const float2*>(eb + t * 8);
          const float2 v = make_float2(apply_clip(e[t][2 * h] + b.x, p.expand_clip),
                                       apply_clip(e[t][2 * h + 1] + b.y, p.expand_clip));
          *reinterpret_cast<float2*>(row + t * 8) = inside ? v : make_float2(0.0f, 0.0f);
        }
      }
    }
  };
  // Phase 2: the depthwise from Ex into D in float32 FFMA, from the bias over the taps in order; rounded to TF32 (the
  // projection's A operand).
  auto depthwise_chunk = [&](int, int buf) {
    const float* wt = reinterpret_cast<const float*>(smem + l.dw + buf * l.dw_bytes) + dw_c4;
    const float4 bias = *reinterpret_cast<const float4*>(wt + kDwBias);
    walk.for_each(tid, [&](int oy, int ox0) {
      float4 a[4];
      fused_block_detail::depthwise_item_f32<kStride>(
          Ex + (oy * kStride * l.window_w + ox0 * kStride) * l.ld_ex + dw_c4, l.ld_ex, l.window_w, wt, kChunk,
          l.window_w - 1 - ox0 * kStride, bias, a);
      const int valid = g.tile_w - ox0;  // pixels of the group inside the tile (>= 1)
      float* d = D + (oy * g.tile_w + ox0) * l.ld_d + dw_c4;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = apply_clip(a[q], p.dw_clip);
        const float4 r = make_float4(__uint_as_float(tf32_bits(v.x)), __uint_as_float(tf32_bits(v.y)),
                                     __uint_as_float(tf32_bits(v.z)), __uint_as_float(tf32_bits(v.w)));
        if (q < valid) *reinterpret_cast<float4*>(d + q * l.ld_d) = r;
      }
    });
  };
  // Phase 3: the projection of D into the warp's items' accumulators.
  auto project_chunk = [&](int buf) {
    const float* wp = reinterpret_cast<const float*>(smem + l.wp + buf * l.wp_bytes);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (warp + j * kWarps < items_total) {
        const float* da = D + (ab_off[j] & 0xffffu);
        const float* wb = wp + (ab_off[j] >> 16);
#pragma unroll
        for (int k0 = 0; k0 < kChunk; k0 += 8) {
          const float2 lo = *reinterpret_cast<const float2*>(da + k0);
          const float2 hi = *reinterpret_cast<const float2*>(da + 8 * l.ld_d + k0);
          const unsigned a[4] = {__float_as_uint(lo.x), __float_as_uint(hi.x), __float_as_uint(lo.y),
                                 __float_as_uint(hi.y)};
          const float* wk = wb + k0 * l.ld_p;
#pragma unroll
          for (int t = 0; t < 4; ++t)
            mma1688_tf32(acc[j][t], a, __float_as_uint(wk[t * 8]), __float_as_uint(wk[l.ld_p + t * 8]));
        }
      }
    }
  };

  fused_block_detail::run_chunks(g.chunks, load_chunk, expand_chunk, depthwise_chunk, project_chunk);

  // Epilogue: bias, the residual from the float32 window, 8-byte stores.
  float* out = static_cast<float*>(p.output);
  fused_block_detail::for_each_output<kItems>(
      s, g, tile, warp, lane, [&](int j, int t, int h, int64_t out_px, int window_px, int col) {
        float2 v = make_float2(acc[j][t][2 * h] + __ldg(p.project_bias + col),
                               acc[j][t][2 * h + 1] + __ldg(p.project_bias + col + 1));
        if (s.residual) {
          const float2 r = *reinterpret_cast<const float2*>(X + window_px * l.ld_x + col);
          v.x += r.x;
          v.y += r.y;
        }
        *reinterpret_cast<float2*>(out + out_px * s.out_channels + col) = v;
      });
#else
  // Compiled below compute_80: the launch refuses before getting here.
  __trap();
#endif
}

}  // namespace

namespace fused_block_detail {

void launch_tf32(const FusedBlockParams& p, const Geometry& g, int items, int64_t blocks, cudaStream_t stream) {
  dispatch_items_stride(items, p.shape.stride, [&](auto items_c, auto stride_c) {
    launch_instance<fused_block_tf32_kernel<decltype(items_c)::value, decltype(stride_c)::value>>(p, g, blocks, stream);
  });
}

}  // namespace fused_block_detail
}  // namespace mnv2::kernels
