// The tensor-core GEMM of gemm_tc.cuh, templated on the operand type (float -> TF32, __half) and the output
// type. Each block computes a BM x BN tile of C with WMMA 16x16 fragments (m16n16k8 TF32 or m16n16k16 half,
// float32 accumulators), its A and B slices brought into shared memory by cp.async three slices deep (zero
// filled outside the matrices). The epilogue goes through a small per-warp staging area: each warp stores one
// accumulator fragment, then every lane finishes 8 consecutive columns of one row (bias, clip, residual,
// conversion) with 16-byte accesses, the epilogue every other kernel of this library shares (common.cuh).
#include <cooperative_groups.h>
#include <mma.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>

#include "kernels/gemm_tc.cuh"

namespace mnv2::kernels {
namespace {

namespace wmma = nvcuda::wmma;
namespace cg = cooperative_groups;

constexpr int kStages = 3;       // k slices in flight
constexpr int kSliceBytes = 64;  // bytes of one operand row per k slice
constexpr int kStageLd = 20;     // floats per row of a warp's 16x16 staging area (16 + 4: 16-byte rows, no
                                 // two lanes of a row pair on one bank group)

// What the operand type means for the tensor cores.
template <class TIn>
struct TcOps;
// TF32 fragments exist only in code compiled for compute_80 and newer; a compute_75 build has the half
// path alone (the host refuses tf32 there: cuda backend probe, tf32_why_not).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define MNV2_GEMM_TC_HAS_TF32 1
#endif

#ifdef MNV2_GEMM_TC_HAS_TF32
template <>
struct TcOps<float> {
  static constexpr int kFragK = 8;
  using A = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using B = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
  using Acc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
  // TF32: round each float32 operand to nearest (cvt.rna.tf32.f32); the tensor cores read 10 mantissa bits.
  template <class F>
  __device__ __forceinline__ static void round(F& f) {
#pragma unroll
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = wmma::__float_to_tf32(f.x[i]);
  }
};
#endif
template <>
struct TcOps<__half> {
  static constexpr int kFragK = 16;
  using A = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
  using B = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
  using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  template <class F>
  __device__ __forceinline__ static void round(F&) {}
};

template <int BM, int BN, int WM, int WN>
struct Shape {
  static constexpr int kBM = BM, kBN = BN;
  static constexpr int kWarpsN = WN;  // warps along a row of the tile (WM along its columns)
  static constexpr int kWarps = WM * WN;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWarpM = BM / WM, kWarpN = BN / WN;  // a warp's share of the tile
  static constexpr int kFragsM = kWarpM / 16, kFragsN = kWarpN / 16;
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "warp tiles are whole 16x16 fragments");
};

using Shape128x128 = Shape<128, 128, 2, 4>;
using Shape128x64 = Shape<128, 64, 2, 2>;
using Shape64x64 = Shape<64, 64, 2, 2>;
using Shape128x32 = Shape<128, 32, 4, 1>;
using Shape32x32 = Shape<32, 32, 2, 2>;

// Shared-memory layout of one instantiation (elements of TIn, then the float staging areas).
template <class TIn, class S>
struct Smem {
  static constexpr int kBK = kSliceBytes / static_cast<int>(sizeof(TIn));
  static constexpr int kPad = 16 / static_cast<int>(sizeof(TIn));  // keeps 16-byte rows, shifts banks
  static constexpr int kLdA = kBK + kPad, kLdB = S::kBN + kPad;
  static constexpr int kAStage = S::kBM * kLdA, kBStage = kBK * kLdB;
  static constexpr size_t kOperandBytes = static_cast<size_t>(kStages) * (kAStage + kBStage) * sizeof(TIn);
  static constexpr size_t kBytes = kOperandBytes + static_cast<size_t>(S::kWarps) * 16 * kStageLd * sizeof(float);
  static_assert((kAStage * sizeof(TIn)) % 32 == 0 && (kBStage * sizeof(TIn)) % 32 == 0,
                "WMMA fragments need 32-byte aligned shared-memory addresses");
};

// cp.async (compute_80 and newer) copies global memory to shared memory without passing through registers,
// several slices in flight. Before it (Turing) the same 16 bytes go through a register synchronously: the
// stages then only double-buffer, and the barriers of the main loop order them as before.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool inside) {
#if __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = inside ? 16 : 0;  // 0: the 16 bytes are zero-filled, nothing is read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(bytes));
#else
  *static_cast<uint4*>(smem) = inside ? __ldg(static_cast<const uint4*>(gmem)) : make_uint4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// k_chunk > 0: split-K, blockIdx.z is the split; the block covers k in [z * k_chunk, z * k_chunk + k_chunk) and
// stores raw float32 partial sums to p.workspace (one m x n matrix per split, row stride n), no epilogue; with
// kCluster to `tile_sums` instead, this block's BM x BN tile in its own shared memory (row stride BN), which the
// cluster's blocks add through distributed shared memory (splitk_reduce_tc_cluster).
template <class TIn, class TOut, class S, bool kVec, bool kCluster = false>
__device__ __forceinline__ void gemm_tc_body(const TcGemmParams& p, const int k_chunk, float* tile_sums = nullptr) {
  using Ops = TcOps<TIn>;
  using L = Smem<TIn, S>;
  constexpr int BM = S::kBM, BN = S::kBN, BK = L::kBK;
  constexpr int kThreads = S::kThreads;
  constexpr int kPer = 16 / static_cast<int>(sizeof(TIn));  // elements per 16-byte copy
  constexpr int kAChunks = BM * BK / kPer;
  constexpr int kBChunks = BK * BN / kPer;

  extern __shared__ __align__(128) unsigned char smem[];
  TIn* As = reinterpret_cast<TIn*>(smem);
  TIn* Bs = As + kStages * L::kAStage;
  float* staging = reinterpret_cast<float*>(smem + L::kOperandBytes);

  const TIn* __restrict__ A = static_cast<const TIn*>(p.a);
  const TIn* __restrict__ B = static_cast<const TIn*>(p.b);
  const int M = p.m, N = p.n, K = p.k;
  // One-dimensional grid, column tiles fastest: the blocks sharing a row tile of A run back to back, so A
  // comes from DRAM once and from L2 for the other column tiles.
  const int n_tiles = (N + BN - 1) / BN;
  const int m0 = static_cast<int>(blockIdx.x / n_tiles) * BM;
  const int n0 = static_cast<int>(blockIdx.x % n_tiles) * BN;
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp / S::kWarpsN, wn = warp % S::kWarpsN;
  const bool split = k_chunk > 0;
  const int k_begin = split ? static_cast<int>(blockIdx.z) * k_chunk : 0;
  const int k_end = split ? min(K, k_begin + k_chunk) : K;

  // Slice [k0, k0 + BK) of A's rows m0.. (with_a) and of B's columns n0.. (with_b) into stage `st`; zeros
  // outside.
  auto load_slice = [&](int k0, int st, bool with_a, bool with_b) {
    TIn* as = As + st * L::kAStage;
    TIn* bs = Bs + st * L::kBStage;
    if constexpr (kVec) {
      if (with_a) {
#pragma unroll
        for (int e = tid; e < kAChunks; e += kThreads) {
          const int row = e / (BK / kPer), kk = (e % (BK / kPer)) * kPer;
          const int gm = m0 + row, gk = k0 + kk;
          const bool inside = gm < M && gk < k_end;
          cp_async16(as + row * L::kLdA + kk, inside ? A + static_cast<int64_t>(gm) * p.lda + gk : A, inside);
        }
      }
      if (with_b) {
#pragma unroll
        for (int e = tid; e < kBChunks; e += kThreads) {
          const int row = e / (BN / kPer), col = (e % (BN / kPer)) * kPer;
          const int gk = k0 + row, gn = n0 + col;
          const bool inside = gk < k_end && gn < N;
          cp_async16(bs + row * L::kLdB + col, inside ? B + static_cast<int64_t>(gk) * p.ldb + gn : B, inside);
        }
      }
    } else {
      for (int e = tid; with_a && e < BM * BK; e += kThreads) {
        const int row = e / BK, kk = e % BK;
        const int gm = m0 + row, gk = k0 + kk;
        as[row * L::kLdA + kk] =
            gm < M && gk < k_end ? A[static_cast<int64_t>(gm) * p.lda + gk] : from_float<TIn>(0.0f);
      }
      for (int e = tid; with_b && e < BK * BN; e += kThreads) {
        const int row = e / BN, col = e % BN;
        const int gk = k0 + row, gn = n0 + col;
        bs[row * L::kLdB + col] =
            gk < k_end && gn < N ? B[static_cast<int64_t>(gk) * p.ldb + gn] : from_float<TIn>(0.0f);
      }
    }
  };

  typename Ops::Acc acc[S::kFragsM][S::kFragsN];
#pragma unroll
  for (int i = 0; i < S::kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < S::kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int slices = (k_end - k_begin + BK - 1) / BK;
  // PDL (common.cuh): B's first slices before the wait for the previous kernel where they are weights, in a copy
  // group of their own ahead of the stages' groups (the main loop's wait_group then waits for it too); A, which
  // the previous kernel wrote, after it.
  const bool b_early = p.b_before_wait;
  if (b_early) {
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st)
      if (st < slices) load_slice(k_begin + st * BK, st, false, true);
    cp_async_commit();
  }
  pdl_enter();
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < slices) load_slice(k_begin + st * BK, st, true, !b_early);
    cp_async_commit();
  }
  for (int s = 0; s < slices; ++s) {
    cp_async_wait<kStages - 2>();  // slice s has landed (for this thread) ...
    __syncthreads();               // ... for every thread; and everyone is done with slice s - 1's stage
    if (s + kStages - 1 < slices) load_slice(k_begin + (s + kStages - 1) * BK, (s + kStages - 1) % kStages, true, true);
    cp_async_commit();
    const TIn* as = As + (s % kStages) * L::kAStage + wm * S::kWarpM * L::kLdA;
    const TIn* bs = Bs + (s % kStages) * L::kBStage + wn * S::kWarpN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += Ops::kFragK) {
      typename Ops::A a[S::kFragsM];
      typename Ops::B b[S::kFragsN];
#pragma unroll
      for (int i = 0; i < S::kFragsM; ++i) {
        wmma::load_matrix_sync(a[i], as + i * 16 * L::kLdA + kk, L::kLdA);
        Ops::round(a[i]);
      }
#pragma unroll
      for (int j = 0; j < S::kFragsN; ++j) {
        wmma::load_matrix_sync(b[j], bs + kk * L::kLdB + j * 16, L::kLdB);
        Ops::round(b[j]);
      }
#pragma unroll
      for (int i = 0; i < S::kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < S::kFragsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }
  cp_async_wait<0>();

  // Epilogue, one fragment at a time through this warp's staging area: lane -> row lane / 2, 8 columns.
  TOut* __restrict__ C = static_cast<TOut*>(p.c);
  const TOut* __restrict__ R = static_cast<const TOut*>(p.residual);
  float* stage = staging + warp * 16 * kStageLd;
  const int row = lane / 2, col0 = (lane % 2) * 8;
#pragma unroll
  for (int i = 0; i < S::kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < S::kFragsN; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], kStageLd, wmma::mem_row_major);
      __syncwarp();
      const int gm = m0 + wm * S::kWarpM + i * 16 + row;
      const int gn = n0 + wn * S::kWarpN + j * 16 + col0;
      if (gm < M && gn < N) {
        float v[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) v[q] = stage[row * kStageLd + col0 + q];
        if (kCluster && split) {  // the tile's partial sums stay in this block's shared memory
          store_floats<float, 8>(tile_sums + (gm - m0) * BN + (gn - n0), v);
        } else if (split) {  // raw partial sums, row stride N; splitk_reduce_tc_kernel applies the epilogue
          float* part = p.workspace + (static_cast<int64_t>(blockIdx.z) * M + gm) * N + gn;
          if (kVec && gn + 8 <= N) {
            store_floats<float, 8>(part, v);
          } else {
            for (int q = 0; q < 8 && gn + q < N; ++q) part[q] = v[q];
          }
        } else {
          TOut* out = C + static_cast<int64_t>(gm) * p.ldc + gn;
          const TOut* res = R != nullptr ? R + static_cast<int64_t>(gm) * p.ldr + gn : nullptr;
          if (kVec && gn + 8 <= N) {
            epilogue_store<TOut, 8>(out, v, p.bias != nullptr ? p.bias + gn : nullptr, p.clip, res);
          } else {
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              if (gn + q >= N) break;
              float one[1] = {v[q]};
              epilogue_store<TOut, 1>(out + q, one, p.bias != nullptr ? p.bias + gn + q : nullptr, p.clip,
                                      res != nullptr ? res + q : nullptr);
            }
          }
        }
      }
      __syncwarp();
    }
  }
}

