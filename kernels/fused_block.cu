// A whole inverted-residual block in one kernel (fused_block.cuh; the plan of a block in tiles.h). A block of
// 256 threads owns tile_h x tile_w output pixels of one image:
//   1. cp.async brings the tile's input window (zero outside the map) and the first chunk's weights into
//      shared memory;
//   2. per chunk of 32 expanded channels (the next chunk's weights in flight meanwhile): the expansion of the
//      whole window on tensor cores (ldmatrix + mma.sync m16n8k16, float32 accumulators), bias in float32, half,
//      clip on half pairs, into shared memory (zero for window pixels outside the map: the depthwise padding);
//      the depthwise taps from there (4 pixels x 4 channels per thread, half2 FMA from the bias), clip, into a
//      second buffer; the projection of that buffer on tensor cores into accumulators that stay in registers.
//      Two barriers per chunk: the projection of chunk c and the expansion of chunk c + 1 run between the same
//      two barriers (see the loop);
//   3. the projection's bias, the residual from the input window already on chip, half NHWC stores.
// Each warp owns up to kItems projection items (16 output pixels x 32 output channels).
// v4 (the instruction diet): no division by a runtime value inside the chunk loop (what depends only on the tile
// and the thread, the halo mask of the expansion rows, the projection items' fragment offsets, the depthwise
// items' coordinates, is derived once per block; the stride is a template parameter), the depthwise and both
// clips on half pairs, predicated stores, and the expanded window's pitch chosen per stride against bank
// conflicts (tiles.h: ld_ex).
#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "kernels/fused_block.cuh"
#include "kernels/fused_block_parts.cuh"
#include "kernels/mma.cuh"

namespace mnv2::kernels {
namespace {

using fused_block_detail::DwWalk;
using fused_block_detail::Geometry;
using fused_block_detail::kMaxRowTiles;
using fused_block_detail::TileOrigin;
constexpr int kChunk = kFusedBlockChunk;
constexpr int kThreads = kFusedBlockThreads;
constexpr int kWarps = kFusedBlockWarps;
static_assert(kChunk == 32, "the expansion computes 4 n-tiles of 8 channels per row tile");

#ifdef MNV2_HAS_MMA
// What the last block of a split tile needs to sum the splits and store the tile (split_sum_store).
struct SplitSum {
  const float* partials;
  int64_t plane;  // floats of one split's projection
  int splits;
  const float* bias;
  __half* out;
  const __half* x;  // the input window in shared memory (the residual)
  int ld_x, co_pad, window_w, tile_w, pout, out_channels, out_h, out_w, pad_top, pad_left;
  bool residual;
  int64_t n;
  int oh0, ow0;
};

// The last block of a split tile: every split's projection is in the partials (its own too). It sums them element by
// element, 4 channels a thread at a time over the whole tile (not in the accumulators' layout, which gives the warps
// holding projection items up to 8 outputs each and the others none), kBatch splits' loads in flight together,
// added in split order from zero; then the bias, the residual and the half stores. The same additions in the same
// order as the accumulator-layout sum this replaced: the same bits. Not inlined: its registers stay out of the chunk
// loop's allocation (inlined, the 4-item instantiations spilled twice as much).
__device__ __noinline__ void split_sum_store(const SplitSum a) {
  constexpr int kBatch = 4;
  const int quads = a.out_channels / 4;  // out_channels is a multiple of 8
  for (int e = threadIdx.x; e < a.pout * quads; e += kThreads) {
    const int px = e / quads, c = (e - px * quads) * 4;
    const int oy = px / a.tile_w, ox = px - oy * a.tile_w;
    const int oh = a.oh0 + oy, ow = a.ow0 + ox;
    if (oh >= a.out_h || ow >= a.out_w) continue;
    const int64_t out_px = (a.n * a.out_h + oh) * a.out_w + ow;
    const float* at = a.partials + out_px * a.co_pad + c;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int q0 = 0; q0 < a.splits; q0 += kBatch) {
      float4 v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i)
        v[i] = q0 + i < a.splits ? __ldcg(reinterpret_cast<const float4*>(at + (q0 + i) * a.plane))
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (q0 + i < a.splits) {
          sum.x += v[i].x;
          sum.y += v[i].y;
          sum.z += v[i].z;
          sum.w += v[i].w;
        }
      }
    }
    float r[4] = {sum.x + __ldg(a.bias + c), sum.y + __ldg(a.bias + c + 1), sum.z + __ldg(a.bias + c + 2),
                  sum.w + __ldg(a.bias + c + 3)};
    if (a.residual) {  // stride 1: output pixel (oy, ox) is window pixel (oy + pad_top, ox + pad_left)
      const __half* x = a.x + ((oy + a.pad_top) * a.window_w + ox + a.pad_left) * a.ld_x + c;
      const float2 r01 = __half22float2(*reinterpret_cast<const __half2*>(x));
      const float2 r23 = __half22float2(*reinterpret_cast<const __half2*>(x + 2));
      r[0] += r01.x;
      r[1] += r01.y;
      r[2] += r23.x;
      r[3] += r23.y;
    }
    uint2 packed;
    *reinterpret_cast<__half2*>(&packed.x) = __floats2half2_rn(r[0], r[1]);
    *reinterpret_cast<__half2*>(&packed.y) = __floats2half2_rn(r[2], r[3]);
    *reinterpret_cast<uint2*>(a.out + out_px * a.out_channels + c) = packed;
  }
}

