// A whole inverted-residual block in one kernel, float32 FFMA (fused_block.cuh; the plan in tiles.h:
// FusedBlockFfma*). The fp16 kernel's tile ownership and chunk loop (fused_block.cu) without tensor cores: a block
// of 256 threads owns tile_h x tile_w output pixels of one image:
//   1. the tile's input window (zero outside the map) and the first chunk's weights into shared memory (cp.async
//      from compute_80 on, through registers below);
//   2. per chunk of 32 expanded channels (the next chunk's weights in flight meanwhile): the expansion of the whole
//      window (4 pixels x 4 channels per thread and pass of 128 pixels: per 4 input channels 4 + 4 16-byte shared
//      loads feed 64 FFMA) + bias + clip into shared memory (zero for window pixels outside the map: the
//      depthwise's padding); the depthwise (4 pixels of a row x 4 channels per item, each window column loaded
//      once for every tap and pixel it feeds) + bias + clip into a second buffer; the projection of that buffer
//      (px pixels x 4 nc channels per thread, per 4 expanded channels px + 4 nc 16-byte loads feed 16 px nc FFMA)
//      into accumulators that stay in registers across every chunk. Two barriers per chunk, as the fp16 kernel:
//      the projection of chunk c and the expansion of chunk c + 1 share one interval;
//   3. the projection's bias, the residual from the input window already on chip, 16-byte NHWC stores.
// Every sum is float32 FFMA, accumulated in the order of the channels (expansion, projection) or of the taps from
// the bias (depthwise).
#include <iterator>
#include <string>

#include "kernels/fused_block.cuh"
#include "kernels/fused_block_parts.cuh"
#include "kernels/mma.cuh"  // copy16