// The separate split-K pass's work on kW consecutive columns (m, n): every split's partials added in split order
// (deterministic), then bias, clip, residual, conversion.
template <class TOut, int kW>
__device__ __forceinline__ void splitk_finish_tc(const TcGemmParams& p, int splits, int64_t m, int n) {
  const int64_t matrix = static_cast<int64_t>(p.m) * p.n;
  float acc[kW];
  load_floats<float, kW>(p.workspace + m * p.n + n, acc);
  for (int z = 1; z < splits; ++z) {
    float part[kW];
    load_floats<float, kW>(p.workspace + z * matrix + m * p.n + n, part);
#pragma unroll
    for (int j = 0; j < kW; ++j) acc[j] += part[j];
  }
  const TOut* res = p.residual != nullptr ? static_cast<const TOut*>(p.residual) + m * p.ldr + n : nullptr;
  epilogue_store<TOut, kW>(static_cast<TOut*>(p.c) + m * p.ldc + n, acc, p.bias != nullptr ? p.bias + n : nullptr,
                           p.clip, res);
}

// The in-kernel reduction's part for kW-column groups: every group of this thread in flight at once, split by
// split (the loads of one split overlap), each group's partials added in split order as the separate pass does.
template <class TOut, class S, int kW>
__device__ __forceinline__ void splitk_reduce_tc_groups(const TcGemmParams& p, int m0, int n0) {
  constexpr int kCols = S::kBN / kW;
  constexpr int kGroups = (S::kBM * kCols + S::kThreads - 1) / S::kThreads;
  const int64_t matrix = static_cast<int64_t>(p.m) * p.n;
  const int splits = static_cast<int>(gridDim.z);
  auto load = [](const float* at, float(&v)[kW]) {  // through L2: other blocks of this kernel wrote them
    if constexpr (kW % 4 == 0) {
#pragma unroll
      for (int c = 0; c < kW / 4; ++c) {
        const float4 q = __ldcg(reinterpret_cast<const float4*>(at) + c);
        v[c * 4 + 0] = q.x;
        v[c * 4 + 1] = q.y;
        v[c * 4 + 2] = q.z;
        v[c * 4 + 3] = q.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < kW; ++j) v[j] = __ldcg(at + j);
    }
  };
  int64_t row[kGroups];
  int col[kGroups];
  bool inside[kGroups];
  float acc[kGroups][kW];
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const int e = threadIdx.x + g * S::kThreads;
    row[g] = m0 + e / kCols;
    col[g] = n0 + (e % kCols) * kW;
    inside[g] = e < S::kBM * kCols && row[g] < p.m && col[g] < p.n;
    if (inside[g]) load(p.workspace + row[g] * p.n + col[g], acc[g]);
  }
  // kBatch splits' loads in flight before any is added (about 64 floats per thread; gemm.cu does the same).
  constexpr int kBatch = 64 / (kGroups * kW) > 1 ? 64 / (kGroups * kW) : 1;
  for (int z0 = 1; z0 < splits; z0 += kBatch) {
    float part[kBatch][kGroups][kW];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
        if (inside[g] && z0 + u < splits) load(p.workspace + (z0 + u) * matrix + row[g] * p.n + col[g], part[u][g]);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
        if (inside[g] && z0 + u < splits)
#pragma unroll
          for (int j = 0; j < kW; ++j) acc[g][j] += part[u][g][j];
  }
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    if (!inside[g]) continue;
    const TOut* res = p.residual != nullptr ? static_cast<const TOut*>(p.residual) + row[g] * p.ldr + col[g] : nullptr;
    epilogue_store<TOut, kW>(static_cast<TOut*>(p.c) + row[g] * p.ldc + col[g], acc[g],
                             p.bias != nullptr ? p.bias + col[g] : nullptr, p.clip, res);
  }
}

