// The tiled FFMA GEMM of gemm.cuh. Each block computes a BM x BN tile of C from BK-deep slices of A and B
// held in shared memory, two slices deep: while the block multiplies one slice, each thread already holds
// its share of the next one in registers, so one barrier per slice suffices. Each thread accumulates a
// TM x TN block of C in registers (register blocking), read from shared memory as float4.
// The warp-tiled tiles (GemmTile::t128x128w and kin, gemm_warp_kernel) arrange the same scheme for occupancy and
// shared-memory traffic: each warp owns 64x32 outputs (8 x 4 lanes of 8x8), 16-deep slices, A's transposed
// slice XOR-swizzled instead of padded, and at most 128 registers per thread so that two 256-thread blocks share
// a multiprocessor.
#include <algorithm>
#include <climits>
#include <cmath>

#include "kernels/gemm.cuh"

namespace mnv2::kernels {
namespace {

template <int BM, int BN, int BK, int TM, int TN>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
  static constexpr int kThreadsN = BN / TN;  // threads along a row of the tile
  static constexpr int kThreadsM = BM / TM;
  static constexpr int kThreads = kThreadsN * kThreadsM;
  // A thread's rows (columns) come in float4 chunks spread BM / kChunksM apart, so a quarter-warp reads
  // 128 contiguous bytes of shared memory per float4 load: no bank conflicts.
  static constexpr int kChunksM = TM / 4;
  static constexpr int kChunksN = TN / 4;
  // A's tile is stored transposed (k-major); 4 floats of padding per row put the rows that one warp's
  // transposing stores hit (k and k + 4) on different banks.
  static constexpr int kLdsA = BM + 4;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "register blocks and slices come in float4s");
};

using Tile128x128 = Tile<128, 128, 8, 8, 8>;
using Tile128x64 = Tile<128, 64, 8, 8, 4>;
using Tile64x64 = Tile<64, 64, 8, 4, 4>;
using Tile128x32 = Tile<128, 32, 8, 8, 4>;
using Tile32x32 = Tile<32, 32, 8, 4, 4>;
// 32-deep slices: a quarter of the k steps, each with four float4 loads per operand in flight; for small,
// latency-bound problems, where each slice costs about one load latency whatever its depth.
using Tile32x32k32 = Tile<32, 32, 32, 4, 4>;

// A split's partial sums for kW consecutive columns. kCoherent: written by other blocks of the same kernel
// (in-kernel reduction), so read through L2 (__ldcg), never a stale L1 line or the read-only path.
template <int kW, bool kCoherent>
__device__ __forceinline__ typename Vec<kW>::Type load_partial(const float* at) {
  if constexpr (!kCoherent) {
    return Vec<kW>::load(at);
  } else if constexpr (kW == 4) {
    return __ldcg(reinterpret_cast<const float4*>(at));
  } else {
    return __ldcg(at);
  }
}

// The split-K epilogue on the sum of kW consecutive columns (m, n): bias, clip, residual, as the single-pass
// epilogue does.
template <int kW>
__device__ __forceinline__ void splitk_epilogue(const GemmParams& p, int m, int n, typename Vec<kW>::Type sum) {
  using V = Vec<kW>;
  if (p.bias_mode == BiasMode::per_col) sum = V::add(sum, V::load(p.bias + n));
  if (p.bias_mode == BiasMode::per_row) {
    const float b = __ldg(p.bias + m);
    if constexpr (kW == 4) {
      sum = sum + make_float4(b, b, b, b);
    } else {
      sum += b;
    }
  }
  sum = V::clip(sum, p.clip);
  if (p.residual != nullptr) sum = V::add(sum, V::load(p.residual + static_cast<int64_t>(m) * p.ldr + n));
  V::store(p.c + static_cast<int64_t>(m) * p.ldc + n, sum);
}

