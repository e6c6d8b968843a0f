// Tensor-core GEMM for the reduced precisions: C = A * B with the fused epilogue (bias per column, clip,
// residual add), float32 accumulation. Operands are either float32 rounded to TF32 on the way into the
// tensor cores (cvt.rna, 10-bit mantissa) or half; C and the residual are float32 or half. It is the pointwise
// convolution (NHWC: pixels x in_channels times in_channels x out_channels) and the Linear layer of the cuda
// backend's tf32 and fp16 modes; fp32 keeps the strict FFMA GEMM of gemm.cuh.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// Row-major single GEMM; every leading dimension counts elements of its operand's type.
struct TcGemmParams {
  int m = 0;                       // rows of A and C (pixels, or images for the Linear layer)
  int n = 0;                       // columns of B and C (output channels or features)
  int k = 0;                       // columns of A, rows of B
  DType in_type = DType::f32;      // A and B: f32 runs TF32 tensor cores (each operand rounded with cvt.rna), f16 half
  DType out_type = DType::f32;     // C and the residual
  const void* a = nullptr;         // [m, k]
  int64_t lda = 0;                 // elements between rows of A (>= k)
  const void* b = nullptr;         // [k, n]
  int64_t ldb = 0;                 // elements between rows of B (>= n)
  void* c = nullptr;               // [m, n]; must not alias A, B or the residual
  int64_t ldc = 0;                 // elements between rows of C (>= n)
  const float* bias = nullptr;     // [n] float32, per column; null: none
  Clip clip;                       // applied to A*B + bias
  const void* residual = nullptr;  // [m, n] of out_type, added after the clip; null: none
  int64_t ldr = 0;                 // elements between rows of the residual
  float* workspace = nullptr;      // split-K partial sums, gemm_tc_workspace_floats(); null: no split variants
  unsigned* tile_counters = nullptr;  // in-kernel split-K: per output tile, zero before and after (gemm.cuh)
  // B is written by no kernel that may still be running when this one starts (weights, uploaded before the stream's
  // work): under PDL its first slices are loaded before the wait for the previous kernel (common.cuh pdl_wait), A's
  // after it. false: every operand after the wait.
  bool b_before_wait = false;
};

bool gemm_tc_vec_ok(const TcGemmParams& p);

// tiles.h's chooser for these operands (vec whenever gemm_tc_vec_ok; split variants only where p.workspace is
// set or allow_split). The num_sms form assumes the H200's other figures.
TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, const DeviceCaps& caps, const TcTile* only_tile = nullptr,
                                     bool allow_split = false);
TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, int num_sms, const TcTile* only_tile = nullptr,
                                     bool allow_split = false);

// Floats of workspace the variant needs (0 without split-K).
int64_t gemm_tc_workspace_floats(const TcGemmParams& p, const TcGemmVariant& v);

// Throws mnv2::Error for bad parameters and when the launch fails.
void launch_gemm_tc(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