// In-kernel split-K (gemm.cu's splitk_reduce_in_kernel): the tile's last block to count itself in adds every
// split's partials, stores C and resets the tile's counter to zero.
template <class TOut, class S, bool kVec>
__device__ __forceinline__ void splitk_reduce_tc_in_kernel(const TcGemmParams& p) {
  if (!splitk_arrive_last(p.tile_counters + blockIdx.x, gridDim.z)) return;
  const int n_tiles = (p.n + S::kBN - 1) / S::kBN;
  const int m0 = static_cast<int>(blockIdx.x / n_tiles) * S::kBM;
  const int n0 = static_cast<int>(blockIdx.x % n_tiles) * S::kBN;
  if (kVec && p.n % 8 == 0) {  // the separate pass's "wide" form: 8 columns per group
    splitk_reduce_tc_groups<TOut, S, 8>(p, m0, n0);
  } else {
    splitk_reduce_tc_groups<TOut, S, 1>(p, m0, n0);
  }
  if (threadIdx.x == 0) p.tile_counters[blockIdx.x] = 0u;
}

// Split-K through a thread-block cluster's distributed shared memory (sm_90 and newer): the launch makes each
// output tile's splits one cluster (grid.z = cluster.z = splits), every block leaves its partial tile in its own
// shared memory, and after one cluster barrier the blocks share out the tile's kW-column groups: each adds every
// split's partials, read from the other blocks' shared memory, in split order (the separate pass's order, so the
// same bits) and applies the epilogue. A second barrier keeps every block's shared memory alive until the others
// have read it. No workspace, no counters, no second kernel.
template <class TOut, class S, int kW>
__device__ __forceinline__ void splitk_reduce_tc_cluster_groups(const TcGemmParams& p, float* tile_sums, int m0,
                                                                int n0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  constexpr int kCols = S::kBN / kW;
  for (int e = rank * S::kThreads + static_cast<int>(threadIdx.x); e < S::kBM * kCols; e += splits * S::kThreads) {
    const int r = e / kCols, c = (e % kCols) * kW;
    const int64_t gm = m0 + r;
    const int gn = n0 + c;
    if (gm >= p.m || gn >= p.n) continue;
    float acc[kW];
    load_floats<float, kW, true>(cluster.map_shared_rank(tile_sums, 0) + r * S::kBN + c, acc);
    for (int z = 1; z < splits; ++z) {
      float part[kW];
      load_floats<float, kW, true>(cluster.map_shared_rank(tile_sums, z) + r * S::kBN + c, part);
#pragma unroll
      for (int j = 0; j < kW; ++j) acc[j] += part[j];
    }
    const TOut* res = p.residual != nullptr ? static_cast<const TOut*>(p.residual) + gm * p.ldr + gn : nullptr;
    epilogue_store<TOut, kW>(static_cast<TOut*>(p.c) + gm * p.ldc + gn, acc, p.bias != nullptr ? p.bias + gn : nullptr,
                             p.clip, res);
  }
#endif
}
template <class TOut, class S, bool kVec>
__device__ __forceinline__ void splitk_reduce_tc_cluster(const TcGemmParams& p, float* tile_sums) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every split's partial tile is in its block's shared memory (release / acquire)
  const int n_tiles = (p.n + S::kBN - 1) / S::kBN;
  const int m0 = static_cast<int>(blockIdx.x / n_tiles) * S::kBM;
  const int n0 = static_cast<int>(blockIdx.x % n_tiles) * S::kBN;
  if (kVec && p.n % 8 == 0) {
    splitk_reduce_tc_cluster_groups<TOut, S, 8>(p, tile_sums, m0, n0);
  } else {
    splitk_reduce_tc_cluster_groups<TOut, S, 1>(p, tile_sums, m0, n0);
  }
  cluster.sync();  // no block exits (freeing its shared memory) while another still reads it
