// What the whole-block kernels share (internal to the kernels library): on the host, the geometry one launch of the
// tensor-core kernels derives (fused_block.cu: the fp16 kernel and the launch with its checks; fused_block_tf32.cu:
// the TF32 kernel); in device code, the pieces of a block's work that do not depend on the element type: where the
// tile lies and which window pixels are inside the map, the depthwise items' walk over the tile, the chunk loop with
// its two barriers, the float32 depthwise item (FFMA and TF32 kernels) and the projection epilogue's walk over a
// warp's items (fp16 and TF32).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "kernels/fused_block.cuh"
#include "kernels/mma.cuh"  // copy_commit, copy_wait_all

namespace mnv2::kernels::fused_block_detail {

// Expansion row tiles (16 window pixels) per warp a launch may have: their halo masks fill one 32-bit register.
inline constexpr int kMaxRowTiles = 16;

// What the host derives once per launch.
struct Geometry {
  FusedBlockLayout l;
  int tile_h = 0, tile_w = 0, tiles_w = 0, tiles = 0, chunks = 0;
  int splits = 1;  // blockIdx.y: the split, chunks [y chunks / splits, (y + 1) chunks / splits)
};

// The TF32 kernel (fused_block_tf32.cu) for a checked launch: items 2, 4 or 6; p.shape.stride 1 or 2.
void launch_tf32(const FusedBlockParams& p, const Geometry& g, int items, int64_t blocks, cudaStream_t stream);

#if defined(__CUDACC__)
// One launch of a tensor-core block kernel's instantiation (kernel: Kernel<items, stride>), its dynamic shared memory
// raised once to what the device allows, on the first (uncaptured) launch.
template <auto kKernel>
void launch_instance(const FusedBlockParams& p, const Geometry& g, int64_t blocks, cudaStream_t stream) {
  static const cudaError_t raised =
      cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin_limit());
  MNV2_KERNEL_CALL("fused_block", raised);
  kKernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(g.splits)), kFusedBlockThreads,
            static_cast<size_t>(g.l.total), stream>>>(p, g);
  MNV2_CHECK_LAUNCH("fused_block");
}

// launch(items, stride) with both as std::integral_constant: items 2, 4 or 6 (a launch's kItems), stride 1 or 2.
template <typename Launch>
void dispatch_items_stride(int items, int stride, Launch&& launch) {
  auto by_stride = [&](auto items_c) {
    if (stride == 2) return launch(items_c, std::integral_constant<int, 2>{});
    return launch(items_c, std::integral_constant<int, 1>{});
  };
  switch (items) {
    case 2:
      return by_stride(std::integral_constant<int, 2>{});
    case 4:
      return by_stride(std::integral_constant<int, 4>{});
    default:
      return by_stride(std::integral_constant<int, 6>{});
  }
}

// The projection's accumulators (kItems items x 4 n-tiles x 4 floats) at zero.
template <int kItems>
__device__ __forceinline__ void zero_accumulators(float (&acc)[kItems][4][4]) {
#pragma unroll
  for (int j = 0; j < kItems; ++j)
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[j][t][q] = 0.0f;
}

// Block blockIdx.x's tile (or tile `block`'s, where a persistent block walks several): image n, first output pixel
// (oh0, ow0), first window pixel (ih0, iw0) (negative in the padding). tiles and tiles_w: the launch's tiles per image
// and per tile row.
template <int kStride>
struct TileOrigin {
  int64_t n;
  int oh0, ow0, ih0, iw0;
  __device__ __forceinline__ TileOrigin(const FusedBlockShape& s, int tiles, int tiles_w, int tile_h, int tile_w)
      : TileOrigin(s, tiles, tiles_w, tile_h, tile_w, blockIdx.x) {}
  __device__ __forceinline__ TileOrigin(const FusedBlockShape& s, int tiles, int tiles_w, int tile_h, int tile_w,
                                        unsigned block) {
    n = block / tiles;
    const int tile = static_cast<int>(block % tiles);
    oh0 = (tile / tiles_w) * tile_h;
    ow0 = (tile % tiles_w) * tile_w;
    ih0 = oh0 * kStride - s.pad_top;
    iw0 = ow0 * kStride - s.pad_left;
  }
  // Is window pixel r (window_h x window_w, row-major) inside the map, else the depthwise's zero padding (or past the
  // window)?
  __device__ __forceinline__ bool inside(const FusedBlockShape& s, int window_h, int window_w, int r) const {
    const int wy = r / window_w, wx = r - wy * window_w;
    const int ih = ih0 + wy, iw = iw0 + wx;
    return r < window_h * window_w && ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
  }
};