namespace mnv2::kernels {
namespace {

constexpr int kC = kFusedBlockFfmaChunk;
constexpr int kT = kFusedBlockFfmaThreads;
constexpr int kPass = kFusedBlockFfmaPassPixels;
constexpr int kGroups = kC / 4;  // channel groups of 4 per chunk
static_assert(kC == kFusedBlockChunk, "fused_block_detail::copy_chunk_matrices copies chunks of kFusedBlockChunk");
static_assert(kC == 32 && kPass == kT / kGroups * 4, "a pass: 32 pixel quads x 8 channel groups, 4 pixels each");
// The vectors of a chunk in its buffer (floats): the expansion's bias, the depthwise's weights [9][chunk], its bias.
constexpr int kVecBias = 0, kVecDw = kC, kVecDwBias = 10 * kC;

// What the host derives once per launch.
struct Geometry {
  FusedBlockFfmaLayout l;
  int tile_h = 0, tile_w = 0, tiles_w = 0, tiles = 0, chunks = 0;
  int passes = 0;                   // expansion passes of kPass window pixels
  int groups_x = 0, dw_groups = 0;  // depthwise: groups of 4 output pixels per tile row, per tile
  int items = 0, ncg = 0;           // projection: threads with work, channel-quad groups (ceil(co_pad / 4 / nc))
};

__device__ __forceinline__ float lane(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <int kStride, int kPx, int kNc>
__global__ void __launch_bounds__(kT, kPx* kNc <= 8 ? 2 : 1)
    fused_block_ffma_kernel(const FusedBlockParams p, const Geometry g) {
  extern __shared__ __align__(16) unsigned char smem[];
  const FusedBlockShape& s = p.shape;
  const FusedBlockFfmaLayout& l = g.l;
  const int tid = threadIdx.x;
  const fused_block_detail::TileOrigin<kStride> tile(s, g.tiles, g.tiles_w, g.tile_h, g.tile_w);
  float* X = reinterpret_cast<float*>(smem + l.x);
  float* Ex = reinterpret_cast<float*>(smem + l.ex);
  float* D = reinterpret_cast<float*>(smem + l.d);
  // One chunk's weights and vectors into buffer `buf`.
  auto load_chunk = [&](int c, int buf) {
    const int e0 = c * kC;
    fused_block_detail::copy_chunk_matrices<kT>(
        static_cast<const float*>(p.expand_weight), static_cast<const float*>(p.project_weight), l.k_pad, l.e_pad,
        l.co_pad, e0, reinterpret_cast<float*>(smem + l.we + buf * l.we_bytes), kC,
        reinterpret_cast<float*>(smem + l.wp + buf * l.wp_bytes), l.co_pad, tid);
    float* vec = reinterpret_cast<float*>(smem + l.vec + buf * l.vec_bytes);
    if (tid < kGroups) {
      copy16(vec + kVecBias + tid * 4, p.expand_bias + e0 + tid * 4, true);
    } else if (tid < 10 * kGroups) {
      const int t = (tid - kGroups) / kGroups, c4 = ((tid - kGroups) % kGroups) * 4;
      copy16(vec + kVecDw + t * kC + c4, p.dw_weight + static_cast<int64_t>(t) * l.e_pad + e0 + c4, true);
    } else if (tid < 11 * kGroups) {
      copy16(vec + kVecDwBias + (tid - 10 * kGroups) * 4, p.dw_bias + e0 + (tid - 10 * kGroups) * 4, true);
    }
  };
  // The first chunk's weights, where they are constants (weights_before_wait), in flight before the wait for the
  // previous kernel (PDL); then the input window, both in the first copy group.
  if (p.weights_before_wait) load_chunk(0, 0);
  pdl_enter();
  if (!p.weights_before_wait) load_chunk(0, 0);
  fused_block_detail::copy_window<kT>(tile, s, l, static_cast<const float*>(p.input), X, tid);
  copy_commit();

  // Per tile, not per chunk. Expansion: channel group cg, pixel quad pq; which of the thread's window pixels
  // (pass ps, pixel pq + 32 q) are inside the map: bit 4 ps + q (the launch refuses more than 8 passes).
  const int cg = tid % kGroups, pq = tid / kGroups;
  uint32_t inside_bits = 0;
  for (int ps = 0; ps < g.passes; ++ps)
#pragma unroll
    for (int q = 0; q < 4; ++q)
      inside_bits |= static_cast<uint32_t>(tile.inside(s, l.window_h, l.window_w, ps * kPass + pq + 32 * q))
                     << (4 * ps + q);
  // Projection: pixel group pg (pixels pg px + i), channel-quad group cqi (quads cqi + ncg j); rows and columns
  // clamped into the tile and the padded channels for loads (their results are not stored).
  const bool projects = tid < g.items;
  const int cqi = tid % g.ncg, pg = tid / g.ncg;
  int prow[kPx], pcol[kNc];
#pragma unroll
  for (int i = 0; i < kPx; ++i) prow[i] = min(pg * kPx + i, l.pout - 1) * l.ld_d;
#pragma unroll
  for (int j = 0; j < kNc; ++j) pcol[j] = min(cqi + g.ncg * j, l.co_pad / 4 - 1) * 4;
  float4 acc[kPx][kNc];
#pragma unroll
  for (int i = 0; i < kPx; ++i)
#pragma unroll
    for (int j = 0; j < kNc; ++j) acc[i][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  // Phase 1 of a chunk (weights from buffer buf): the expansion of the window into Ex.
  auto expand_chunk = [&](int buf) {
    const float* we = reinterpret_cast<const float*>(smem + l.we + buf * l.we_bytes) + cg * 4;
    const float4 bias =
        *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(smem + l.vec + buf * l.vec_bytes) + cg * 4);
    for (int ps = 0; ps < g.passes; ++ps) {
      const int base = ps * kPass + pq;
      const float* xr[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) xr[q] = X + min(base + 32 * q, l.m1 - 1) * l.ld_x;
      float4 e[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) e[q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 2
      for (int k = 0; k < l.k_pad; k += 4) {
        float4 xv[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) xv[q] = *reinterpret_cast<const float4*>(xr[q] + k);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const float4 w = *reinterpret_cast<const float4*>(we + (k + kk) * kC);
#pragma unroll
          for (int q = 0; q < 4; ++q) e[q] = fma4(lane(xv[q], kk), w, e[q]);
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int px = base + 32 * q;
        if (px >= l.m1) continue;
        const bool inside = ((inside_bits >> (4 * ps + q)) & 1u) != 0;
        const float4 v = apply_clip(e[q] + bias, p.expand_clip);
        *reinterpret_cast<float4*>(Ex + px * kC + cg * 4) = inside ? v : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
  };
  // Phase 2: the depthwise from Ex into D, from the bias over the 9 taps.
  auto depthwise_chunk = [&](int, int buf) {
    const float* vec = reinterpret_cast<const float*>(smem + l.vec + buf * l.vec_bytes);
    const float* wt = vec + kVecDw + cg * 4;
    const float4 b = *reinterpret_cast<const float4*>(vec + kVecDwBias + cg * 4);
    for (int grp = pq; grp < g.dw_groups; grp += kT / kGroups) {
      const int oy = grp / g.groups_x, ox0 = (grp - oy * g.groups_x) * 4;
      float4 a[4];
      fused_block_detail::depthwise_item_f32<kStride>(Ex + (oy * kStride * l.window_w + ox0 * kStride) * kC + cg * 4,
                                                      kC, l.window_w, wt, kC, l.window_w - 1 - ox0 * kStride, b, a);
      float* d = D + (oy * g.tile_w + ox0) * l.ld_d + cg * 4;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (ox0 + q < g.tile_w) *reinterpret_cast<float4*>(d + q * l.ld_d) = apply_clip(a[q], p.dw_clip);
    }
  };
  // Phase 3: the projection of D into the thread's accumulators.
  auto project_chunk = [&](int buf) {
    if (!projects) return;
    const float* wp = reinterpret_cast<const float*>(smem + l.wp + buf * l.wp_bytes);
#pragma unroll 2
    for (int k = 0; k < kC; k += 4) {
      float4 a[kPx];
#pragma unroll
      for (int i = 0; i < kPx; ++i) a[i] = *reinterpret_cast<const float4*>(D + prow[i] + k);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float4 bq[kNc];
#pragma unroll
        for (int j = 0; j < kNc; ++j) bq[j] = *reinterpret_cast<const float4*>(wp + (k + kk) * l.co_pad + pcol[j]);
#pragma unroll
        for (int i = 0; i < kPx; ++i)
#pragma unroll
          for (int j = 0; j < kNc; ++j) acc[i][j] = fma4(lane(a[i], kk), bq[j], acc[i][j]);
      }
    }
  };

  // The chunk loop of the tensor-core kernels (fused_block_detail::run_chunks).
  fused_block_detail::run_chunks(g.chunks, load_chunk, expand_chunk, depthwise_chunk, project_chunk);

  // Epilogue: bias, the residual (stride 1: output pixel (oy, ox) is window pixel (oy + pad_top, ox + pad_left)),
  // 16-byte stores.
  if (!projects) return;
  float* out = static_cast<float*>(p.output);
  const int pout = g.tile_h * g.tile_w;
#pragma unroll
  for (int i = 0; i < kPx; ++i) {
    const int px = pg * kPx + i;
    if (px >= pout) continue;
    const int oy = px / g.tile_w, ox = px - oy * g.tile_w;
    const int oh = tile.oh0 + oy, ow = tile.ow0 + ox;
    if (oh >= s.out_h || ow >= s.out_w) continue;
    float* orow = out + ((tile.n * s.out_h + oh) * s.out_w + ow) * s.out_channels;
    const float* xres = X + ((oy + s.pad_top) * l.window_w + ox + s.pad_left) * l.ld_x;
#pragma unroll
    for (int j = 0; j < kNc; ++j) {
      const int col = (cqi + g.ncg * j) * 4;
      if (col >= s.out_channels) continue;  // out_channels is a multiple of 4: the quad is inside
      float4 v = acc[i][j] + __ldg(reinterpret_cast<const float4*>(p.project_bias + col));
      if (s.residual) v = v + *reinterpret_cast<const float4*>(xres + col);
      *reinterpret_cast<float4*>(orow + col) = v;
    }
  }
}

template <int kStride, int kPx, int kNc>
void launch_tile(const FusedBlockParams& p, const Geometry& g, int64_t blocks, cudaStream_t stream) {
  // Raised once to what the device allows, on the first (uncaptured) launch.
  static const cudaError_t raised = cudaFuncSetAttribute(
      fused_block_ffma_kernel<kStride, kPx, kNc>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin_limit());
  MNV2_KERNEL_CALL("fused_block_ffma", raised);
  fused_block_ffma_kernel<kStride, kPx, kNc>
      <<<static_cast<unsigned>(blocks), kT, static_cast<size_t>(g.l.total), stream>>>(p, g);
  MNV2_CHECK_LAUNCH("fused_block_ffma");
}

template <int kStride>
void launch_stride(const FusedBlockParams& p, const FusedBlockFfmaVariant& v, const Geometry& g, int64_t blocks,
                   cudaStream_t stream) {
  // kFusedBlockFfmaTiles, one instantiation each.
  static_assert(std::size(kFusedBlockFfmaTiles) == 7, "one case per built micro-tile");
  switch (v.px * 16 + v.nc) {
    case 2 * 16 + 1:
      return launch_tile<kStride, 2, 1>(p, g, blocks, stream);
    case 4 * 16 + 1:
      return launch_tile<kStride, 4, 1>(p, g, blocks, stream);
    case 2 * 16 + 2:
      return launch_tile<kStride, 2, 2>(p, g, blocks, stream);
    case 4 * 16 + 2:
      return launch_tile<kStride, 4, 2>(p, g, blocks, stream);
    case 2 * 16 + 4:
      return launch_tile<kStride, 2, 4>(p, g, blocks, stream);
    case 4 * 16 + 4:
      return launch_tile<kStride, 4, 4>(p, g, blocks, stream);
    case 2 * 16 + 8:
      return launch_tile<kStride, 2, 8>(p, g, blocks, stream);
    default:
      throw Error("fused_block_ffma: variant " + to_string(v) + " is not built");
  }
}

}  // namespace

void launch_fused_block_ffma(const FusedBlockParams& p, const FusedBlockFfmaVariant& v, cudaStream_t stream) {
  const FusedBlockShape& s = p.shape;
  if (const std::string why = fused_block_ffma_shape_refusal(s); !why.empty()) throw Error("fused_block_ffma: " + why);
  if (const std::string why = fused_block_ffma_variant_refusal(s, v, smem_optin_limit()); !why.empty())
    throw Error("fused_block_ffma: " + why);
  if (p.input == nullptr || p.expand_weight == nullptr || p.expand_bias == nullptr || p.dw_weight == nullptr ||
      p.dw_bias == nullptr || p.project_weight == nullptr || p.project_bias == nullptr || p.output == nullptr)
    throw Error("fused_block_ffma: null operand");
  if (p.output == p.input) throw Error("fused_block_ffma: the output must not alias the input");
  if (!aligned16(p.input) || !aligned16(p.output) || !aligned16(p.expand_weight) || !aligned16(p.expand_bias) ||
      !aligned16(p.dw_weight) || !aligned16(p.dw_bias) || !aligned16(p.project_weight) || !aligned16(p.project_bias))
    throw Error("fused_block_ffma: operands must be 16-byte aligned");
  Geometry g;
  g.l = fused_block_ffma_layout(s, v.tile_h, v.tile_w);
  g.tile_h = v.tile_h;
  g.tile_w = v.tile_w;
  g.tiles_w = static_cast<int>(ceil_div(s.out_w, v.tile_w));
  g.tiles = static_cast<int>(ceil_div(s.out_h, v.tile_h)) * g.tiles_w;
  g.chunks = g.l.e_pad / kC;
  g.passes = static_cast<int>(ceil_div(g.l.m1, kPass));
  g.groups_x = static_cast<int>(ceil_div(v.tile_w, 4));
  g.dw_groups = v.tile_h * g.groups_x;
  g.ncg = static_cast<int>(ceil_div(g.l.co_pad / 4, v.nc));
  g.items = fused_block_ffma_items(s, v.tile_h, v.tile_w, v.px, v.nc);
  const int64_t blocks = static_cast<int64_t>(g.tiles) * s.batch;
  if (blocks > 0x7fffffff) throw Error("fused_block_ffma: too many tiles for one launch");
  if (s.stride == 2) return launch_stride<2>(p, v, g, blocks, stream);
  return launch_stride<1>(p, v, g, blocks, stream);
}

}  // namespace mnv2::kernels