#endif
}

// The cluster variant's kernel: the GEMM body with its partial tile kept in shared memory (after the operand stages
// and the staging areas), then the cluster's reduction. Compiled for sm_90 and newer only; the host never
// launches it elsewhere (launch_shape checks the device, the planner the code).
template <class TIn, class TOut, class S, bool kVec>
__global__ void __launch_bounds__(S::kThreads) gemm_tc_cluster_kernel(const TcGemmParams p, const int k_chunk) {
  // PDL: gemm_tc_body waits for the previous kernel (which wrote A) once B's first slices are in flight.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  float* tile_sums = reinterpret_cast<float*>(smem + Smem<TIn, S>::kBytes);
  gemm_tc_body<TIn, TOut, S, kVec, true>(p, k_chunk, tile_sums);
  splitk_reduce_tc_cluster<TOut, S, kVec>(p, tile_sums);
#else
  __trap();
#endif
}

// kInKernel (a split-K launch whose tile's last block reduces) is a template parameter, not a test of
// p.tile_counters: the reduction's registers would otherwise be allocated in every GEMM kernel (measured with
// ptxas -v, CUDA 13.0, sm_90: median 72 -> 255 registers per thread and 12 kernels spilling, PERFORMANCE.md
// run 9c), which cost the large batches a quarter of their warps.
template <class TIn, class TOut, class S, bool kVec, bool kInKernel>
__global__ void __launch_bounds__(S::kThreads) gemm_tc_kernel(const TcGemmParams p, const int k_chunk) {
  // PDL: gemm_tc_body waits for the previous kernel (which wrote A) once B's first slices are in flight.
#ifndef MNV2_GEMM_TC_HAS_TF32
  if constexpr (std::is_same_v<TIn, float>) {
    __trap();  // never launched: the host refuses tf32 where the code is older than compute_80
  } else
#endif
  {
    gemm_tc_body<TIn, TOut, S, kVec>(p, k_chunk);
    if constexpr (kInKernel) splitk_reduce_tc_in_kernel<TOut, S, kVec>(p);
  }
}

