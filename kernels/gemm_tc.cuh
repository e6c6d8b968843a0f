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
};

// Block tile (rows x columns of C per block); every tile has 4 warps but 128x128 (8), each warp owning a
// 16x16-fragment grid of the tile. The k slice is 64 bytes of operand per row (32 halves, 16 floats),
// three slices in flight (cp.async).
enum class TcTile {
  t128x128,  // large M and N (expansions to 576..1280 channels at large batches)
  t128x64,
  t64x64,
  t128x32,  // few output channels (16..32) over many pixels
  t32x32,   // small problems (7x7 maps at batch 1): the most blocks
};

struct TcGemmVariant {
  TcTile tile = TcTile::t64x64;
  // 16-byte cp.async copies of the operands and 16-byte epilogue accesses: needs k, n and every leading
  // dimension a multiple of 16 bytes' worth of elements and 16-byte aligned pointers (gemm_tc_vec_ok); else
  // element-wise loads and stores (any shape).
  bool vec = false;
  // Split-K: the k range cut into `splits` whole-slice pieces computed by separate blocks (grid.z), each
  // writing float32 partial sums to the workspace; a second kernel adds them in split order (deterministic)
  // and applies the epilogue. For small M (7x7 maps at batch 1, the classifier), where a single pass has too
  // few blocks and too long a k loop.
  int splits = 1;
};

bool gemm_tc_vec_ok(const TcGemmParams& p);

// The tile and split by a cost model (waves of blocks x k slices against the tile's efficiency, plus the
// reduction pass of a split); vec whenever allowed. Split variants only where p.workspace is set or
// allow_split (the caller provides one later). only_tile restricts the choice to one tile. Tiles whose shared
// memory exceeds caps.smem_per_block_optin are never chosen (an only_tile that does not fit throws Error); the
// resident blocks per multiprocessor and the bandwidth follow `caps`. The num_sms form assumes the H200's caps.
TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, const DeviceCaps& caps, const TcTile* only_tile = nullptr,
                                     bool allow_split = false);
TcGemmVariant choose_gemm_tc_variant(const TcGemmParams& p, int num_sms, const TcTile* only_tile = nullptr,
                                     bool allow_split = false);
// Dynamic shared memory of one block of `tile` with operands of `in_type`, bytes.
int64_t gemm_tc_smem_bytes(TcTile tile, DType in_type);

// Floats of workspace the variant needs (0 without split-K).
int64_t gemm_tc_workspace_floats(const TcGemmParams& p, const TcGemmVariant& v);

// "gemm tc-fp16 128x64 vec" / "gemm tc-tf32 32x32 scalar" / "gemm tc-fp16 32x32 vec splitk6"
std::string to_string(const TcGemmVariant& v, DType in_type);
const char* to_string(TcTile tile);
bool parse_tc_tile(const std::string& text, TcTile* tile);  // "128x64" -> TcTile::t128x64

// Throws mnv2::Error for bad parameters and when the launch fails.
void launch_gemm_tc(const TcGemmParams& p, const TcGemmVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