// In-kernel split-K: after a block has stored its partial tile, it counts itself in at the tile's counter; the
// last of the tile's gridDim.z blocks adds every split's partials, stores C and puts the counter back to zero for
// the next GEMM or replay (splitk_arrive_last). The sums run in split order, as splitk_reduce_kernel's (the same
// bits); each thread keeps all its column groups in flight at once, split by split, so the loads of one split
// overlap.
template <int BM, int BN, int kThreads, int kW>
__device__ __forceinline__ void splitk_reduce_in_kernel(const GemmParams& p, int m0, int n0) {
  using V = Vec<kW>;
  if (!splitk_arrive_last(p.tile_counters + blockIdx.x, gridDim.z)) return;
  constexpr int kCols = BN / kW;
  constexpr int kGroups = (BM * kCols + kThreads - 1) / kThreads;  // column groups per thread
  const int64_t matrix = static_cast<int64_t>(p.m) * p.n;
  const int splits = static_cast<int>(gridDim.z);
  int64_t at[kGroups];
  bool inside[kGroups];
  typename V::Type sum[kGroups];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int e = threadIdx.x + g * kThreads;
    const int m = m0 + e / kCols, n = n0 + (e % kCols) * kW;
    inside[g] = e < BM * kCols && m < p.m && n < p.n;
    at[g] = static_cast<int64_t>(m) * p.n + n;
    if (inside[g]) sum[g] = load_partial<kW, true>(p.workspace + at[g]);
  }
  // kBatch splits' loads are issued before any of them is added (about 64 floats in flight per thread): the
  // chain of L2 round trips is splits / kBatch long, not splits.
  constexpr int kBatch = 64 / (kGroups * kW) > 1 ? 64 / (kGroups * kW) : 1;
  for (int s0 = 1; s0 < splits; s0 += kBatch) {
    typename V::Type part[kBatch][kGroups];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
        if (inside[g] && s0 + u < splits) part[u][g] = load_partial<kW, true>(p.workspace + (s0 + u) * matrix + at[g]);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
        if (inside[g] && s0 + u < splits) sum[g] = V::add(sum[g], part[u][g]);
  }
#pragma unroll
  for (int g = 0; g < kGroups; ++g)
    if (inside[g]) splitk_epilogue<kW>(p, static_cast<int>(at[g] / p.n), static_cast<int>(at[g] % p.n), sum[g]);
  if (threadIdx.x == 0) p.tile_counters[blockIdx.x] = 0u;
}