// The separate split-K pass (CudaOptions::SplitK::separate): kW consecutive columns per thread.
template <class TOut, int kW>
__global__ void __launch_bounds__(kBlockThreads) splitk_reduce_tc_kernel(const TcGemmParams p, const int splits) {
  pdl_enter();
  const int groups = p.n / kW;
  const int64_t total = static_cast<int64_t>(p.m) * groups;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    splitk_finish_tc<TOut, kW>(p, splits, i / groups, static_cast<int>(i % groups) * kW);
}

int split_k_chunk(int k, int splits, int bk) { return static_cast<int>(ceil_div(ceil_div(k, splits), bk) * bk); }

// The cluster variant (TcGemmVariant::reduce_in_cluster): one cluster of `splits` blocks per output tile, each with
// its partial tile in shared memory after the kernel's own layout.
template <class TIn, class TOut, class S, bool kVec>
void launch_cluster(const TcGemmParams& p, int splits, int k_chunk, unsigned blocks, cudaStream_t stream) {
  using L = Smem<TIn, S>;
  auto* kernel = gemm_tc_cluster_kernel<TIn, TOut, S, kVec>;
  constexpr size_t kBytes = L::kBytes + sizeof(float) * S::kBM * S::kBN;
  static const cudaError_t opted =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes));
  MNV2_KERNEL_CALL("gemm_tc", opted);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks, 1, static_cast<unsigned>(splits));
  config.blockDim = dim3(S::kThreads);
  config.dynamicSmemBytes = kBytes;
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = static_cast<unsigned>(splits);
  config.attrs = &cluster;
  config.numAttrs = 1;
  MNV2_KERNEL_CALL("gemm_tc", cudaLaunchKernelEx(&config, kernel, p, k_chunk));
  MNV2_CHECK_LAUNCH("gemm_tc cluster");
}