// One block's work: tile bx of the launch's nx tiles (image-major), split by (blockIdx.x, blockIdx.y, gridDim.x in a
// plain launch; a persistent block of the chain kernel walks several). kStride: the depthwise's stride (1 or 2), a
// template parameter so that its column offsets are constants.
template <int kItems, int kStride>
__device__ __forceinline__ void fused_block_tile(const FusedBlockParams& p, const Geometry& g, unsigned bx, unsigned by,
                                                 unsigned nx, unsigned char* smem) {
  const FusedBlockShape& s = p.shape;
  const FusedBlockLayout& l = g.l;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const TileOrigin<kStride> tile(s, g.tiles, g.tiles_w, g.tile_h, g.tile_w, bx);
  const int pout = g.tile_h * g.tile_w;
  __half* X = reinterpret_cast<__half*>(smem + l.x);
  __half* Ex = reinterpret_cast<__half*>(smem + l.ex);
  __half* D = reinterpret_cast<__half*>(smem + l.d);
  const ClipH2 eclip = clip_h2(p.expand_clip), dclip = clip_h2(p.dw_clip);
  // This block's share of the chunks (all of them unless the expanded channels are split over by).
  const int split = static_cast<int>(by);
  const int c0 = split * g.chunks / g.splits, chunks = (split + 1) * g.chunks / g.splits - c0;
  // The phase stamps (FusedBlockParams::stamps), thread 0's clock; the address from the parameters each time (no
  // register held across the chunk loop).
  auto stamp = [&p, bx, by, nx](FusedBlockStamp at) {
    if (p.stamps != nullptr && threadIdx.x == 0)
      p.stamps[(static_cast<int64_t>(by) * nx + bx) * kFusedBlockStamps + at] = globaltimer_ns();
  };
  stamp(kStampEntry);

  // One chunk's weights and biases into buffer `buf`.
  auto load_chunk = [&](int c, int buf) {
    const int e0 = c * kChunk;
    fused_block_detail::copy_chunk_matrices<kThreads>(
        static_cast<const __half*>(p.expand_weight), static_cast<const __half*>(p.project_weight), l.k_pad, l.e_pad,
        l.co_pad, e0, reinterpret_cast<__half*>(smem + l.we + buf * l.we_bytes), l.ld_e,
        reinterpret_cast<__half*>(smem + l.wp + buf * l.wp_bytes), l.ld_p, tid);
    float* eb = reinterpret_cast<float*>(smem + l.eb + buf * l.bias_bytes);
    if (tid < kChunk / 4) cp16(eb + tid * 4, p.expand_bias + e0 + tid * 4, true);
  };
  // A chunk's depthwise weights ([9][chunk], pair tid) and bias (pairs 9 * chunk / 2..) as half pairs, through
  // registers (fetch_dw issues the load, store_dw converts and stores it into dw buffer buf after other work).
  auto fetch_dw = [&](int c) {
    const int e0 = c * kChunk;
    if (tid < 9 * kChunk / 2) {
      const int t = tid / (kChunk / 2), c2 = (tid % (kChunk / 2)) * 2;
      return __ldg(reinterpret_cast<const float2*>(p.dw_weight + static_cast<int64_t>(t) * l.e_pad + e0 + c2));
    }
    if (tid < 10 * kChunk / 2) return __ldg(reinterpret_cast<const float2*>(p.dw_bias + e0) + tid - 9 * kChunk / 2);
    return make_float2(0.0f, 0.0f);
  };
  auto store_dw = [&](int buf, float2 v) {
    if (tid < 10 * kChunk / 2)
      reinterpret_cast<__half2*>(smem + l.dw + buf * l.dw_bytes)[tid] = __floats2half2_rn(v.x, v.y);
  };
  // The first chunk's weights, where they are constants (weights_before_wait), in flight before the wait for the
  // previous kernel (PDL), the input window after it, both in the first copy group.
  const bool early = p.weights_before_wait;
  float2 dw0 = make_float2(0.0f, 0.0f);  // stored once the per-tile set-up below has covered its latency
  if (early) {
    load_chunk(c0, 0);
    dw0 = fetch_dw(c0);
  }
  pdl_enter();
  stamp(kStampReleased);
  if (!early) {
    load_chunk(c0, 0);
    dw0 = fetch_dw(c0);
  }
  fused_block_detail::copy_window<kThreads>(tile, s, l, static_cast<const __half*>(p.input), X, tid);
  cp_commit();
  // The projection's padding rows (pixels past the tile) read zeros.
  for (int i = tid; i < (l.m2 - pout) * (kChunk / 8); i += kThreads) {
    const int r = pout + i / (kChunk / 8), c8 = (i % (kChunk / 8)) * 8;
    *reinterpret_cast<uint4*>(D + r * l.ld_e + c8) = make_uint4(0, 0, 0, 0);
  }

  const int col_groups = l.co_pad / 32;
  const int items_total = (l.m2 / 16) * col_groups;
  const int gq = lane >> 2, tq = lane & 3;  // the accumulator's row (and row + 8) and column pair
  float acc[kItems][4][4];
  fused_block_detail::zero_accumulators(acc);

  // Per tile, not per chunk: which of this thread's expansion rows are inside the map, the projection items'
  // fragment offsets, the depthwise's first item.
  const int row_tiles = l.m1 / 16;
  const uint32_t inside_bits = fused_block_detail::row_inside_bits(tile, s, l, warp, gq);
  // Item j's offsets in halves, D's A fragment at k0 = 0 (low 16 bits) and wp's B fragment at k0 = 0 (high 16
  // bits), one register per item. Both fit: a launch has at most 48 items (6 per warp), so m2 <= 768 rows of 40
  // halves (< 30,720) and co_pad <= 1536 (16 rows of 1544 halves: < 24,704).
  uint32_t ab_off[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int item = min(warp + j * kWarps, items_total - 1);
    const int rt = item / col_groups, cg = item - rt * col_groups;
    ab_off[j] = static_cast<uint32_t>((rt * 16 + (lane & 15)) * l.ld_e + (lane >> 4) * 8) |
                static_cast<uint32_t>((lane & 15) * l.ld_p + cg * 32 + (lane >> 4) * 8) << 16;
  }
  // Depthwise items: 4 output pixels of a row x 4 channels (DwWalk).
  const DwWalk<kThreads> walk(tid, g.tile_h, g.tile_w);
  const int dw_c4 = (tid % (kChunk / 4)) * 4;

  // Phase 1 of a chunk (weights from buffer buf): the expansion of the window into Ex.
  auto expand_chunk = [&](int buf) {  // row tiles of 16 window pixels over the warps, 32 channels each
    const __half* we = reinterpret_cast<const __half*>(smem + l.we + buf * l.we_bytes);
    const float* eb = reinterpret_cast<const float*>(smem + l.eb + buf * l.bias_bytes);
    const __half* xa = X + (lane & 15) * l.ld_x + (lane >> 4) * 8;   // A fragment of row tile 0, k0 = 0
    const __half* wb = we + (lane & 15) * l.ld_e + (lane >> 4) * 8;  // B fragments at k0 = 0
    __half* exs = Ex + gq * l.ld_ex + 2 * tq;                        // row gq of row tile 0
    int j = 0;
    for (int rt = warp; rt < row_tiles; rt += kWarps, ++j) {
      float e[4][4];
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int q = 0; q < 4; ++q) e[t][q] = 0.0f;
      const __half* xr = xa + rt * 16 * l.ld_x;
      for (int k0 = 0; k0 < l.k_pad; k0 += 16) {
        unsigned a[4];
        ldmatrix_x4(a, xr + k0);
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          unsigned b[4];
          ldmatrix_x4_trans(b, wb + k0 * l.ld_e + np * 16);
          mma16816(e[2 * np], a, b[0], b[1]);
          mma16816(e[2 * np + 1], a, b[2], b[3]);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool inside = ((inside_bits >> (2 * j + h)) & 1u) != 0;
        __half* row = exs + (rt * 16 + h * 8) * l.ld_ex;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const float2 b = *reinterpret_cast<const float2*>(eb + t * 8 + 2 * tq);
          const __half2 v = clip2(__floats2half2_rn(e[t][2 * h] + b.x, e[t][2 * h + 1] + b.y), eclip);
          *reinterpret_cast<__half2*>(row + t * 8) = inside ? v : __float2half2_rn(0.0f);
        }
      }
    }
  };
  // Phase 2: the depthwise from Ex into D, in half2 arithmetic (as cuDNN's fp16 depthwise: the 9 taps accumulate
  // in half, starting from the bias).
  auto depthwise_chunk = [&](int buf) {
    // 4 output pixels of a row x 4 channels per item. The taps' weights come from shared memory once per row and
    // serve 4 pixels; each window column is loaded once (4 halves) and feeds every pixel and tap it belongs to:
    // 9 + 18 (stride 1) or 9 + 27 (stride 2) 8-byte loads for 72 HFMA2.
    const __half2* wh = reinterpret_cast<const __half2*>(smem + l.dw + buf * l.dw_bytes);
    const uint2 braw = *reinterpret_cast<const uint2*>(wh + (9 * kChunk + dw_c4) / 2);
    const __half2 b0 = *reinterpret_cast<const __half2*>(&braw.x), b1 = *reinterpret_cast<const __half2*>(&braw.y);
    walk.for_each(tid, [&](int oy, int ox0) {
      // Columns past the window (pixels past the tile's last column) are clamped: those pixels are not stored.
      const int last_col = l.window_w - 1 - ox0 * kStride;
      const __half* base = Ex + (oy * kStride * l.window_w + ox0 * kStride) * l.ld_ex + dw_c4;
      __half2 a[4][2];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        a[q][0] = b0;
        a[q][1] = b1;
      }
#pragma unroll
      for (int ky = 0; ky < 3; ++ky) {
        const __half* row = base + ky * l.window_w * l.ld_ex;
        uint2 w[3];
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          w[kx] = *reinterpret_cast<const uint2*>(wh + ((ky * 3 + kx) * kChunk + dw_c4) / 2);
        }
        // Window column c of this row feeds pixel q through tap kx = c - q * stride.
#pragma unroll
        for (int c = 0; c < 3 * kStride + 3; ++c) {
          const uint2 v = *reinterpret_cast<const uint2*>(row + min(c, last_col) * l.ld_ex);
          const __half2 v0 = *reinterpret_cast<const __half2*>(&v.x), v1 = *reinterpret_cast<const __half2*>(&v.y);
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int kx = c - q * kStride;
            if (kx >= 0 && kx < 3) {
              a[q][0] = __hfma2(v0, *reinterpret_cast<const __half2*>(&w[kx].x), a[q][0]);
              a[q][1] = __hfma2(v1, *reinterpret_cast<const __half2*>(&w[kx].y), a[q][1]);
            }
          }
        }
      }
      const int valid = g.tile_w - ox0;  // pixels of the group inside the tile (>= 1)
      __half* d = D + (oy * g.tile_w + ox0) * l.ld_e + dw_c4;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        uint2 packed;
        *reinterpret_cast<__half2*>(&packed.x) = clip2(a[q][0], dclip);
        *reinterpret_cast<__half2*>(&packed.y) = clip2(a[q][1], dclip);
        if (q < valid) *reinterpret_cast<uint2*>(d + q * l.ld_e) = packed;
      }
    });
  };
  // Phase 3: the projection of D into the warp's items' accumulators.
  auto project_chunk = [&](int buf) {
    const __half* wp = reinterpret_cast<const __half*>(smem + l.wp + buf * l.wp_bytes);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (warp + j * kWarps < items_total) {
#pragma unroll
        for (int k0 = 0; k0 < kChunk; k0 += 16) {
          unsigned a[4];
          ldmatrix_x4(a, D + (ab_off[j] & 0xffffu) + k0);
#pragma unroll
          for (int np = 0; np < 2; ++np) {
            unsigned b[4];
            ldmatrix_x4_trans(b, wp + (ab_off[j] >> 16) + k0 * l.ld_p + np * 16);
            mma16816(acc[j][2 * np], a, b[0], b[1]);
            mma16816(acc[j][2 * np + 1], a, b[2], b[3]);
          }
        }
      }
    }
  };

  // Software-pipelined over two barriers per chunk (v3; v2 had three: fused_block_detail::run_chunks). Chunk c + 1's
  // depthwise weights go through registers around the depthwise of chunk c (the depthwise of chunk c - 1 was done
  // with their buffer in the interval before).
  store_dw(0, dw0);  // read by the depthwise after the first barrier of the chunk loop
  float2 next_dw = make_float2(0.0f, 0.0f);
  fused_block_detail::run_chunks(
      chunks,
      [&](int next, int next_buf) {
        load_chunk(c0 + next, next_buf);
        next_dw = fetch_dw(c0 + next);
      },
      expand_chunk,
      [&](int c, int buf) {
        depthwise_chunk(buf);
        if (c + 1 < chunks) store_dw(buf ^ 1, next_dw);
      },
      project_chunk, [&] { stamp(kStampLanded); });
  stamp(kStampComputed);

  // Split: this block's projection into the partials; the last block of the tile to arrive sums every split's, in
  // split order (its own from the accumulators: the same values it stored), and goes on to the epilogue.
  const int64_t plane = static_cast<int64_t>(s.batch) * s.out_h * s.out_w * l.co_pad;
  if (g.splits > 1) {
    float* mine = p.partials + split * plane;
    fused_block_detail::for_each_output<kItems>(s, g, tile, warp, lane,
                                                [&](int j, int t, int h, int64_t out_px, int, int col) {
                                                  __stcg(reinterpret_cast<float2*>(mine + out_px * l.co_pad + col),
                                                         make_float2(acc[j][t][2 * h], acc[j][t][2 * h + 1]));
                                                });
    // The flag in the expansion biases' buffer, which no thread reads after the chunk loop.
    const bool last = splitk_arrive_last(p.tile_counters + bx, static_cast<unsigned>(g.splits),
                                         reinterpret_cast<volatile int*>(smem + l.eb));
    stamp(kStampArrived);
    if (!last) return;
    // The tile's last block: the splits' sum, the bias, the residual and the stores (split_sum_store).
    split_sum_store(SplitSum{p.partials, plane,          g.splits, p.project_bias, static_cast<__half*>(p.output),
                             X,          l.ld_x,         l.co_pad, l.window_w,     g.tile_w,
                             pout,       s.out_channels, s.out_h,  s.out_w,        s.pad_top,
                             s.pad_left, s.residual,     tile.n,   tile.oh0,       tile.ow0});
    stamp(kStampSummed);
    if (tid == 0) p.tile_counters[bx] = 0;  // every split has arrived: no block counts in after this
    stamp(kStampStored);
    return;
  }
  stamp(kStampArrived);
  stamp(kStampSummed);
  // Epilogue: bias, the residual from the window, half stores.
  __half* out = static_cast<__half*>(p.output);
  fused_block_detail::for_each_output<kItems>(
      s, g, tile, warp, lane, [&](int j, int t, int h, int64_t out_px, int window_px, int col) {
        float v0 = acc[j][t][2 * h] + __ldg(p.project_bias + col);
        float v1 = acc[j][t][2 * h + 1] + __ldg(p.project_bias + col + 1);
        if (s.residual) {
          const float2 r = __half22float2(*reinterpret_cast<const __half2*>(X + window_px * l.ld_x + col));
          v0 += r.x;
          v1 += r.y;
        }
        *reinterpret_cast<__half2*>(out + out_px * s.out_channels + col) = __floats2half2_rn(v0, v1);
      });
  stamp(kStampStored);
}
#endif  // MNV2_HAS_MMA