// k_chunk > 0: split-K, blockIdx.z is the split; the block covers k in [z * k_chunk, z * k_chunk + k_chunk) and
// stores raw partial sums to p.workspace (one m x n matrix per split, row stride n), no epilogue; with
// kInKernel the tile's last block then adds them (splitk_reduce_in_kernel). kInKernel is a template parameter, not
// a test of p.tile_counters: the reduction's registers would otherwise be allocated in every GEMM kernel (measured
// with ptxas -v, CUDA 13.0, sm_90: median 91 -> 141 registers per thread, docs/PERFORMANCE.md run 9c).
template <class T, bool kVec, bool kInKernel>
__global__ void __launch_bounds__(T::kThreads) gemm_kernel(const GemmParams p, const int k_chunk) {
  // PDL: the wait for the previous kernel comes with the first slice's loads (below).
  constexpr int BM = T::kBM, BN = T::kBN, BK = T::kBK, TM = T::kTM, TN = T::kTN;
  constexpr int kThreads = T::kThreads;
  constexpr int kW = kVec ? 4 : 1;  // floats per global access
  using V = Vec<kW>;
  constexpr int kAElems = BM * BK / kW;  // accesses per slice of A
  constexpr int kBElems = BK * BN / kW;
  constexpr int kALoads = (kAElems + kThreads - 1) / kThreads;
  constexpr int kBLoads = (kBElems + kThreads - 1) / kThreads;

  __shared__ __align__(16) float As[2][BK][T::kLdsA];
  __shared__ __align__(16) float Bs[2][BK][BN];

  const bool split = k_chunk > 0;
  const int z = split ? 0 : static_cast<int>(blockIdx.z);
  const int outer = z / p.inner;
  const int inner = z - outer * p.inner;
  const float* __restrict__ A = p.a + outer * p.a_outer_stride + inner * p.a_inner_stride;
  const float* __restrict__ B = p.b + outer * p.b_outer_stride + inner * p.b_inner_stride;
  float* __restrict__ C = p.c + outer * p.c_outer_stride + inner * p.c_inner_stride;
  const float* __restrict__ R =
      p.residual != nullptr ? p.residual + outer * p.c_outer_stride + inner * p.c_inner_stride : nullptr;
  const float* __restrict__ bias = p.bias != nullptr ? p.bias + inner * p.bias_inner_stride : nullptr;

  const int M = p.m, N = p.n, K = p.k;
  // One-dimensional grid, column tiles fastest: the blocks that share a row tile of A run back to back, so
  // A is read from DRAM once and served from L2 to the other column tiles.
  const int n_tiles = (N + BN - 1) / BN;
  const int m0 = static_cast<int>(blockIdx.x / n_tiles) * BM;
  const int n0 = static_cast<int>(blockIdx.x % n_tiles) * BN;
  const int k_begin = split ? static_cast<int>(blockIdx.z) * k_chunk : 0;
  const int k_end = split ? min(K, k_begin + k_chunk) : K;
  const int tid = threadIdx.x;

  typename V::Type ra[kALoads], rb[kBLoads];

  // Global -> registers: slice [k0, k0 + BK) of A's rows m0.. (with_a) and of B's columns n0.. (with_b); zeros
  // outside.
  auto load_slice = [&](int k0, bool with_a = true, bool with_b = true) {
    if (with_a) {
#pragma unroll
      for (int r = 0; r < kALoads; ++r) {
        const int e = tid + r * kThreads;
        if (kAElems % kThreads == 0 || e < kAElems) {
          const int row = e / (BK / kW);
          const int kk = (e % (BK / kW)) * kW;
          const int gm = m0 + row, gk = k0 + kk;
          ra[r] = (gm < M && gk < k_end) ? V::load(A + static_cast<int64_t>(gm) * p.lda + gk) : V::zero();
        }
      }
    }
    if (with_b) {
#pragma unroll
      for (int r = 0; r < kBLoads; ++r) {
        const int e = tid + r * kThreads;
        if (kBElems % kThreads == 0 || e < kBElems) {
          const int row = e / (BN / kW);
          const int col = (e % (BN / kW)) * kW;
          const int gk = k0 + row, gn = n0 + col;
          rb[r] = (gk < k_end && gn < N) ? V::load(B + static_cast<int64_t>(gk) * p.ldb + gn) : V::zero();
        }
      }
    }
  };
  // Registers -> shared buffer `buf`, A transposed.
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int r = 0; r < kALoads; ++r) {
      const int e = tid + r * kThreads;
      if (kAElems % kThreads == 0 || e < kAElems) {
        const int row = e / (BK / kW);
        const int kk = (e % (BK / kW)) * kW;
        if constexpr (kVec) {
          As[buf][kk + 0][row] = ra[r].x;
          As[buf][kk + 1][row] = ra[r].y;
          As[buf][kk + 2][row] = ra[r].z;
          As[buf][kk + 3][row] = ra[r].w;
        } else {
          As[buf][kk][row] = ra[r];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kBLoads; ++r) {
      const int e = tid + r * kThreads;
      if (kBElems % kThreads == 0 || e < kBElems) {
        const int row = e / (BN / kW);
        const int col = (e % (BN / kW)) * kW;
        V::store(&Bs[buf][row][col], rb[r]);
      }
    }
  };

  const int tx = tid % T::kThreadsN;
  const int ty = tid / T::kThreadsN;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  const int slices = (k_end - k_begin + BK - 1) / BK;
  // PDL (common.cuh): the first slice of an operand that is weights (GemmParams::a/b_before_wait) before the wait
  // for the previous kernel, the rest after it.
  load_slice(k_begin, p.a_before_wait, p.b_before_wait);
  pdl_enter();
  load_slice(k_begin, !p.a_before_wait, !p.b_before_wait);
  store_slice(0);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int buf = s & 1;
    if (s + 1 < slices) load_slice(k_begin + (s + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int v = 0; v < T::kChunksM; ++v) {
        const float4 t = *reinterpret_cast<const float4*>(&As[buf][kk][v * (BM / T::kChunksM) + ty * 4]);
        a[v * 4 + 0] = t.x;
        a[v * 4 + 1] = t.y;
        a[v * 4 + 2] = t.z;
        a[v * 4 + 3] = t.w;
      }
#pragma unroll
      for (int v = 0; v < T::kChunksN; ++v) {
        const float4 t = *reinterpret_cast<const float4*>(&Bs[buf][kk][v * (BN / T::kChunksN) + tx * 4]);
        b[v * 4 + 0] = t.x;
        b[v * 4 + 1] = t.y;
        b[v * 4 + 2] = t.z;
        b[v * 4 + 3] = t.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in the previous slice, before that slice's barrier.
    if (s + 1 < slices) store_slice(buf ^ 1);
    __syncthreads();
  }

  if (split) {
    // Raw partial sums; splitk_reduce_kernel, or the tile's last block here, applies the epilogue.
    float* P = p.workspace + static_cast<int64_t>(blockIdx.z) * M * N;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + (i / 4) * (BM / T::kChunksM) + ty * 4 + (i % 4);
      if (m >= M) continue;
#pragma unroll
      for (int v = 0; v < T::kChunksN; ++v) {
        const int n = n0 + v * (BN / T::kChunksN) + tx * 4;
        if (n >= N) continue;
        float* out = P + static_cast<int64_t>(m) * N + n;
        if constexpr (kVec) {
          Vec<4>::store(out, make_float4(acc[i][v * 4 + 0], acc[i][v * 4 + 1], acc[i][v * 4 + 2], acc[i][v * 4 + 3]));
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (n + j < N) out[j] = acc[i][v * 4 + j];
        }
      }
    }
    if constexpr (kInKernel) splitk_reduce_in_kernel<BM, BN, kThreads, kVec ? 4 : 1>(p, m0, n0);
    return;
  }

  // Epilogue: bias, clip, residual, store.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + (i / 4) * (BM / T::kChunksM) + ty * 4 + (i % 4);
    if (m >= M) continue;
    const float row_bias = p.bias_mode == BiasMode::per_row ? __ldg(bias + m) : 0.0f;
#pragma unroll
    for (int v = 0; v < T::kChunksN; ++v) {
      const int n = n0 + v * (BN / T::kChunksN) + tx * 4;
      if (n >= N) continue;
      const int64_t c_at = static_cast<int64_t>(m) * p.ldc + n;
      if constexpr (kVec) {
        float4 o = make_float4(acc[i][v * 4 + 0], acc[i][v * 4 + 1], acc[i][v * 4 + 2], acc[i][v * 4 + 3]);
        if (p.bias_mode == BiasMode::per_col) {
          o = o + Vec<4>::load(bias + n);
        } else if (p.bias_mode == BiasMode::per_row) {
          o = o + make_float4(row_bias, row_bias, row_bias, row_bias);
        }
        o = apply_clip(o, p.clip);
        if (R != nullptr) o = o + Vec<4>::load(R + static_cast<int64_t>(m) * p.ldr + n);
        Vec<4>::store(C + c_at, o);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (n + j >= N) break;
          float x = acc[i][v * 4 + j];
          if (p.bias_mode == BiasMode::per_col) {
            x += __ldg(bias + n + j);
          } else {
            x += row_bias;
          }
          x = apply_clip(x, p.clip);
          if (R != nullptr) x += __ldg(R + static_cast<int64_t>(m) * p.ldr + n + j);
          C[c_at + j] = x;
        }
      }
    }
  }
}