template <class TIn, class TOut, class S, bool kVec>
void launch_shape(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream) {
  using L = Smem<TIn, S>;
  const int splits = v.splits;
  auto* separate = gemm_tc_kernel<TIn, TOut, S, kVec, false>;
  auto* reducing = gemm_tc_kernel<TIn, TOut, S, kVec, true>;
  // Above 48 KB a kernel must opt in; once per instantiation (the first launch comes before any graph capture
  // in the backend: its warm-up pass runs every step once).
  static const cudaError_t opted = [&] {
    const int bytes = static_cast<int>(L::kBytes);
    const cudaError_t e = cudaFuncSetAttribute(separate, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    return e != cudaSuccess ? e : cudaFuncSetAttribute(reducing, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  }();
  MNV2_KERNEL_CALL("gemm_tc", opted);
  const int64_t blocks = ceil_div(p.m, S::kBM) * ceil_div(p.n, S::kBN);
  if (blocks > INT_MAX) throw Error("gemm_tc: too many tiles for one launch");
  const int k_chunk = splits > 1 ? split_k_chunk(p.k, splits, L::kBK) : 0;
  if (splits > 1 && ceil_div(p.k, k_chunk) != splits)
    throw Error("gemm_tc: " + std::to_string(splits) + " splits of " + std::to_string(L::kBK) +
                "-deep slices do not fit k " + std::to_string(p.k) + " (a split would be empty)");
  if (splits > 1 && v.reduce_in_cluster)
    return launch_cluster<TIn, TOut, S, kVec>(p, splits, k_chunk, static_cast<unsigned>(blocks), stream);
  const bool in_kernel = splits > 1 && v.reduce_in_kernel;
  auto* kernel = in_kernel ? reducing : separate;
  kernel<<<dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(splits)), S::kThreads, L::kBytes, stream>>>(
      p, k_chunk);
  MNV2_CHECK_LAUNCH("gemm_tc");
  if (splits > 1 && !in_kernel) {
    const bool wide = kVec && p.n % 8 == 0;
    const int64_t items = static_cast<int64_t>(p.m) * (wide ? p.n / 8 : p.n);
    const auto grid = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(items, kBlockThreads), 1, 4096));
    if (wide) {
      splitk_reduce_tc_kernel<TOut, 8><<<grid, kBlockThreads, 0, stream>>>(p, splits);
    } else {
      splitk_reduce_tc_kernel<TOut, 1><<<grid, kBlockThreads, 0, stream>>>(p, splits);
    }
    MNV2_CHECK_LAUNCH("gemm_tc splitk_reduce");
  }
}