// The tile's input window into X (rows of ld_x elements, m1 of them): 16 bytes (16 / sizeof(T) channels) per copy,
// cp.async where it exists; zero outside the map, past the channels and in the padding rows. Layout: the kernel's
// (window_h, window_w, m1, k_pad, ld_x).
template <int kThreads, typename T, int kStride, typename Layout>
__device__ __forceinline__ void copy_window(const TileOrigin<kStride>& t, const FusedBlockShape& s, const Layout& l,
                                            const T* in, T* X, int tid) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const int kv = l.k_pad / kPer;
  for (int i = tid; i < l.m1 * kv; i += kThreads) {
    const int r = i / kv, c = (i - r * kv) * kPer;
    const int wy = r / l.window_w, wx = r - wy * l.window_w;
    const bool inside = t.inside(s, l.window_h, l.window_w, r) && c < s.in_channels;
    const T* src = inside ? in + ((t.n * s.in_h + t.ih0 + wy) * s.in_w + t.iw0 + wx) * s.in_channels + c : in;
    copy16(X + r * l.ld_x + c, src, inside);
  }
}

// One chunk's two matrices into shared memory, 16 bytes (16 / sizeof(T) elements) per copy, cp.async where it exists:
// the expansion's columns e0 .. e0 + chunk of every row k < k_pad ([k_pad][e_pad] in global memory) into we (row pitch
// ld_we), the projection's rows e0 .. e0 + chunk ([e_pad][co_pad]) into wp (row pitch ld_wp).
template <int kThreads, typename T>
__device__ __forceinline__ void copy_chunk_matrices(const T* gwe, const T* gwp, int k_pad, int e_pad, int co_pad,
                                                    int e0, T* we, int ld_we, T* wp, int ld_wp, int tid) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kRow = kFusedBlockChunk / kPer;  // copies per expansion row
  for (int i = tid; i < k_pad * kRow; i += kThreads) {
    const int k = i / kRow, c = (i % kRow) * kPer;
    copy16(we + k * ld_we + c, gwe + static_cast<int64_t>(k) * e_pad + e0 + c, true);
  }
  const int pv = co_pad / kPer;
  for (int i = tid; i < kFusedBlockChunk * pv; i += kThreads) {
    const int e = i / pv, c = (i - e * pv) * kPer;
    copy16(wp + e * ld_wp + c, gwp + static_cast<int64_t>(e0 + e) * co_pad + c, true);
  }
}

// Which of a lane's expansion rows are inside the map, for the tensor-core kernels' row tiles of 16 window pixels
// (tile warp + 8 j, rows gq and gq + 8 of it): bit 2 j + h (the launch refuses windows of more than kMaxRowTiles row
// tiles per warp).
template <int kStride>
__device__ __forceinline__ uint32_t row_inside_bits(const TileOrigin<kStride>& t, const FusedBlockShape& s,
                                                    const FusedBlockLayout& l, int warp, int gq) {
  uint32_t bits = 0;
  const int row_tiles = l.m1 / 16;
  for (int j = 0; j < kMaxRowTiles && warp + j * kFusedBlockWarps < row_tiles; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      bits |=
          static_cast<uint32_t>(t.inside(s, l.window_h, l.window_w, (warp + j * kFusedBlockWarps) * 16 + gq + h * 8))
          << (2 * j + h);
  return bits;
}

// The depthwise items of a tile: 4 output pixels of a row x 4 channels. Item i = tid + k * threads: channels
// (i % 8) * 4 (the same for every k), pixel group i / 8 = tid / 8 + k threads / 8, row oy and group gx of that,
// advanced without dividing. Row (high 16 bits) and group (low 16 bits) of the thread's first item and of the step,
// one register each, derived once per tile.
template <int kThreads>
struct DwWalk {
  static constexpr int kQuads = 8;  // channel quads of a 32-channel chunk
  static constexpr int kGroupStep = kThreads / kQuads;
  uint32_t start, step;
  int groups_x, groups;
  __device__ __forceinline__ DwWalk(int tid, int tile_h, int tile_w) {
    groups_x = (tile_w + 3) / 4;
    groups = tile_h * groups_x;
    start = static_cast<uint32_t>((tid / kQuads) / groups_x) << 16 | static_cast<uint32_t>((tid / kQuads) % groups_x);
    step = static_cast<uint32_t>(kGroupStep / groups_x) << 16 | static_cast<uint32_t>(kGroupStep % groups_x);
  }
  // item(oy, ox0) for each of the thread's pixel groups.
  template <typename Item>
  __device__ __forceinline__ void for_each(int tid, Item&& item) const {
    int oy = static_cast<int>(start >> 16), gx = static_cast<int>(start & 0xffffu);
    const int step_oy = static_cast<int>(step >> 16), step_gx = static_cast<int>(step & 0xffffu);
    for (int grp = tid / kQuads; grp < groups; grp += kGroupStep) {
      item(oy, gx * 4);
      gx += step_gx;
      oy += step_oy;
      if (gx >= groups_x) {
        gx -= groups_x;
        ++oy;
      }
    }
  }
};

// One float32 depthwise item: 4 output pixels of a row x 4 channels from the bias over the 9 taps in order (one FFMA
// per tap and channel). base: the expanded window at the item's first window pixel and channel quad, row pitch
// `pitch` floats a pixel, window_w pixels a row; taps: the quad's weights, tap t at taps + t * tap_pitch;
// last_col: the last window column the item may read (later columns are clamped: their pixels are not stored).
// Window column c of a row feeds pixel q through tap kx = c - q * stride, so each column is loaded once.
template <int kStride>
__device__ __forceinline__ void depthwise_item_f32(const float* base, int pitch, int window_w, const float* taps,
                                                   int tap_pitch, int last_col, float4 bias, float4 (&a)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) a[q] = bias;
#pragma unroll
  for (int ky = 0; ky < 3; ++ky) {
    const float* row = base + ky * window_w * pitch;
    float4 w[3];  // this row's taps, loaded per item: holding all 9 across items costs 36 registers
#pragma unroll
    for (int kx = 0; kx < 3; ++kx) w[kx] = *reinterpret_cast<const float4*>(taps + (ky * 3 + kx) * tap_pitch);
#pragma unroll
    for (int c = 0; c < 3 * kStride + 3; ++c) {
      const float4 v = *reinterpret_cast<const float4*>(row + min(c, last_col) * pitch);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int kx = c - q * kStride;
        if (kx >= 0 && kx < 3) a[q] = fma4(v, w[kx], a[q]);
      }
    }
  }
}