template <int kItems, int kStride>
__global__ void __launch_bounds__(kThreads, kItems <= 4 ? 2 : 1)
    fused_block_kernel(const FusedBlockParams p, const Geometry g) {
#ifdef MNV2_HAS_MMA
  extern __shared__ __align__(128) unsigned char smem[];
  fused_block_tile<kItems, kStride>(p, g, blockIdx.x, blockIdx.y, gridDim.x, smem);
#else
  // Compiled below compute_80: the launch refuses before getting here.
  __trap();
#endif
}

// One stage of a chain (launch_fused_block_chain), as the chain kernel reads it from device memory.
struct ChainStage {
  FusedBlockParams p;
  Geometry g;
  unsigned tiles = 0;  // the stage's tiles (blocks of its plain launch, before the split)
  int stride = 1;
};

// The persistent chain: every block walks each stage's (tile, split) pairs from blockIdx.x in steps of gridDim.x,
// then the whole grid waits for the stage to finish (a cooperative launch's grid barrier, which also orders the
// stage's global writes before the next stage's reads) and goes on to the next. Stages run the 2-item instantiations.
__global__ void __launch_bounds__(kThreads, 2) fused_block_chain_kernel(const ChainStage* stages, int count) {
#ifdef MNV2_HAS_MMA
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ ChainStage st;
  static_assert(sizeof(ChainStage) % 4 == 0);
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  for (int i = 0; i < count; ++i) {
    for (unsigned w = threadIdx.x; w < sizeof(ChainStage) / 4; w += blockDim.x)
      reinterpret_cast<int*>(&st)[w] = reinterpret_cast<const int*>(stages + i)[w];
    __syncthreads();
    const unsigned total = st.tiles * static_cast<unsigned>(st.g.splits);
    for (unsigned v = blockIdx.x; v < total; v += gridDim.x) {
      if (st.stride == 2)
        fused_block_tile<2, 2>(st.p, st.g, v % st.tiles, v / st.tiles, st.tiles, smem);
      else
        fused_block_tile<2, 1>(st.p, st.g, v % st.tiles, v / st.tiles, st.tiles, smem);
      __syncthreads();  // the next tile's loads overwrite shared memory this one's epilogue read
    }
    grid.sync();
  }
#else
  __trap();
#endif
}