// ---- warp-tiled variant --------------------------------------------------------------------------------------

// kWarpsM x kWarpsN warps, each owning a 64 x 32 piece of the block tile: its 32 lanes are 8 rows x 4 columns of
// threads with 8 x 8 outputs each, as two float4 chunks 32 rows apart and two 16 columns apart. A warp's float4
// reads of a k row then cover 128 contiguous bytes of A (8 addresses, each broadcast to 4 lanes) and 64 of B:
// one shared-memory wavefront each, 4 per 64 FFMA.
template <int WarpsM, int WarpsN, int BK, int MinBlocks>
struct WarpTile {
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN;
  static constexpr int kWM = 64, kWN = 32;  // a warp's outputs
  static constexpr int kBM = kWarpsM * kWM, kBN = kWarpsN * kWN, kBK = BK;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  // Resident blocks the launch bounds ask for (the registers a thread may have: 65536 / (kMinBlocks * kThreads)).
  static constexpr int kMinBlocks = MinBlocks;
  // A's transposed slice has no padding; column m of k row k is stored at m ^ ((k / 4) * kSwizzle). The
  // transposing store of one warp (8 rows of A x 4 float4 along k with BK 16; 16 x 2 with BK 8) then hits 32
  // banks, and the XOR (bits 2..4 of m) keeps every float4 of a row whole and inside its 128-byte span.
  static constexpr int kSwizzle = 128 / BK;
  static_assert(BK == 8 || BK == 16 || BK == 32, "the swizzle covers 2, 4 or 8 float4 along k");
  static_assert(kBM % 32 == 0, "the swizzle permutes within 32-float spans of a k row");
};

using WarpTile128x128 = WarpTile<2, 4, 8, 2>;  // 256 threads
using WarpTile128x96 = WarpTile<2, 3, 8, 2>;   // 192 threads: 96, 192, 384, 576, 960 output channels without padding
using WarpTile128x64 = WarpTile<2, 2, 8, 4>;   // 128 threads
using WarpTile128x32 = WarpTile<2, 1, 8, 6>;   // 64 threads

__device__ __forceinline__ int swizzled(int m, int k, int swizzle) { return m ^ ((k >> 2) * swizzle); }

