// The kernels' tuning choices as host-only plain C++ (no CUDA types): what a GPU offers the tile choosers
// (DeviceCaps), the variants each kernel is built in, and the cost models that pick them from a problem's
// shape. The launch headers (*.cuh) build on it; the engine's cuda planner, which has no CUDA, calls the same
// choosers, so a plan made without a GPU picks what the kernels would pick on that GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// The few functions kernels evaluate on the device too (shared-memory layouts): host and device code under nvcc,
// plain C++ elsewhere. Without it nvcc compiles a call from device code to a constexpr host function into
// nothing usable (warning 20013: the fused kernel then read garbage offsets).
#if defined(__CUDACC__)
#define MNV2_HOST_DEVICE __host__ __device__
#else
#define MNV2_HOST_DEVICE
#endif

namespace mnv2::kernels {

// Element type of an activation buffer in device memory. Weights of the direct and depthwise convolutions and
// every bias stay float32; arithmetic is float32 (FFMA, or tensor cores with float32 accumulation) throughout.
enum class DType {
  f32,  // float
  f16,  // IEEE half (__half): half the bytes; converted to float32 on load, rounded to nearest on store
};

inline constexpr int dtype_bytes(DType t) { return t == DType::f16 ? 2 : 4; }
inline const char* to_string(DType t) { return t == DType::f16 ? "f16" : "f32"; }

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

enum class Layout {
  nchw,  // [batch, channels, height, width]
  nhwc,  // [batch, height, width, channels]
};

// What the tile choosers need to know of a GPU. The defaults describe the H200 the cost models were fitted on
// (run 6 of docs/PERFORMANCE.md); the engine derives it from its one GPU description (a real device's or a
// preset's), so a tile that does not fit a smaller GPU's shared memory or registers is never chosen there and the
// occupancy and bandwidth terms follow the device.
struct DeviceCaps {
  int num_sms = 132;
  int smem_per_block_optin = 227 * 1024;  // bytes of dynamic shared memory a block may opt in to
  int smem_per_sm = 228 * 1024;           // bytes per multiprocessor, shared by its resident blocks
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;             // resident blocks per multiprocessor, whatever their size
  int regs_per_sm = 64 * 1024;            // 32-bit registers per multiprocessor
  double dram_bytes_per_sm_cycle = 16.0;  // achievable DRAM bytes per multiprocessor per SM clock cycle
};

// 85% of the peak from the memory clock (kHz, double data rate) and bus width: what a large copy reached on
// the H200 (4.2 of 4.9 TB/s), per multiprocessor and SM clock cycle (kHz).
double dram_bytes_per_sm_cycle(double memory_clock_khz, double bus_width_bits, double sm_clock_khz, int num_sms);

// ---- the FFMA GEMM (gemm.cuh) ----------------------------------------------------------------------------

// Block tile (rows x columns of C per block). Larger tiles reuse each loaded value more (more FFMA per
// shared-memory read) but give fewer blocks: the choice trades arithmetic efficiency against filling the
// multiprocessors.
enum class GemmTile {
  t128x128,   // 256 threads, 8x8 outputs each: the most reuse, for large M and N
  t128x64,    // 256 threads, 8x4 each
  t64x64,     // 256 threads, 4x4 each
  t128x32,    // 128 threads, 8x4 each: few output channels (16..32) over many pixels
  t32x32,     // 64 threads, 4x4 each: small problems (7x7 maps at batch 1), many blocks
  t32x32k32,  // as t32x32 with 32-deep k slices: a quarter of the (latency-bound) slices
  // Warp-tiled (gemm.cu's gemm_warp_kernel): 8x8 outputs a thread, each warp 64x32, 16-deep slices, at most 128
  // registers a thread (16 warps per multiprocessor). For large M: the FFMA-bound expansions and projections.
  t128x128w,  // 256 threads
  t128x96w,   // 192 threads: output channels in multiples of 96 (96..960) without padding
  t128x64w,   // 128 threads
  t128x32w,   // 64 threads: few output channels
};

struct GemmVariant {
  GemmTile tile = GemmTile::t64x64;
  bool vec4 = false;  // 16-byte loads and stores: needs k, n, every leading dimension and batch stride a
                      // multiple of 4 and 16-byte aligned pointers (gemm_vec4_ok); else scalar accesses
  // Split-K: the k range is cut into `splits` pieces computed by separate blocks (grid.z), each writing its
  // partial sums to the workspace; a second kernel adds them in a fixed order (deterministic) and applies
  // the epilogue. Gives small-M problems (7x7 maps at batch 1, the classifier) enough blocks, and each
  // block a short k loop. Single GEMMs only (batch 1).
  int splits = 1;
  // With splits: the last block to finish each output tile adds the pieces (in split order, as the separate
  // kernel does: the same bits) and applies the epilogue, counted by GemmParams::tile_counters; no second launch.
  bool reduce_in_kernel = false;
};

// What the FFMA GEMM's cost model reads of a problem.
struct GemmShape {
  int m = 0, n = 0, k = 0;
  int batch = 1;      // GEMMs in one launch
  bool vec4 = false;  // whether the operands allow 16-byte accesses (gemm_vec4_ok)
};

// Resident blocks of `tile` per multiprocessor: registers (ptxas' counts for sm_90, vec4), threads, block
// count and shared memory of the device.
int gemm_blocks_per_sm(GemmTile tile, const DeviceCaps& caps);

// Picks the tile and the split by a cost model: the larger of arithmetic time (FFMA over the multiprocessors,
// scaled by each tile's efficiency) and latency time (waves of blocks x k slices per block x (the latency of
// one slice + the FFMA of the blocks sharing a multiprocessor)), plus the reduction pass of a split.
// allow_split: whether the caller can provide a workspace (batch-1 GEMMs only). only_tile: restricts the
// choice to one tile.
GemmVariant choose_gemm_variant(const GemmShape& s, const DeviceCaps& caps, bool allow_split = false,
                                const GemmTile* only_tile = nullptr);

// Floats of split-K workspace the variant needs for an m x n result (0 without split-K).
inline int64_t gemm_workspace_floats(int m, int n, const GemmVariant& v) {
  return v.splits > 1 ? static_cast<int64_t>(v.splits) * m * n : 0;
}
// Output tiles of an m x n result with this tile: the arrival counters an in-kernel split-K reduction needs.
int64_t gemm_tile_count(int m, int n, GemmTile tile);

// "gemm 128x64 vec4", "gemm 64x64 vec4 splitk16"
std::string to_string(const GemmVariant& v);
const char* to_string(GemmTile tile);
// Parses the names to_string(GemmTile) gives ("128x64"); returns false for anything else.
bool parse_gemm_tile(const std::string& text, GemmTile* tile);

// ---- the tensor-core GEMM (gemm_tc.cuh) ------------------------------------------------------------------

// Block tile (rows x columns of C per block); every tile has 4 warps but 128x128 (8), each warp owning a
// 16x16-fragment grid of the tile. The k slice is 64 bytes of operand per row (32 halves, 16 floats),
// three slices in flight (cp.async from compute_80 on; before it the stages only double-buffer).
enum class TcTile {
  t128x128,  // large M and N (expansions to 576..1280 channels at large batches)
  t128x64,
  t64x64,
  t128x32,  // few output channels (16..32) over many pixels
  t32x32,   // small problems (7x7 maps at batch 1): the most blocks
};

struct TcGemmVariant {
  TcTile tile = TcTile::t64x64;
  // 16-byte copies of the operands and 16-byte epilogue accesses: needs k, n and every leading dimension a
  // multiple of 16 bytes' worth of elements and 16-byte aligned pointers (gemm_tc_vec_ok); else element-wise
  // loads and stores (any shape).
  bool vec = false;
  // Split-K: the k range cut into `splits` whole-slice pieces computed by separate blocks (grid.z), each
  // writing float32 partial sums to the workspace; a second kernel adds them in split order (deterministic)
  // and applies the epilogue. For small M (7x7 maps at batch 1, the classifier), where a single pass has too
  // few blocks and too long a k loop.
  int splits = 1;
  bool reduce_in_kernel = false;  // as GemmVariant::reduce_in_kernel (TcGemmParams::tile_counters)
  // With splits (2..kClusterMaxSplits): each output tile's splits run as one thread-block cluster and add their
  // partials through distributed shared memory, in split order (the same bits), applying the epilogue; no
  // workspace, no second kernel. sm_90 and code compiled for it.
  bool reduce_in_cluster = false;
};
// The most splits a cluster reduction takes: the portable cluster size (every sm_90 GPU schedules it).
inline constexpr int kClusterMaxSplits = 8;

// What the tensor-core GEMM's cost model reads of a problem.
struct TcGemmShape {
  int m = 0, n = 0, k = 0;
  DType in_type = DType::f32;  // f32: TF32 operands; f16: half
  DType out_type = DType::f32;
  bool residual = false;  // the epilogue reads a residual of out_type
  bool vec = false;       // whether the operands allow 16-byte accesses (gemm_tc_vec_ok)
};

inline constexpr int kTcStages = 3;       // k slices in flight
inline constexpr int kTcSliceBytes = 64;  // bytes of one operand row per k slice
inline constexpr int kTcStageLd = 20;     // floats per row of a warp's 16x16 epilogue staging area

// Dynamic shared memory of one block of `tile` with operands of `in_type`, bytes: kTcStages slices of A
// (rows padded by 16 bytes) and B, then each warp's float staging area. gemm_tc.cu checks it against the
// kernel's own layout at compile time.
constexpr int64_t gemm_tc_smem_bytes(TcTile tile, DType in_type) {
  const int bytes = dtype_bytes(in_type);
  const int bk = kTcSliceBytes / bytes, pad = 16 / bytes;
  const int bm = tile == TcTile::t32x32 ? 32 : tile == TcTile::t64x64 ? 64 : 128;
  const int bn = tile == TcTile::t128x128 ? 128 : tile == TcTile::t128x32 || tile == TcTile::t32x32 ? 32 : 64;
  const int warps = tile == TcTile::t128x128 ? 8 : 4;
  const int64_t operands = int64_t{kTcStages} * (bm * (bk + pad) + bk * (bn + pad)) * bytes;
  return operands + int64_t{warps} * 16 * kTcStageLd * 4;
}

// The tile and split by a cost model (waves of blocks x k slices against the tile's efficiency, plus the
// reduction pass of a split). Split variants only where allow_split (the caller provides a workspace).
// only_tile restricts the choice to one tile. Tiles whose shared memory exceeds caps.smem_per_block_optin are
// never chosen (an only_tile that does not fit throws Error); the resident blocks per multiprocessor and the
// bandwidth follow `caps`.
// max_splits caps the split (kClusterMaxSplits for the cluster reduction); 0: the model's own limit.
TcGemmVariant choose_gemm_tc_variant(const TcGemmShape& s, const DeviceCaps& caps, const TcTile* only_tile = nullptr,
                                     bool allow_split = false, int max_splits = 0);

inline int64_t gemm_tc_workspace_floats(int m, int n, const TcGemmVariant& v) {
  return v.splits > 1 ? static_cast<int64_t>(v.splits) * m * n : 0;
}
int64_t gemm_tc_tile_count(int m, int n, TcTile tile);  // as gemm_tile_count

// "gemm tc-fp16 128x64 vec" / "gemm tc-tf32 32x32 scalar" / "gemm tc-fp16 32x32 vec splitk6" / "... splitk6 dsmem"
std::string to_string(const TcGemmVariant& v, DType in_type);
const char* to_string(TcTile tile);
bool parse_tc_tile(const std::string& text, TcTile* tile);  // "128x64" -> TcTile::t128x64

// ---- the depthwise 3x3 convolution (depthwise_conv.cuh) --------------------------------------------------

// Tuning: channels per thread (16-byte accesses: 4 floats or 8 halves, which need channels in multiples of
// that and 16-byte aligned operands; else one) and output columns per thread, which share their input columns in
// registers (3 + (cols - 1) * stride loads instead of 3 * cols). The column count needs a compile-time stride: 1 and 2
// have their own code, other strides run one column per thread.
struct DepthwiseVariant {
  int vec = 1;               // channels per thread: 4 (f32) or 8 (f16) in one 16-byte access, or 1
  int cols = 1;              // output columns per thread: 4 (stride 1), 2 (stride 2) or 1
  int stride = 0;            // compile-time stride the kernel was built for: 1, 2, or 0 (any, from the params)
  DType dtype = DType::f32;  // of input and output; arithmetic is float32 either way
};

struct DepthwiseShape {
  int batch = 0, channels = 0, out_h = 0, out_w = 0, stride_h = 1, stride_w = 1;
  DType dtype = DType::f32;
  bool aligned = true;  // every operand 16-byte aligned (cudaMalloc'd buffers are)
};

// num_sms: multiprocessors of the device (small problems get one column per thread, for more warps).
DepthwiseVariant choose_depthwise_variant(const DepthwiseShape& s, int num_sms);
std::string to_string(const DepthwiseVariant& v);  // "dw3x3 s1 vec4 cols4", "dw3x3 s1 half8 cols4"

// ---- the direct convolution (direct_conv.cuh) ------------------------------------------------------------

// Output channels per thread: 32, 16, 8 or 4 (float4 weight loads and output stores, one input value reused
// for all of them) where out_channels / groups is a multiple and the operands are 16-byte aligned; else 1.
struct DirectConvVariant {
  int co = 1;
  bool taps27 = false;  // 3x3 kernel over 3 input channels per group (the stem): loops unrolled, the 27
                        // input values loaded at once
};

struct DirectConvShape {
  int batch = 0, in_channels = 0, out_channels = 0, out_h = 0, out_w = 0, groups = 1, kernel_h = 0, kernel_w = 0;
  bool aligned = true;  // weight and output 16-byte aligned
};

// num_sms: multiprocessors of the device (small maps get fewer channels per thread, for more threads).
DirectConvVariant choose_direct_conv_variant(const DirectConvShape& s, int num_sms);
// "direct nchw co32 3x3x3", "direct nchw->half co32 3x3x3" (half output)
std::string to_string(const DirectConvVariant& v, Layout input_layout, DType dtype = DType::f32);

// ---- expansion 1x1 + depthwise 3x3 in one kernel (expand_depthwise.cuh) ----------------------------------

// A block computes a tile of tile_h x tile_w output pixels of one image for kExpandDwSlice expanded
// channels: it expands the tile's input window ((tile - 1) * stride + 3 pixels a side, the halo recomputed
// by neighbouring tiles) into shared memory, then runs the depthwise taps from there.
inline constexpr int kExpandDwSlice = 16;
// The most shared memory a block of the fused kernel takes, bytes, whatever the device allows.
inline constexpr int64_t kExpandDwMaxSmem = 96 * 1024;

struct ExpandDepthwiseVariant {
  int tile_h = 8, tile_w = 8;
};

struct ExpandDepthwiseShape {
  int in_channels = 0, expanded = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// Shared-memory layout of one block: offsets in floats, each a multiple of 4.
struct ExpandDepthwiseSmem {
  int window_h, window_w, window, in_ld;
  int in, we, eb, dw, db, ex, total;
};
MNV2_HOST_DEVICE inline constexpr ExpandDepthwiseSmem expand_depthwise_smem(int in_channels, int stride_h, int stride_w,
                                                                            int tile_h, int tile_w) {
  ExpandDepthwiseSmem l{};
  l.window_h = (tile_h - 1) * stride_h + 3;
  l.window_w = (tile_w - 1) * stride_w + 3;
  l.window = l.window_h * l.window_w;
  l.in_ld = in_channels | 1;  // odd row stride: threads reading different pixels' k-th value hit different banks
  l.in = 0;
  l.we = (l.window * l.in_ld + 3) & ~3;
  l.eb = l.we + in_channels * kExpandDwSlice;
  l.dw = l.eb + kExpandDwSlice;
  l.db = l.dw + 9 * kExpandDwSlice;
  l.ex = l.db + kExpandDwSlice;
  l.total = l.ex + l.window * kExpandDwSlice;
  return l;
}

// Shared memory one block needs (bytes).
int64_t expand_depthwise_smem_bytes(const ExpandDepthwiseShape& s, const ExpandDepthwiseVariant& v);

// The largest tile (8x8 and smaller, never larger than the output map) whose block fits max_smem (the device's
// opt-in limit per block, at most kExpandDwMaxSmem); "" in *why_not when one fits, else the reason (then the
// variant must not be launched).
ExpandDepthwiseVariant choose_expand_depthwise_variant(const ExpandDepthwiseShape& s, std::string* why_not,
                                                       int64_t max_smem = kExpandDwMaxSmem);

// Multiply-adds of the expansion actually computed (halo recomputation included) over the exact count:
// >= 1; what fusing costs in arithmetic.
double expand_depthwise_recompute_factor(const ExpandDepthwiseShape& s, const ExpandDepthwiseVariant& v);

std::string to_string(const ExpandDepthwiseVariant& v);  // "expand1x1+dw3x3 tile 8x8 slice 16"

// ---- the whole inverted-residual block in one kernel (fused_block.cuh), fp16 ---------------------------------

// A block of kFusedBlockThreads threads owns tile_h x tile_w output pixels of one image. It loads the tile's
// input window ((tile - 1) * stride + 3 pixels a side, the halo recomputed by neighbouring tiles) into shared
// memory once; the expanded channels then stream through shared memory kFusedBlockChunk at a time: expansion of
// the window on tensor cores (mma.sync m16n8k16, float32 accumulators) + bias + clip -> half, depthwise 3x3 +
// bias + clip -> half, projection on tensor cores into accumulators that stay in registers across all chunks;
// the projection's bias (and the residual, from the window already on chip) at the end.
inline constexpr int kFusedBlockChunk = 32;
inline constexpr int kFusedBlockThreads = 256;
inline constexpr int kFusedBlockWarps = kFusedBlockThreads / 32;
// Projection work items (16 output pixels x 32 output channels) per warp the kernel is built for.
inline constexpr int kFusedBlockMaxItems = 6;
// The most expansion work (halo recomputation included) over the exact count a tile may cost.
inline constexpr double kFusedBlockMaxRecompute = 2.0;

struct FusedBlockShape {
  int batch = 0, in_channels = 0, expanded = 0, out_channels = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int stride = 1, pad_top = 0, pad_left = 0;
  bool residual = false;
};

// The arithmetic of the 1x1 convolutions and the storage of the activations: f16, half activations and matrices,
// mma.sync m16n8k16; tf32, float32 activations, matrices and depthwise, mma.sync m16n8k8 on operands rounded to
// TF32 (cvt.rna: the matrices on the host, to_tf32; the input window and the depthwise output in the kernel).
enum class FusedBlockMath { f16, tf32 };
// Float32 values rounded to TF32 (10 mantissa bits; nearest, ties away from zero, as cvt.rna.tf32.f32; NaN and
// infinity unchanged), still stored as float32: the matrices the TF32 block kernel reads without rounding them.
std::vector<float> to_tf32(const std::vector<float>& values);

struct FusedBlockVariant {
  int tile_h = 0, tile_w = 0;
  int items = 0;  // projection items per warp the launch is built for: 2, 4 or 6 (kFusedBlockMaxItems)
  FusedBlockMath math = FusedBlockMath::f16;
  // Blocks a tile's expanded channels are split over (f16 only; 1 to the chunk count): each runs an even share of the
  // chunks and the last of them to finish sums their projections (FusedBlockParams::partials). More blocks for a
  // small map (batch 1) at the cost of the window's expansion weights read `splits` times over and the partials'
  // round trip through L2.
  int splits = 1;
};

// Shared-memory layout of one block (offsets in bytes, each a multiple of 16) and the padded sizes: the
// window's rows padded to 16 (m1), the tile's (m2), the input channels to 16 (k_pad), the expanded channels
// to the chunk (e_pad), the output channels to 32 (co_pad). Row strides (ld_*) are in elements.
//   f16: x, d (pitch ld_e), we and wp rows 16 bytes longer than the data, so the 8 rows an ldmatrix reads fall
//     into different banks. The expanded window (ex: never an ldmatrix operand, read 8 bytes at a time by the
//     depthwise) has its own pitch ld_ex: 40 halves for stride 1, 36 for stride 2, so that the two pixel groups of
//     a depthwise half warp (4 x stride window pixels apart) start 64 bytes apart modulo 128 and do not share
//     banks. dw holds a chunk's depthwise weights and bias in half: [9][chunk], then [chunk].
//   tf32: float32 everywhere. A lane reads its two A values of a row as one 8 bytes (x, d: the k index permuted,
//     fused_block_tf32.cu) and its B values 4 bytes each from rows 2 (l % 4) and 2 (l % 4) + 1: the A pitches
//     (x: k_pad + 8, d: chunk + 8) are 8 modulo 16 words, so a half warp's 4 rows x 8 words cover 32 banks; the B
//     pitches (we: chunk + 4, wp: co_pad + 4) 4 modulo 32, so rows 0, 2, 4, 6 x 8 columns do; ex (chunk + 8, written
//     8 bytes a lane from the accumulators) as A. dw in float32.
// eb: the expansion's bias in float32.
struct FusedBlockLayout {
  int window_h = 0, window_w = 0, m1 = 0, m2 = 0, k_pad = 0, e_pad = 0, co_pad = 0;
  int ld_x = 0, ld_e = 0, ld_p = 0, ld_ex = 0, ld_d = 0;
  int x = 0, ex = 0, d = 0, we = 0, wp = 0, dw = 0, eb = 0;      // we..eb: two buffers each
  int we_bytes = 0, wp_bytes = 0, dw_bytes = 0, bias_bytes = 0;  // one buffer's size
  int total = 0;
};
FusedBlockLayout fused_block_layout(const FusedBlockShape& s, int tile_h, int tile_w,
                                    FusedBlockMath math = FusedBlockMath::f16);

// Projection items (16 pixels x 32 channels) per warp for a tile: ceil(m2 / 16 * co_pad / 32 / warps).
int fused_block_items(const FusedBlockShape& s, int tile_h, int tile_w);

// Why this block cannot run fused ("" when it can): channel counts not multiples of 8 (16-byte accesses), a
// stride other than 1 or 2, a residual whose shapes differ, code compiled below compute_80 (mma.sync
// and cp.async), or no tile that fits the shared memory and the accumulators.
std::string fused_block_refusal(const FusedBlockShape& s, int code_arch, int smem_per_block_optin,
                                FusedBlockMath math = FusedBlockMath::f16);
// The same without the tile search (what every launch checks); code_arch 0: not checked.
std::string fused_block_shape_refusal(const FusedBlockShape& s, int code_arch);

// The tile by a cost model: per block the tensor-core multiply-adds (halo and padding included), the
// depthwise FFMA, the weights streamed from L2 and a fixed cost per chunk (barriers), times the waves of
// blocks the resident blocks per multiprocessor (shared memory, registers by items) give. Only tiles whose
// layout fits caps.smem_per_block_optin, whose items fit kFusedBlockMaxItems and whose halos cost at most
// kFusedBlockMaxRecompute. *why_not as
// fused_block_refusal (then the variant must not be launched).
// math: the variant's (tf32: the layouts are twice the size, the tensor cores half the rate).
FusedBlockVariant choose_fused_block_variant(const FusedBlockShape& s, const DeviceCaps& caps, int code_arch,
                                             std::string* why_not, FusedBlockMath math = FusedBlockMath::f16);
// Blocks of one launch (tiles x batch) and the expansion's multiply-adds computed over the exact count (>= 1).
// With v.splits > 1 each tile has that many blocks: fused_block_blocks counts the tiles (one arrival counter each).
int64_t fused_block_blocks(const FusedBlockShape& s, const FusedBlockVariant& v);
// Float32 values of FusedBlockParams::partials a split launch needs (0 for v.splits <= 1).
int64_t fused_block_partials_floats(const FusedBlockShape& s, const FusedBlockVariant& v);
double fused_block_recompute_factor(const FusedBlockShape& s, const FusedBlockVariant& v);

std::string to_string(const FusedBlockVariant& v);  // "block tile 8x8 chunk 32 items 2" (+ " tf32")

// ---- the whole inverted-residual block in one kernel, float32 FFMA (fused_block.cuh) -------------------------

// The fp32 twin of the block above, strict FFMA (no tensor cores, float32 everywhere): the same tile ownership and
// chunk loop, float32 NHWC activations, the 1x1 convolutions as register-tiled FFMA from shared memory. Threads
// split each phase as:
//   expansion:  4 window pixels x 4 expanded channels per thread and pass of 128 pixels (kFusedBlockFfmaPassPixels);
//   depthwise:  4 output pixels of a row x 4 channels per item;
//   projection: px output pixels x 4 nc output channels per thread, accumulated in registers across every chunk.
inline constexpr int kFusedBlockFfmaChunk = 32;
inline constexpr int kFusedBlockFfmaThreads = 256;
inline constexpr int kFusedBlockFfmaPassPixels = 128;
// Window pixels a tile may have: passes' halo masks fill one 32-bit register (4 bits a pass).
inline constexpr int kFusedBlockFfmaMaxWindow = 8 * kFusedBlockFfmaPassPixels;

struct FusedBlockFfmaVariant {
  int tile_h = 0, tile_w = 0;
  int px = 0, nc = 0;  // the projection's micro-tile: px pixels x 4 nc channels per thread (fused_block_ffma_tiles)
};
struct FusedBlockFfmaTile {
  int px, nc;
};
// The projection micro-tiles the kernel is built for, fewest accumulators first.
inline constexpr FusedBlockFfmaTile kFusedBlockFfmaTiles[] = {{2, 1}, {4, 1}, {2, 2}, {4, 2}, {2, 4}, {4, 4}, {2, 8}};

// Shared-memory layout (offsets and sizes in bytes, multiples of 16; pitches in floats): the input window
// (m1 = window pixels, k_pad = input channels rounded to 4, pitch ld_x = an odd multiple of 4 floats so that the 4
// consecutive pixels a warp's expansion reads fall into different banks), the expanded window (pitch the chunk),
// the depthwise output (pout = tile pixels, pitch ld_d = chunk + 4), and two buffers each of the chunk's expansion
// weights [k_pad][chunk], projection weights [chunk][co_pad] (co_pad = output channels rounded to 4) and its
// vectors (expansion bias, depthwise weights [9][chunk], depthwise bias).
struct FusedBlockFfmaLayout {
  int window_h = 0, window_w = 0, m1 = 0, pout = 0, k_pad = 0, e_pad = 0, co_pad = 0;
  int ld_x = 0, ld_d = 0;
  int x = 0, ex = 0, d = 0, we = 0, wp = 0, vec = 0;  // we..vec: two buffers each
  int we_bytes = 0, wp_bytes = 0, vec_bytes = 0;      // one buffer's size
  int total = 0;
};
FusedBlockFfmaLayout fused_block_ffma_layout(const FusedBlockShape& s, int tile_h, int tile_w);
// Threads the projection of a tile needs with micro-tile px x 4 nc: ceil(pout / px) * ceil(co_pad / 4 / nc).
int fused_block_ffma_items(const FusedBlockShape& s, int tile_h, int tile_w, int px, int nc);

// Why this block cannot run fused in float32 ("" when it can): channel counts not multiples of 4 (16-byte
// accesses), a stride other than 1 or 2, a residual whose shapes differ. Runs on every architecture.
std::string fused_block_ffma_shape_refusal(const FusedBlockShape& s);
// The tile and micro-tile by a cost model (FFMA per thread and chunk, times the waves of resident blocks, plus
// a fixed cost per chunk); only variants that fit the shared memory, kFusedBlockFfmaThreads and
// kFusedBlockFfmaMaxWindow. *why_not as fused_block_ffma_shape_refusal, or why no tile fits.
FusedBlockFfmaVariant choose_fused_block_ffma_variant(const FusedBlockShape& s, const DeviceCaps& caps,
                                                      std::string* why_not);
// Why a variant cannot run ("" when it can): not a built micro-tile, too many threads, a window too large, more
// shared memory than smem_per_block_optin.
std::string fused_block_ffma_variant_refusal(const FusedBlockShape& s, const FusedBlockFfmaVariant& v,
                                             int smem_per_block_optin);
int64_t fused_block_ffma_blocks(const FusedBlockShape& s, const FusedBlockFfmaVariant& v);
// The unfused block's arithmetic intensity in float32: its three layers' FLOPs over the bytes they move through
// memory (each reads its input and writes its output; weights left out). Where it exceeds
// kFusedBlockFfmaMaxIntensity the unfused FFMA GEMMs are bound by arithmetic, not memory, and beat the fused kernel
// (PERFORMANCE.md run 11, H200 batch 256: block 2 at 4.4 FLOP/B 1230 us fused against 1379 unfused; block 3 at
// 6.3 6% faster fused, block 4 at 6.3 5% slower, every later block (8 to 54 FLOP/B) 1.2x to 2.2x slower).
inline constexpr double kFusedBlockFfmaMaxIntensity = 5.0;
// The same rule for the TF32 kernel (FusedBlockMath::tf32) against the unfused TF32 tensor-core GEMMs (PERFORMANCE.md
// run 12, H200 batch 256, every block fused: blocks 2-6 at 4.4-8.1 FLOP/B 7-22% faster fused, block 7 at 9.1 3%
// slower, blocks 8-10, 12-17 at 15-54 FLOP/B 8-56% slower; block 11 at 19.1 14% faster, the one exception).
inline constexpr double kFusedBlockTf32MaxIntensity = 8.5;
double fused_block_unfused_intensity(const FusedBlockShape& s);
// The expansion's multiply-adds for the window pixels inside the map over the exact count (>= 1), as
// fused_block_recompute_factor.
double fused_block_ffma_recompute_factor(const FusedBlockShape& s, const FusedBlockFfmaVariant& v);

std::string to_string(const FusedBlockFfmaVariant& v);  // "block ffma tile 8x8 chunk 32 projection 2x4"

// ---- the stem and the first block in one kernel (fused_stem.cuh), fp16 or fp32 storage -----------------------

// The network's first layers, conv 3x3 over the 3-channel NCHW float32 input (stride 2) + bias + clip, depthwise
// 3x3 stride 1 + bias + clip, projection 1x1 + bias, as one kernel: a block of kFusedStemThreads threads owns
// tile_h x kFusedStemTileW output pixels of one image, computes the stem over the tile's window (the halo
// recomputed by neighbouring tiles) into shared memory, the depthwise from there into shared memory, the
// projection into a staging tile stored with 16-byte accesses; the weights are staged in shared memory once per
// block; the stem's and depthwise's maps never leave the chip. Built for the channel pairs of MobileNetV2's widths
// (kFusedStemChannels).
inline constexpr int kFusedStemThreads = 256;
inline constexpr int kFusedStemTileW = 16;
struct FusedStemChannels {
  int stem, out;  // the stem's (= the depthwise's) output channels, the projection's
};
inline constexpr FusedStemChannels kFusedStemChannels[] = {{32, 16}, {16, 8}, {24, 16}, {48, 24}};

struct FusedStemShape {
  int batch = 0;
  int in_h = 0, in_w = 0;      // the network input (3 channels, NCHW float32)
  int stem_channels = 0;       // stem output channels (and the depthwise's)
  int out_channels = 0;        // the projection's
  int stem_h = 0, stem_w = 0;  // the stem's output map
  int stem_stride = 2;         // the stem's stride (both axes)
  int stem_pad_top = 0, stem_pad_left = 0;
  int out_h = 0, out_w = 0;  // the depthwise's (= the output's) map; depthwise stride 1
  int dw_pad_top = 0, dw_pad_left = 0;
  DType dtype = DType::f16;  // of the output (and of the on-chip maps)
};

struct FusedStemVariant {
  int tile_h = 0;  // 8 or 16 output rows per block (kFusedStemTileW columns)
};

// The row pitch (floats) of the input window in shared memory: the window's columns stored even ones first, then
// odd ones (a stride-2 stem reads each at consecutive addresses), and the pitch chosen so that the next stem row
// of a warp's pixels (stride rows down) continues on the next bank: no bank conflicts.
MNV2_HOST_DEVICE constexpr int fused_stem_window_pitch(int stride) {
  const int width = (kFusedStemTileW + 1) * stride + 3;
  for (int p = width; p < width + 32; ++p)
    if ((stride * p) % 32 == (kFusedStemTileW + 2) % 32) return p;
  return width;
}

// The packed weights (fused_stem_pack, float32) as offsets in floats, each a multiple of 4 (16-byte loads): the stem
// tap-major [(kh * 3 + kw) * 3 + ci][c1], its bias [c1], the depthwise tap-major [kh * 3 + kw][c1], its bias [c1], the
// projection transposed [c1][c2], its bias [c2]; then the depthwise's weights and bias again as half values (two per
// float slot; the half kernel's depthwise runs in half2), [10][c1] halves.
struct FusedStemOffsets {
  int stem, stem_bias, dw, dw_bias, project, project_bias, dw_half, total;
};
MNV2_HOST_DEVICE constexpr FusedStemOffsets fused_stem_offsets(int c1, int c2) {
  const int stem_bias = 27 * c1, dw = stem_bias + c1, dw_bias = dw + 9 * c1, project = dw_bias + c1;
  const int project_bias = project + c1 * c2, dw_half = project_bias + c2;
  return FusedStemOffsets{0, stem_bias, dw, dw_bias, project, project_bias, dw_half, dw_half + 5 * c1};
}
// The same as compile-time constants of a kernel instantiation.
template <int C1, int C2>
struct FusedStemLayout {
  static constexpr FusedStemOffsets kO = fused_stem_offsets(C1, C2);
  static constexpr int kStem = kO.stem, kStemBias = kO.stem_bias, kDw = kO.dw, kDwBias = kO.dw_bias;
  static constexpr int kProject = kO.project, kProjectBias = kO.project_bias, kDwHalf = kO.dw_half;
  static constexpr int kTotal = kO.total;
  static_assert(C1 % 4 == 0 && C2 % 4 == 0, "every part starts on 16 bytes");
};

// Shared memory of one block in bytes (the weights and the input window float32, the stem's and the depthwise's
// maps in dtype).
int fused_stem_smem_bytes(const FusedStemShape& s, int tile_h);

// Why this stem cannot run fused ("" when it can): sizes not positive, channels other than kFusedStemChannels'
// pairs, a stem stride other than 2, a batch above the grid's 65535.
std::string fused_stem_refusal(const FusedStemShape& s);

// 16-row tiles unless they leave more than a third of the multiprocessors idle (batch 1: 49 blocks for a
// 112x112 map), then 8. *why_not as fused_stem_refusal.
FusedStemVariant choose_fused_stem_variant(const FusedStemShape& s, const DeviceCaps& caps, std::string* why_not);
int64_t fused_stem_blocks(const FusedStemShape& s, const FusedStemVariant& v);
// The stem's multiply-adds computed (halos recomputed) over the exact count (>= 1).
double fused_stem_recompute_factor(const FusedStemShape& s, const FusedStemVariant& v);

std::string to_string(const FusedStemVariant& v);  // "stem+block1 tile 16x16"

}  // namespace mnv2::kernels