template <class TIn, class TOut, bool kVec>
void launch_types(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream) {
  switch (v.tile) {
    case TcTile::t128x128:
      return launch_shape<TIn, TOut, Shape128x128, kVec>(p, v, stream);
    case TcTile::t128x64:
      return launch_shape<TIn, TOut, Shape128x64, kVec>(p, v, stream);
    case TcTile::t64x64:
      return launch_shape<TIn, TOut, Shape64x64, kVec>(p, v, stream);
    case TcTile::t128x32:
      return launch_shape<TIn, TOut, Shape128x32, kVec>(p, v, stream);
    case TcTile::t32x32:
      return launch_shape<TIn, TOut, Shape32x32, kVec>(p, v, stream);
  }
  throw Error("gemm_tc: unknown tile " + std::to_string(static_cast<int>(v.tile)));
}

template <class TIn, class TOut>
void launch_vec(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream) {
  if (v.vec) return launch_types<TIn, TOut, true>(p, v, stream);
  return launch_types<TIn, TOut, false>(p, v, stream);
}

}  // namespace

// The architecture the current device's code was compiled for (probe_kernel_image), cached per device: asked
// on every TF32 and cluster launch, which may be once per layer per run.
static int code_arch() {
  constexpr int kDevices = 64;
  static std::atomic<int> cached[kDevices];  // 0: not asked yet
  int device = 0;
  MNV2_KERNEL_CALL("gemm_tc", cudaGetDevice(&device));
  if (device < 0 || device >= kDevices) device = kDevices - 1;
  int arch = cached[device].load(std::memory_order_relaxed);
  if (arch == 0) {
    KernelImage image;
    MNV2_KERNEL_CALL("gemm_tc", probe_kernel_image(&image));
    arch = image.ptx_version;
    cached[device].store(arch, std::memory_order_relaxed);
  }
  return arch;
}

// Thread-block clusters and distributed shared memory: code compiled for sm_90 or newer (which only such a device
// loads).
static bool cluster_launch_ok() { return code_arch() >= 90; }

bool gemm_tc_vec_ok(const TcGemmParams& p) {
  const int in_per = 16 / dtype_bytes(p.in_type), out_per = 16 / dtype_bytes(p.out_type);
  const bool dims = p.k % in_per == 0 && p.n % in_per == 0 && p.lda % in_per == 0 && p.ldb % in_per == 0 &&
                    p.ldc % out_per == 0 && (p.residual == nullptr || p.ldr % out_per == 0);
  const bool pointers = aligned16(p.a) && aligned16(p.b) && aligned16(p.c) &&
                        (p.residual == nullptr || aligned16(p.residual)) && (p.bias == nullptr || aligned16(p.bias));
  return dims && pointers;
}