// The same contract as gemm_kernel (k_chunk, split-K partials, kInKernel), with the WarpTile arrangement.
template <class T, bool kVec, bool kInKernel>
// Only the vec4 single-pass kernels are held to T::kMinBlocks: the scalar loads' separate addresses and the in-kernel
// reduction's partial sums would spill there, and neither is what the large GEMMs run.
__global__ void __launch_bounds__(T::kThreads, kVec && !kInKernel ? T::kMinBlocks : 1)
    gemm_warp_kernel(const GemmParams p, const int k_chunk) {
  // PDL: the wait for the previous kernel comes with the first slice's loads (below).
  constexpr int BM = T::kBM, BN = T::kBN, BK = T::kBK;
  constexpr int kThreads = T::kThreads;
  constexpr int kW = kVec ? 4 : 1;  // floats per global access
  using V = Vec<kW>;
  constexpr int kAElems = BM * BK / kW;  // accesses per slice of A
  constexpr int kBElems = BK * BN / kW;
  constexpr int kALoads = (kAElems + kThreads - 1) / kThreads;
  constexpr int kBLoads = (kBElems + kThreads - 1) / kThreads;

  __shared__ __align__(16) float As[2][BK][BM];  // transposed, swizzled (WarpTile::kSwizzle)
  __shared__ __align__(16) float Bs[2][BK][BN];

  const bool split = k_chunk > 0;
  const int z = split ? 0 : static_cast<int>(blockIdx.z);
  const int outer = z / p.inner;
  const int inner = z - outer * p.inner;
  const float* __restrict__ A = p.a + outer * p.a_outer_stride + inner * p.a_inner_stride;
  const float* __restrict__ B = p.b + outer * p.b_outer_stride + inner * p.b_inner_stride;
  float* __restrict__ C = p.c + outer * p.c_outer_stride + inner * p.c_inner_stride;
  const float* __restrict__ R =
      p.residual != nullptr ? p.residual + outer * p.c_outer_stride + inner * p.c_inner_stride : nullptr;
  const float* __restrict__ bias = p.bias != nullptr ? p.bias + inner * p.bias_inner_stride : nullptr;

  const int M = p.m, N = p.n, K = p.k;
  // Column tiles fastest, as gemm_kernel: the column tiles of one row tile of A run back to back.
  const int n_tiles = (N + BN - 1) / BN;
  const int m0 = static_cast<int>(blockIdx.x / n_tiles) * BM;
  const int n0 = static_cast<int>(blockIdx.x % n_tiles) * BN;
  const int k_begin = split ? static_cast<int>(blockIdx.z) * k_chunk : 0;
  const int k_end = split ? min(K, k_begin + k_chunk) : K;
  const int tid = threadIdx.x;

  typename V::Type ra[kALoads], rb[kBLoads];

  // Global -> registers: slice [k0, k0 + BK) of A's rows m0.. (with_a) and of B's columns n0.. (with_b); zeros
  // outside.
  auto load_slice = [&](int k0, bool with_a = true, bool with_b = true) {
    if (with_a) {
#pragma unroll
      for (int r = 0; r < kALoads; ++r) {
        const int e = tid + r * kThreads;
        if (kAElems % kThreads == 0 || e < kAElems) {
          const int row = e / (BK / kW);
          const int kk = (e % (BK / kW)) * kW;
          const int gm = m0 + row, gk = k0 + kk;
          ra[r] = (gm < M && gk < k_end) ? V::load(A + static_cast<int64_t>(gm) * p.lda + gk) : V::zero();
        }
      }
    }
    if (with_b) {
#pragma unroll
      for (int r = 0; r < kBLoads; ++r) {
        const int e = tid + r * kThreads;
        if (kBElems % kThreads == 0 || e < kBElems) {
          const int row = e / (BN / kW);
          const int col = (e % (BN / kW)) * kW;
          const int gk = k0 + row, gn = n0 + col;
          rb[r] = (gk < k_end && gn < N) ? V::load(B + static_cast<int64_t>(gk) * p.ldb + gn) : V::zero();
        }
      }
    }
  };
  // Registers -> shared buffer `buf`, A transposed and swizzled (a float4 of A is 4 consecutive k of one row:
  // the same swizzle for all four).
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int r = 0; r < kALoads; ++r) {
      const int e = tid + r * kThreads;
      if (kAElems % kThreads == 0 || e < kAElems) {
        const int row = e / (BK / kW);
        const int kk = (e % (BK / kW)) * kW;
        const int col = swizzled(row, kk, T::kSwizzle);
        if constexpr (kVec) {
          As[buf][kk + 0][col] = ra[r].x;
          As[buf][kk + 1][col] = ra[r].y;
          As[buf][kk + 2][col] = ra[r].z;
          As[buf][kk + 3][col] = ra[r].w;
        } else {
          As[buf][kk][col] = ra[r];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kBLoads; ++r) {
      const int e = tid + r * kThreads;
      if (kBElems % kThreads == 0 || e < kBElems) {
        const int row = e / (BN / kW);
        const int col = (e % (BN / kW)) * kW;
        V::store(&Bs[buf][row][col], rb[r]);
      }
    }
  };

  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / T::kWarpsN) * T::kWM, wn = (warp % T::kWarpsN) * T::kWN;  // the warp's tile in the block's
  const int ly = lane / 4, lx = lane % 4;
  const int a_col = wm + ly * 4;  // + 32 for the second chunk; swizzled per group of 4 k
  const int b_col = wn + lx * 4;  // + 16 for the second chunk
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int slices = (k_end - k_begin + BK - 1) / BK;
  // PDL (common.cuh): the first slice of an operand that is weights (GemmParams::a/b_before_wait) before the wait
  // for the previous kernel, the rest after it.
  load_slice(k_begin, p.a_before_wait, p.b_before_wait);
  pdl_enter();
  load_slice(k_begin, !p.a_before_wait, !p.b_before_wait);
  store_slice(0);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int buf = s & 1;
    if (s + 1 < slices) load_slice(k_begin + (s + 1) * BK);
    // Fragments two k steps deep: k step kk + 1's four loads are in flight during kk's 64 FFMA.
    float4 fa[2][2], fb[2][2];
    auto load_fragments = [&](int kk, int f) {
      fa[f][0] = *reinterpret_cast<const float4*>(&As[buf][kk][swizzled(a_col, kk, T::kSwizzle)]);
      fa[f][1] = *reinterpret_cast<const float4*>(&As[buf][kk][swizzled(a_col + 32, kk, T::kSwizzle)]);
      fb[f][0] = *reinterpret_cast<const float4*>(&Bs[buf][kk][b_col]);
      fb[f][1] = *reinterpret_cast<const float4*>(&Bs[buf][kk][b_col + 16]);
    };
    load_fragments(0, 0);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const int f = kk & 1;
      if (kk + 1 < BK) load_fragments(kk + 1, f ^ 1);
      const float a[8] = {fa[f][0].x, fa[f][0].y, fa[f][0].z, fa[f][0].w,
                          fa[f][1].x, fa[f][1].y, fa[f][1].z, fa[f][1].w};
      const float b[8] = {fb[f][0].x, fb[f][0].y, fb[f][0].z, fb[f][0].w,
                          fb[f][1].x, fb[f][1].y, fb[f][1].z, fb[f][1].w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in the previous slice, before that slice's barrier.
    if (s + 1 < slices) store_slice(buf ^ 1);
    __syncthreads();
  }

  // Output (i, j) of the thread: row m0 + a_col + (i / 4) * 32 + i % 4, column n0 + b_col + (j / 4) * 16 + j % 4.
  if (split) {
    // Raw partial sums; splitk_reduce_kernel, or the tile's last block here, applies the epilogue.
    float* P = p.workspace + static_cast<int64_t>(blockIdx.z) * M * N;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int m = m0 + a_col + (i / 4) * 32 + (i % 4);
      if (m >= M) continue;
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int n = n0 + b_col + v * 16;
        if (n >= N) continue;
        float* out = P + static_cast<int64_t>(m) * N + n;
        if constexpr (kVec) {
          Vec<4>::store(out, make_float4(acc[i][v * 4 + 0], acc[i][v * 4 + 1], acc[i][v * 4 + 2], acc[i][v * 4 + 3]));
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (n + j < N) out[j] = acc[i][v * 4 + j];
        }
      }
    }
    if constexpr (kInKernel) splitk_reduce_in_kernel<BM, BN, kThreads, kW>(p, m0, n0);
    return;
  }

  // Epilogue: bias, clip, residual, store.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = m0 + a_col + (i / 4) * 32 + (i % 4);
    if (m >= M) continue;
    const float row_bias = p.bias_mode == BiasMode::per_row ? __ldg(bias + m) : 0.0f;
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      const int n = n0 + b_col + v * 16;
      if (n >= N) continue;
      const int64_t c_at = static_cast<int64_t>(m) * p.ldc + n;
      if constexpr (kVec) {
        float4 o = make_float4(acc[i][v * 4 + 0], acc[i][v * 4 + 1], acc[i][v * 4 + 2], acc[i][v * 4 + 3]);
        if (p.bias_mode == BiasMode::per_col) {
          o = o + Vec<4>::load(bias + n);
        } else if (p.bias_mode == BiasMode::per_row) {
          o = o + make_float4(row_bias, row_bias, row_bias, row_bias);
        }
        o = apply_clip(o, p.clip);
        if (R != nullptr) o = o + Vec<4>::load(R + static_cast<int64_t>(m) * p.ldr + n);
        Vec<4>::store(C + c_at, o);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (n + j >= N) break;
          float x = acc[i][v * 4 + j];
          if (p.bias_mode == BiasMode::per_col) {
            x += __ldg(bias + n + j);
          } else {
            x += row_bias;
          }
          x = apply_clip(x, p.clip);
          if (R != nullptr) x += __ldg(R + static_cast<int64_t>(m) * p.ldr + n + j);
          C[c_at + j] = x;
        }
      }
    }
  }
}