// The architecture the current device's code was compiled for, cached per device (probe_kernel_image).
int code_arch() {
  constexpr int kDevices = 64;
  static std::atomic<int> cached[kDevices];  // 0: not asked yet
  int device = 0;
  MNV2_KERNEL_CALL("fused_block", cudaGetDevice(&device));
  if (device < 0 || device >= kDevices) device = kDevices - 1;
  int arch = cached[device].load(std::memory_order_relaxed);
  if (arch == 0) {
    KernelImage image;
    MNV2_KERNEL_CALL("fused_block", probe_kernel_image(&image));
    arch = image.ptx_version;
    cached[device].store(arch, std::memory_order_relaxed);
  }
  return arch;
}

}  // namespace

FusedBlockPadding fused_block_padding(const FusedBlockShape& s) {
  const FusedBlockLayout l = fused_block_layout(s, 1, 1);
  return FusedBlockPadding{l.k_pad, l.e_pad, l.co_pad};
}

FusedBlockPadding fused_block_ffma_padding(const FusedBlockShape& s) {
  const FusedBlockFfmaLayout l = fused_block_ffma_layout(s, 1, 1);
  return FusedBlockPadding{l.k_pad, l.e_pad, l.co_pad};
}

FusedBlockWeights fused_block_pack(const FusedBlockShape& s, const FusedBlockPadding& pad,
                                   const std::vector<float>& expand, const std::vector<float>& expand_bias,
                                   const std::vector<float>& dw, const std::vector<float>& dw_bias,
                                   const std::vector<float>& project, const std::vector<float>& project_bias) {
  const int cin = s.in_channels, E = s.expanded, cout = s.out_channels;
  if (cin < 1 || E < 1 || cout < 1) throw Error("fused_block: channel counts must be positive");
  if (pad.k_pad < cin || pad.e_pad < E || pad.co_pad < cout)
    throw Error("fused_block: padding smaller than the channel counts");
  auto expect = [](const std::vector<float>& v, size_t n, bool optional, const char* what) {
    if (v.size() != n && !(optional && v.empty()))
      throw Error(std::string("fused_block: ") + what + " has " + std::to_string(v.size()) + " values, expected " +
                  std::to_string(n));
  };
  expect(expand, static_cast<size_t>(E) * cin, false, "expansion weight");
  expect(expand_bias, static_cast<size_t>(E), true, "expansion bias");
  expect(dw, static_cast<size_t>(E) * 9, false, "depthwise weight");
  expect(dw_bias, static_cast<size_t>(E), true, "depthwise bias");
  expect(project, static_cast<size_t>(cout) * E, false, "projection weight");
  expect(project_bias, static_cast<size_t>(cout), true, "projection bias");
  FusedBlockWeights w;
  w.expand.assign(static_cast<size_t>(pad.k_pad) * pad.e_pad, 0.0f);
  for (int o = 0; o < E; ++o)
    for (int k = 0; k < cin; ++k)
      w.expand[static_cast<size_t>(k) * pad.e_pad + o] = expand[static_cast<size_t>(o) * cin + k];
  w.expand_bias.assign(static_cast<size_t>(pad.e_pad), 0.0f);
  std::copy(expand_bias.begin(), expand_bias.end(), w.expand_bias.begin());
  w.dw.assign(static_cast<size_t>(9) * pad.e_pad, 0.0f);
  for (int e = 0; e < E; ++e)
    for (int t = 0; t < 9; ++t) w.dw[static_cast<size_t>(t) * pad.e_pad + e] = dw[static_cast<size_t>(e) * 9 + t];
  w.dw_bias.assign(static_cast<size_t>(pad.e_pad), 0.0f);
  std::copy(dw_bias.begin(), dw_bias.end(), w.dw_bias.begin());
  w.project.assign(static_cast<size_t>(pad.e_pad) * pad.co_pad, 0.0f);
  for (int o = 0; o < cout; ++o)
    for (int e = 0; e < E; ++e)
      w.project[static_cast<size_t>(e) * pad.co_pad + o] = project[static_cast<size_t>(o) * E + e];
  w.project_bias.assign(static_cast<size_t>(pad.co_pad), 0.0f);
  std::copy(project_bias.begin(), project_bias.end(), w.project_bias.begin());
  return w;
}