// The chunk loop, software-pipelined over two barriers per chunk (the window and chunk 0's loads issued and
// committed before; buffer c & 1 holds chunk c):
//   interval A(c): load(c + 1, buffer) issues chunk c + 1's loads (its buffers' last readers, the projection and the
//                  depthwise of chunk c - 1, ran before the barrier); depthwise(c, buffer) runs chunk c (Ex -> D);
//   interval B(c): project(buffer) of chunk c (D) and expand(buffer) of chunk c + 1 (-> Ex): the warps have work from
//                  both between the same two barriers, idle warps of one phase take the other's.
// landed() runs once every thread has the window and chunk 0 (the stamps of FusedBlockParams).
template <typename Load, typename Expand, typename Depthwise, typename Project, typename Landed>
__device__ __forceinline__ void run_chunks(int chunks, Load&& load, Expand&& expand, Depthwise&& depthwise,
                                           Project&& project, Landed&& landed) {
  copy_wait_all();  // the window and chunk 0 have landed for this thread ...
  __syncthreads();  // ... for every thread
  landed();
  expand(0);
  for (int c = 0; c < chunks; ++c) {
    const int buf = c & 1;
    __syncthreads();  // Ex holds chunk c; every warp is done with chunk c - 1 (its buffers, D)
    if (c + 1 < chunks) load(c + 1, buf ^ 1);
    copy_commit();
    depthwise(c, buf);
    copy_wait_all();  // chunk c + 1 has landed for this thread ...
    __syncthreads();  // ... for every thread; D holds chunk c; every warp is done with Ex
    project(buf);
    if (c + 1 < chunks) expand(buf ^ 1);
  }
  copy_wait_all();
}
template <typename Load, typename Expand, typename Depthwise, typename Project>
__device__ __forceinline__ void run_chunks(int chunks, Load&& load, Expand&& expand, Depthwise&& depthwise,
                                           Project&& project) {
  run_chunks(chunks, load, expand, depthwise, project, [] {});
}

// The tensor-core kernels' epilogue walk: for each of a warp's projection items (16 output pixels x 32 channels; item
// warp + 8 j of items (m2 / 16) x (co_pad / 32)) and each accumulator pair (n-tile t, row half h: pixel row gq + 8 h,
// channels 2 tq, 2 tq + 1 of the n-tile) inside the tile, the map and the channels:
// store(j, t, h, output pixel (NHWC index / out_channels), window pixel of the residual, first channel).
template <int kItems, int kStride, typename Store>
__device__ __forceinline__ void for_each_output(const FusedBlockShape& s, const Geometry& g,
                                                const TileOrigin<kStride>& tile, int warp, int lane, Store&& store) {
  const int col_groups = g.l.co_pad / 32, items_total = (g.l.m2 / 16) * col_groups;
  const int pout = g.tile_h * g.tile_w, gq = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int item = warp + j * kFusedBlockWarps;
    if (item >= items_total) continue;
    const int rt = item / col_groups, cg = item - rt * col_groups;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int px = rt * 16 + gq + h * 8;
      if (px >= pout) continue;
      const int oy = px / g.tile_w, ox = px - oy * g.tile_w;
      const int oh = tile.oh0 + oy, ow = tile.ow0 + ox;
      if (oh >= s.out_h || ow >= s.out_w) continue;
      const int64_t out_px = (tile.n * s.out_h + oh) * s.out_w + ow;
      // Stride 1 (the residual's): output pixel (oy, ox) is window pixel (oy + pad_top, ox + pad_left).
      const int window_px = (oy + s.pad_top) * g.l.window_w + ox + s.pad_left;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int col = cg * 32 + t * 8 + 2 * tq;
        if (col >= s.out_channels) continue;  // out_channels is even: col + 1 is inside too
        store(j, t, h, out_px, window_px, col);
      }
    }
  }
}
#endif  // __CUDACC__

}  // namespace mnv2::kernels::fused_block_detail