// The separate split-K pass (CudaOptions::SplitK::separate): one thread per kW columns of the result, the
// partials added in split order (the same order every run: deterministic).
template <int kW>
__global__ void __launch_bounds__(kBlockThreads) splitk_reduce_kernel(const GemmParams p, const int splits) {
  pdl_enter();
  using V = Vec<kW>;
  const int groups = p.n / kW;
  const int64_t total = static_cast<int64_t>(p.m) * groups;
  const int64_t matrix = static_cast<int64_t>(p.m) * p.n;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int m = static_cast<int>(idx / groups);
    const int n = static_cast<int>(idx % groups) * kW;
    const float* part = p.workspace + static_cast<int64_t>(m) * p.n + n;
    typename V::Type sum = load_partial<kW, false>(part);
    for (int s = 1; s < splits; ++s) sum = V::add(sum, load_partial<kW, false>(part + s * matrix));
    splitk_epilogue<kW>(p, m, n, sum);
  }
}

// Rounded to whole slices so every split but the last starts on a slice (and a float4) boundary.
int split_k_chunk(int k, int splits, int bk) { return static_cast<int>(ceil_div(ceil_div(k, splits), bk) * bk); }

// The two kernel families behind one launch_tile.
template <class T, bool kVec, bool kInKernel>
struct PlainKernel {
  static void launch(dim3 grid, cudaStream_t stream, const GemmParams& p, int k_chunk) {
    gemm_kernel<T, kVec, kInKernel><<<grid, T::kThreads, 0, stream>>>(p, k_chunk);
  }
};
template <class T, bool kVec, bool kInKernel>
struct WarpKernel {
  static void launch(dim3 grid, cudaStream_t stream, const GemmParams& p, int k_chunk) {
    gemm_warp_kernel<T, kVec, kInKernel><<<grid, T::kThreads, 0, stream>>>(p, k_chunk);
  }
};