namespace {

// A launch's geometry from its checked parameters and variant (what launch_fused_block refuses, it throws for).
Geometry checked_geometry(const FusedBlockParams& p, const FusedBlockVariant& v) {
  const FusedBlockShape& s = p.shape;
  if (const std::string why = fused_block_shape_refusal(s, code_arch()); !why.empty())
    throw Error("fused_block: " + why);
  if (v.tile_h < 1 || v.tile_w < 1 || (v.items != 2 && v.items != 4 && v.items != 6) ||
      (v.math != FusedBlockMath::f16 && v.math != FusedBlockMath::tf32))
    throw Error("fused_block: bad variant " + to_string(v));
  if (v.splits < 1 || (v.splits > 1 && v.math != FusedBlockMath::f16))
    throw Error("fused_block: " + to_string(v) + ": splits must be 1, or more in f16 only");
  if (fused_block_items(s, v.tile_h, v.tile_w) > v.items)
    throw Error("fused_block: tile " + to_string(v) + " needs " +
                std::to_string(fused_block_items(s, v.tile_h, v.tile_w)) + " projection items per warp");
  if (p.input == nullptr || p.expand_weight == nullptr || p.expand_bias == nullptr || p.dw_weight == nullptr ||
      p.dw_bias == nullptr || p.project_weight == nullptr || p.project_bias == nullptr || p.output == nullptr)
    throw Error("fused_block: null operand");
  if (p.output == p.input) throw Error("fused_block: the output must not alias the input");
  if (!aligned16(p.input) || !aligned16(p.output) || !aligned16(p.expand_weight) || !aligned16(p.expand_bias) ||
      !aligned16(p.dw_weight) || !aligned16(p.dw_bias) || !aligned16(p.project_weight))
    throw Error("fused_block: operands must be 16-byte aligned");
  Geometry g;
  g.l = fused_block_layout(s, v.tile_h, v.tile_w, v.math);
  if (g.l.m1 > kMaxRowTiles * kWarps * 16)
    throw Error("fused_block: tile " + to_string(v) + " has a window of " + std::to_string(g.l.m1) +
                " pixels; the kernel takes at most " + std::to_string(kMaxRowTiles * kWarps * 16));
  if (g.l.total > smem_optin_limit())
    throw Error("fused_block: tile " + to_string(v) + " needs " + std::to_string(g.l.total) +
                " bytes of shared memory; this GPU allows " + std::to_string(smem_optin_limit()));
  g.tile_h = v.tile_h;
  g.tile_w = v.tile_w;
  g.tiles_w = static_cast<int>(ceil_div(s.out_w, v.tile_w));
  g.tiles = static_cast<int>(ceil_div(s.out_h, v.tile_h)) * g.tiles_w;
  g.chunks = g.l.e_pad / kChunk;
  g.splits = v.splits;
  if (v.splits > g.chunks)
    throw Error("fused_block: " + to_string(v) + " has more splits than the " + std::to_string(g.chunks) +
                " chunks of " + std::to_string(kChunk) + " expanded channels");
  if (v.splits > 1 && (p.partials == nullptr || p.tile_counters == nullptr || !aligned16(p.partials)))
    throw Error("fused_block: a split launch needs 16-byte aligned partials and the tiles' arrival counters");
  if (static_cast<int64_t>(g.tiles) * s.batch * v.splits > 0x7fffffff)
    throw Error("fused_block: too many tiles for one launch");
  return g;
}

}  // namespace

