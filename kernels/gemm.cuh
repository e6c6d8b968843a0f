// Tiled float32 GEMM on plain FFMA (no tensor cores, so no TF32 rounding): C = A * B with a fused
// epilogue (bias per row or per column, clip, residual add), batched over grid.z. It is the pointwise
// convolution of the fast path, the convolution of the baseline (after im2col) and the Linear layer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/common.cuh"

namespace mnv2::kernels {

enum class BiasMode {
  none,     // no bias
  per_row,  // bias[row]: NCHW convolutions (rows are output channels)
  per_col,  // bias[col]: NHWC convolutions and Linear (columns are output channels / features)
};

// Row-major operands; every stride counts floats. For each batch index z (grid.z) the operands start at
// base + (z / inner) * outer_stride + (z % inner) * inner_stride, which covers images x groups.
struct GemmParams {
  int m = 0;  // rows of A and C
  int n = 0;  // columns of B and C
  int k = 0;  // columns of A, rows of B
  const float* a = nullptr;
  int64_t lda = 0;  // floats between rows of A (>= k)
  const float* b = nullptr;
  int64_t ldb = 0;  // floats between rows of B (>= n)
  float* c = nullptr;
  int64_t ldc = 0;  // floats between rows of C (>= n)

  BiasMode bias_mode = BiasMode::none;
  const float* bias = nullptr;      // m or n values (see bias_mode), offset per batch by bias_inner_stride
  int64_t bias_inner_stride = 0;    // floats between the biases of consecutive inner batch indices (groups)
  Clip clip;                        // applied to A*B + bias
  const float* residual = nullptr;  // added after the clip; laid out like C (ldr, C's batch strides); null: none
  int64_t ldr = 0;                  // floats between rows of the residual

  float* workspace = nullptr;  // split-K partial sums, gemm_workspace_floats() floats; only split variants use it
  // In-kernel split-K (GemmVariant::reduce_in_kernel): one arrival counter per output tile (gemm_tile_count()),
  // zero before the launch and zero again after it (the last block of each tile resets its counter), so one
  // array serves every split GEMM of a stream and every replay of a graph.
  unsigned* tile_counters = nullptr;
  // A or B is written by no kernel that may still be running when this one starts (weights, uploaded before the
  // stream's work: A in NCHW, B in NHWC): under PDL its first slice is loaded before the wait for the previous
  // kernel (common.cuh pdl_wait), the other operand's after it. false: after the wait.
  bool a_before_wait = false;
  bool b_before_wait = false;

  int batch = 1;                                   // GEMMs in the launch (grid.z), at most 65535
  int inner = 1;                                   // inner batch count (groups); the outer index is z / inner
  int64_t a_outer_stride = 0, a_inner_stride = 0;  // floats
  int64_t b_outer_stride = 0, b_inner_stride = 0;
  int64_t c_outer_stride = 0, c_inner_stride = 0;
};

// Whether the operands allow 16-byte accesses (see GemmVariant::vec4).
bool gemm_vec4_ok(const GemmParams& p);

// tiles.h's chooser for these operands (vec4 whenever gemm_vec4_ok), on a device of num_sms multiprocessors
// with the H200's other figures.
GemmVariant choose_gemm_variant(const GemmParams& p, int num_sms, bool allow_split = false,
                                const GemmTile* only_tile = nullptr);

// Floats of workspace the variant needs (0 without split-K).
int64_t gemm_workspace_floats(const GemmParams& p, const GemmVariant& v);

// Throws mnv2::Error for bad parameters (sizes, strides, a vec4 variant the operands do not allow) and
// when the launch fails.
void launch_gemm(const GemmParams& p, const GemmVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