// Kernel<T, kVec, kInKernel>: gemm_kernel's or gemm_warp_kernel's instantiations.
template <class T, template <class, bool, bool> class Kernel>
void launch_tile(const GemmParams& p, const GemmVariant& v, cudaStream_t stream) {
  const int64_t tiles = ceil_div(p.m, T::kBM) * ceil_div(p.n, T::kBN);
  if (tiles > 0x7fffffff) throw Error("gemm: too many tiles for one launch");
  const int k_chunk = v.splits > 1 ? split_k_chunk(p.k, v.splits, T::kBK) : 0;
  if (v.splits > 1 && ceil_div(p.k, k_chunk) != v.splits)
    throw Error("gemm: " + std::to_string(v.splits) + " splits of " + std::to_string(T::kBK) +
                "-deep slices do not fit k " + std::to_string(p.k) + " (a split would be empty)");
  const dim3 grid(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(v.splits > 1 ? v.splits : p.batch));
  const bool in_kernel = v.splits > 1 && v.reduce_in_kernel;
  if (in_kernel) {
    if (v.vec4) {
      Kernel<T, true, true>::launch(grid, stream, p, k_chunk);
    } else {
      Kernel<T, false, true>::launch(grid, stream, p, k_chunk);
    }
  } else if (v.vec4) {
    Kernel<T, true, false>::launch(grid, stream, p, k_chunk);
  } else {
    Kernel<T, false, false>::launch(grid, stream, p, k_chunk);
  }
  MNV2_CHECK_LAUNCH("gemm");
  if (v.splits > 1 && !in_kernel) {
    const int64_t items = static_cast<int64_t>(p.m) * p.n / (v.vec4 ? 4 : 1);
    const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(items, kBlockThreads), 1, 4096));
    if (v.vec4) {
      splitk_reduce_kernel<4><<<blocks, kBlockThreads, 0, stream>>>(p, v.splits);
    } else {
      splitk_reduce_kernel<1><<<blocks, kBlockThreads, 0, stream>>>(p, v.splits);
    }
    MNV2_CHECK_LAUNCH("gemm split-k reduce");
  }
}

}  // namespace