// tiles.h's layout arithmetic is the kernel's own.
static_assert(gemm_tc_smem_bytes(TcTile::t128x128, DType::f16) == Smem<__half, Shape128x128>::kBytes);
static_assert(gemm_tc_smem_bytes(TcTile::t128x64, DType::f32) == Smem<float, Shape128x64>::kBytes);
static_assert(gemm_tc_smem_bytes(TcTile::t64x64, DType::f16) == Smem<__half, Shape64x64>::kBytes);
static_assert(gemm_tc_smem_bytes(TcTile::t128x32, DType::f32) == Smem<float, Shape128x32>::kBytes);
static_assert(gemm_tc_smem_bytes(TcTile::t32x32, DType::f16) == Smem<__half, Shape32x32>::kBytes);
static_assert(kStages == kTcStages && kSliceBytes == kTcSliceBytes && kStageLd == kTcStageLd);

TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, int num_sms, const TcTile* only_tile, bool allow_split) {
  DeviceCaps caps;
  caps.num_sms = num_sms;
  return choose_gemm_tc_variant(p, caps, only_tile, allow_split);
}

TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, const DeviceCaps& caps, const TcTile* only_tile,
                                     bool allow_split) {
  const TcGemmShape s{p.m, p.n, p.k, p.in_type, p.out_type, p.residual != nullptr, gemm_tc_vec_ok(p)};
  return choose_gemm_tc_variant(s, caps, only_tile, allow_split || p.workspace != nullptr);
}

int64_t gemm_tc_workspace_floats(const TcGemmParams& p, const TcGemmVariant& v) {
  return gemm_tc_workspace_floats(p.m, p.n, v);
}

void launch_gemm_tc(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream) {
  if (p.m < 1 || p.n < 1 || p.k < 1)
    throw Error("gemm_tc: sizes must be positive (m " + std::to_string(p.m) + ", n " + std::to_string(p.n) + ", k " +
                std::to_string(p.k) + ")");
  if (p.a == nullptr || p.b == nullptr || p.c == nullptr) throw Error("gemm_tc: null operand");
  if (p.lda < p.k || p.ldb < p.n || p.ldc < p.n || (p.residual != nullptr && p.ldr < p.n))
    throw Error("gemm_tc: a leading dimension is smaller than its row");
  if (p.c == p.a || p.c == p.b || (p.residual != nullptr && p.c == p.residual))
    throw Error("gemm_tc: the output must not alias an operand or the residual");
  if (v.splits < 1 || v.splits > 65535)
    throw Error("gemm_tc: split count " + std::to_string(v.splits) + " out of range");
  if (v.splits > 1 && !v.reduce_in_cluster && p.workspace == nullptr) throw Error("gemm_tc: split-K needs a workspace");
  if (v.splits > 1 && !v.reduce_in_cluster && !aligned16(p.workspace))
    throw Error("gemm_tc: the split-K workspace must be 16-byte aligned");
  if (v.splits > 1 && v.reduce_in_cluster && (v.reduce_in_kernel || v.splits > kClusterMaxSplits))
    throw Error("gemm_tc: the cluster split-K reduction takes 2.." + std::to_string(kClusterMaxSplits) +
                " splits (a portable cluster), not " + std::to_string(v.splits) +
                (v.reduce_in_kernel ? " in-kernel" : ""));
  if (v.splits > 1 && v.reduce_in_cluster && !cluster_launch_ok())
    throw Error("gemm_tc: the cluster split-K reduction needs thread-block clusters (sm_90 and code compiled for it)");
  if (v.splits > 1 && v.reduce_in_kernel && p.tile_counters == nullptr)
    throw Error("gemm_tc: the in-kernel split-K reduction needs tile counters");
  if (v.vec && !gemm_tc_vec_ok(p))
    throw Error(
        "gemm_tc: the vec variant needs k, n and leading dimensions in 16-byte multiples and 16-byte "
        "aligned operands");
  if (p.in_type == DType::f16) {
    if (p.out_type == DType::f16) return launch_vec<__half, __half>(p, v, stream);
    return launch_vec<__half, float>(p, v, stream);
  }
  if (const int arch = code_arch(); arch < 80)
    throw Error("gemm_tc: TF32 operands need kernels compiled for compute_80 or newer; this device runs compute_" +
                std::to_string(arch) + " code");
  if (p.out_type == DType::f32) return launch_vec<float, float>(p, v, stream);
  throw Error("gemm_tc: TF32 operands with a half output are not built (tf32 keeps float32 storage)");
}

}  // namespace mnv2::kernels