void launch_fused_block(const FusedBlockParams& p, const FusedBlockVariant& v, cudaStream_t stream) {
  const Geometry g = checked_geometry(p, v);
  const int64_t blocks = static_cast<int64_t>(g.tiles) * p.shape.batch;
  if (v.math == FusedBlockMath::tf32) return fused_block_detail::launch_tf32(p, g, v.items, blocks, stream);
  fused_block_detail::dispatch_items_stride(v.items, p.shape.stride, [&](auto items, auto stride) {
    fused_block_detail::launch_instance<fused_block_kernel<decltype(items)::value, decltype(stride)::value>>(
        p, g, blocks, stream);
  });
}

size_t fused_block_chain_bytes(int stages) { return static_cast<size_t>(std::max(stages, 0)) * sizeof(ChainStage); }

FusedBlockChain prepare_fused_block_chain(const std::vector<FusedBlockParams>& stages,
                                          const std::vector<FusedBlockVariant>& variants, void* device_stages) {
  if (stages.empty() || stages.size() != variants.size())
    throw Error("fused_block chain: give one variant per stage, at least one stage");
  if (device_stages == nullptr || !aligned16(device_stages)) throw Error("fused_block chain: no stage buffer");
  std::vector<ChainStage> host(stages.size());
  FusedBlockChain c;
  c.stages = device_stages;
  c.count = static_cast<int>(stages.size());
  int64_t most = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const FusedBlockVariant& v = variants[i];
    if (v.math != FusedBlockMath::f16 || v.items != 2)
      throw Error("fused_block chain: stage " + std::to_string(i) + " is " + to_string(v) +
                  "; the chain runs fp16 variants of 2 items a warp");
    host[i].p = stages[i];
    host[i].g = checked_geometry(stages[i], v);
    const int64_t tiles = static_cast<int64_t>(host[i].g.tiles) * stages[i].shape.batch;
    host[i].tiles = static_cast<unsigned>(tiles);
    host[i].stride = stages[i].shape.stride;
    most = std::max(most, tiles * v.splits);
    c.smem = std::max(c.smem, static_cast<size_t>(host[i].g.l.total));
  }
  // The dynamic shared memory a block may have: what the device allows less the kernel's static stage descriptor.
  static int dynamic_limit = 0;
  static const cudaError_t raised = [] {
    cudaFuncAttributes a{};
    if (const cudaError_t e = cudaFuncGetAttributes(&a, fused_block_chain_kernel); e != cudaSuccess) return e;
    dynamic_limit = smem_optin_limit() - static_cast<int>(a.sharedSizeBytes);
    return cudaFuncSetAttribute(fused_block_chain_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic_limit);
  }();
  MNV2_KERNEL_CALL("fused_block chain", raised);
  if (c.smem > static_cast<size_t>(dynamic_limit))
    throw Error("fused_block chain: a stage needs " + std::to_string(c.smem) + " bytes of shared memory; the chain " +
                "kernel's blocks can have " + std::to_string(dynamic_limit));
  int device = 0, sms = 0, cooperative = 0, per_sm = 0;
  MNV2_KERNEL_CALL("fused_block chain", cudaGetDevice(&device));
  MNV2_KERNEL_CALL("fused_block chain", cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  MNV2_KERNEL_CALL("fused_block chain", cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  if (cooperative == 0) throw Error("fused_block chain: this GPU cannot launch cooperative kernels");
  MNV2_KERNEL_CALL("fused_block chain",
                   cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_block_chain_kernel, kThreads, c.smem));
  if (per_sm < 1)
    throw Error("fused_block chain: a block of " + std::to_string(c.smem) +
                " bytes of shared memory does not fit an SM");
  // Every block resident at once (the grid barrier's condition), as many as the SMs the device reports hold (a MIG
  // slice's, under MPS the whole GPU's: the launch fails with a message if fewer are lent), none idle in every stage.
  c.grid = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(sms) * per_sm, most));
  MNV2_KERNEL_CALL("fused_block chain",
                   cudaMemcpy(device_stages, host.data(), fused_block_chain_bytes(c.count), cudaMemcpyHostToDevice));
  return c;
}

void launch_fused_block_chain(const FusedBlockChain& c, cudaStream_t stream) {
  if (c.stages == nullptr || c.count < 1 || c.grid < 1) throw Error("fused_block chain: not prepared");
  const ChainStage* stages = static_cast<const ChainStage*>(c.stages);
  int count = c.count;
  void* args[] = {&stages, &count};
  MNV2_KERNEL_CALL("fused_block chain",
                   cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(fused_block_chain_kernel), dim3(c.grid),
                                               dim3(kThreads), args, c.smem, stream));
}

}  // namespace mnv2::kernels