bool gemm_vec4_ok(const GemmParams& p) {
  const bool dims = p.k % 4 == 0 && p.n % 4 == 0 && p.lda % 4 == 0 && p.ldb % 4 == 0 && p.ldc % 4 == 0 &&
                    (p.residual == nullptr || p.ldr % 4 == 0);
  const bool strides = p.a_outer_stride % 4 == 0 && p.a_inner_stride % 4 == 0 && p.b_outer_stride % 4 == 0 &&
                       p.b_inner_stride % 4 == 0 && p.c_outer_stride % 4 == 0 && p.c_inner_stride % 4 == 0 &&
                       (p.bias_mode != BiasMode::per_col || p.bias_inner_stride % 4 == 0);
  const bool pointers = aligned16(p.a) && aligned16(p.b) && aligned16(p.c) &&
                        (p.residual == nullptr || aligned16(p.residual)) &&
                        (p.bias_mode != BiasMode::per_col || aligned16(p.bias));
  return dims && strides && pointers;
}

GemmVariant choose_gemm_variant(const GemmParams& p, int num_sms, bool allow_split, const GemmTile* only_tile) {
  DeviceCaps caps;
  caps.num_sms = num_sms;
  return choose_gemm_variant(GemmShape{p.m, p.n, p.k, p.batch, gemm_vec4_ok(p)}, caps, allow_split, only_tile);
}

int64_t gemm_workspace_floats(const GemmParams& p, const GemmVariant& v) { return gemm_workspace_floats(p.m, p.n, v); }

void launch_gemm(const GemmParams& p, const GemmVariant& v, cudaStream_t stream) {
  if (p.m < 1 || p.n < 1 || p.k < 1) {
    throw Error("gemm: sizes must be positive (m " + std::to_string(p.m) + ", n " + std::to_string(p.n) + ", k " +
                std::to_string(p.k) + ")");
  }
  if (p.a == nullptr || p.b == nullptr || p.c == nullptr) throw Error("gemm: null operand");
  if (p.lda < p.k || p.ldb < p.n || p.ldc < p.n || (p.residual != nullptr && p.ldr < p.n))
    throw Error("gemm: a leading dimension is smaller than its row");
  if (p.bias_mode != BiasMode::none && p.bias == nullptr) throw Error("gemm: bias mode without a bias");
  if (p.batch < 1 || p.batch > 65535 || p.inner < 1)
    throw Error("gemm: batch " + std::to_string(p.batch) + " outside 1..65535 (inner " + std::to_string(p.inner) + ")");
  if (v.vec4 && !gemm_vec4_ok(p))
    throw Error("gemm: the vec4 variant needs k, n, strides in multiples of 4 floats and 16-byte aligned operands");
  if (v.splits < 1 || v.splits > 65535) throw Error("gemm: split count " + std::to_string(v.splits) + " out of range");
  if (v.splits > 1) {
    if (p.batch != 1) throw Error("gemm: split-K runs single GEMMs only (batch " + std::to_string(p.batch) + ")");
    if (p.workspace == nullptr) throw Error("gemm: split-K needs a workspace");
    if (v.vec4 && !aligned16(p.workspace)) throw Error("gemm: the split-K workspace must be 16-byte aligned");
    if (v.reduce_in_kernel && p.tile_counters == nullptr)
      throw Error("gemm: the in-kernel split-K reduction needs tile counters");
  }
  switch (v.tile) {
    case GemmTile::t128x128:
      return launch_tile<Tile128x128, PlainKernel>(p, v, stream);
    case GemmTile::t128x64:
      return launch_tile<Tile128x64, PlainKernel>(p, v, stream);
    case GemmTile::t64x64:
      return launch_tile<Tile64x64, PlainKernel>(p, v, stream);
    case GemmTile::t128x32:
      return launch_tile<Tile128x32, PlainKernel>(p, v, stream);
    case GemmTile::t32x32:
      return launch_tile<Tile32x32, PlainKernel>(p, v, stream);
    case GemmTile::t32x32k32:
      return launch_tile<Tile32x32k32, PlainKernel>(p, v, stream);
    case GemmTile::t128x128w:
      return launch_tile<WarpTile128x128, WarpKernel>(p, v, stream);
    case GemmTile::t128x96w:
      return launch_tile<WarpTile128x96, WarpKernel>(p, v, stream);
    case GemmTile::t128x64w:
      return launch_tile<WarpTile128x64, WarpKernel>(p, v, stream);
    case GemmTile::t128x32w:
      return launch_tile<WarpTile128x32, WarpKernel>(p, v, stream);
  }
  throw Error("gemm: unknown tile " + std::to_string(static_cast<int>(v.tile)));
}

}  // namespace mnv2::kernels
