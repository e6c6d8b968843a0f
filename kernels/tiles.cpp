// The kernels' tile choosers and cost models (tiles.h): host-only, so the engine's cuda planner can run them
// without a GPU and the launch wrappers of the .cu files call the very same code.
#include "kernels/tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mnv2/error.h"

namespace mnv2::kernels {

double dram_bytes_per_sm_cycle(double memory_clock_khz, double bus_width_bits, double sm_clock_khz, int num_sms) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0 || sm_clock_khz <= 0 || num_sms <= 0)
    return DeviceCaps{}.dram_bytes_per_sm_cycle;
  return 0.85 * (2.0 * memory_clock_khz * bus_width_bits / 8.0) / (sm_clock_khz * num_sms);
}

// ---- FFMA GEMM --------------------------------------------------------------------------------------------

namespace {

int split_k_chunk(int k, int splits, int bk) { return static_cast<int>(ceil_div(ceil_div(k, splits), bk) * bk); }

struct GemmTileInfo {
  GemmTile tile;
  int bm, bn, bk;
  // Arithmetic efficiency relative to peak FFMA: FFMA per shared-memory load of the thread's register block
  // (8x8: 64 FFMA per 4 float4 loads; 4x4: 16 per 2), lowered where few warps share a multiprocessor.
  double efficiency;
  int threads;         // per block
  int registers;       // per thread, ptxas for sm_90 (vec4)
  int blocks_at_sm90;  // what registers allow on the H200 (65536 per SM), where the model was fitted
  int a_pad;           // floats of padding per row of A's transposed slice (the warp-tiled tiles swizzle instead)
  bool measured;       // whether its efficiency was fitted on a GPU (else a prediction, see kUnmeasuredMargin)
};

// The warp-tiled tiles' efficiencies were predictions (8x8 per thread as t128x128, but 16 warps per multiprocessor
// instead of 8 and conflict-free fragment loads). Measured on an H200 (mnv2_gemm_bench, docs/bench/
// h200-2026-11-29-issue32/gemm_bench.log) they did not hold: with the cost model taking them, the network's 1x1
// GEMMs ran at 21.25 TFLOP/s time-weighted at batch 256 against 23.35 for the best forced tile per shape, mostly the
// measured tiles (cuBLAS pedantic: 25.01). So the chooser leaves them out (kChooseUnmeasured); --cuda-gemm-tile and
// the bench still run them, for the refit.
constexpr GemmTileInfo kGemmTiles[] = {
    {GemmTile::t128x128, 128, 128, 8, 0.90, 256, 149, 1, 4, true},
    {GemmTile::t128x64, 128, 64, 8, 0.85, 256, 79, 3, 4, true},
    {GemmTile::t64x64, 64, 64, 8, 0.60, 256, 64, 4, 4, true},
    {GemmTile::t128x32, 128, 32, 8, 0.80, 128, 95, 5, 4, true},
    {GemmTile::t32x32, 32, 32, 8, 0.45, 64, 62, 16, 4, true},
    {GemmTile::t32x32k32, 32, 32, 32, 0.45, 64, 141, 7, 4, true},
    {GemmTile::t128x128w, 128, 128, 8, 1.00, 256, 128, 2, 0, false},
    {GemmTile::t128x96w, 128, 96, 8, 0.97, 192, 167, 2, 0, false},
    {GemmTile::t128x64w, 128, 64, 8, 0.97, 128, 128, 4, 0, false},
    {GemmTile::t128x32w, 128, 32, 8, 0.75, 64, 168, 6, 0, false},
};

// Static shared memory of a block: two slices of A (transposed, rows padded by a_pad floats) and of B.
constexpr int64_t gemm_smem_bytes(const GemmTileInfo& t) {
  return 2 * int64_t{t.bk} * ((t.bm + t.a_pad) + t.bn) * static_cast<int64_t>(sizeof(float));
}

const GemmTileInfo& gemm_tile_info(GemmTile tile) {
  for (const GemmTileInfo& t : kGemmTiles)
    if (t.tile == tile) return t;
  throw Error("gemm: unknown tile " + std::to_string(static_cast<int>(tile)));
}

// Cost model units are SM clock cycles (rough: they only rank the candidates).
constexpr double kFfmaPerSmCycle = 128;  // FP32 lanes per multiprocessor
// One k slice of a block when latency-bound (global load, barrier): about 0.75 us on the H200, read off the
// batch-1 split GEMMs of run 2 (15 slices of block17.project took 14.7 us with the reduction).
constexpr double kSliceCycles = 1500;
constexpr double kReduceLaunchCycles = 2000;   // a second kernel in the graph, about 1 us
constexpr double kReduceBytesPerCycle = 1500;  // the split partials pass through L2
constexpr int kMaxSplits = 32;
constexpr double kSplitMargin = 0.85;  // a split variant is taken only when predicted 15% faster
constexpr int kMinSplitDepth = 32;     // each split gets at least this much of k
// A tile whose figures are predictions (GemmTileInfo::measured false) is charged this factor, so it replaces a
// measured one only where predicted clearly faster. Of batch 1's pinned choices (tests/unit/test_cuda_planner.cpp)
// it leaves all but block2.expand's (12544 x 96 x 16: 128x96w for 128x32) as they were measured; to be refitted
// with mnv2_gemm_bench's forced-tile timings.
constexpr double kUnmeasuredMargin = 1.15;
// Whether the chooser may take a tile whose figures are predictions: not since the measurement above.
constexpr bool kChooseUnmeasured = false;

}  // namespace

int gemm_blocks_per_sm(GemmTile tile, const DeviceCaps& caps) {
  const GemmTileInfo& t = gemm_tile_info(tile);
  const int64_t by_regs = caps.regs_per_sm / (int64_t{t.registers} * t.threads);
  const int64_t by_threads = caps.max_threads_per_sm / t.threads;
  const int64_t by_smem = caps.smem_per_sm / (gemm_smem_bytes(t) + 1024);  // 1 KB per block: the runtime's
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>({by_regs, by_threads, by_smem, int64_t{caps.max_blocks_per_sm}})));
}

GemmVariant choose_gemm_variant(const GemmShape& s, const DeviceCaps& caps, bool allow_split,
                                const GemmTile* only_tile) {
  // The best single-pass and the best split variant; a split must win clearly, since the model is rough and
  // its extra pass and workspace traffic are certain.
  GemmVariant best_single, best_split;
  best_single.vec4 = best_split.vec4 = s.vec4;
  double single_cost = INFINITY, split_cost = INFINITY;
  const double sms = std::max(1, caps.num_sms);
  const int batch = std::max(1, s.batch);
  for (const GemmTileInfo& t : kGemmTiles) {
    if (only_tile != nullptr && t.tile != *only_tile) continue;
    if (only_tile == nullptr && !t.measured && !kChooseUnmeasured) continue;
    const int blocks_per_sm = gemm_blocks_per_sm(t.tile, caps);
    const int64_t tiles = ceil_div(s.m, t.bm) * ceil_div(s.n, t.bn) * batch;
    // Work the tiles do, padding included, over the whole chip.
    const double compute = static_cast<double>(tiles) * t.bm * t.bn * s.k / (sms * kFfmaPerSmCycle * t.efficiency);
    for (int splits = 1; splits <= kMaxSplits; ++splits) {
      if (splits > 1 && (!allow_split || batch != 1)) break;
      const int k_chunk = split_k_chunk(s.k, splits, t.bk);
      // Only counts whose whole-slice chunks leave no split empty (the launch recomputes the same chunk).
      if (splits > 1 && (k_chunk < kMinSplitDepth || ceil_div(s.k, k_chunk) != splits)) continue;
      const int64_t blocks = tiles * splits;
      const double waves = std::ceil(static_cast<double>(blocks) / (sms * blocks_per_sm));
      // One slice of one wave: the load latency plus the FFMA of the blocks sharing a multiprocessor.
      const double per_sm = std::min<double>(blocks_per_sm, std::ceil(static_cast<double>(blocks) / sms));
      // Measured tiles: the latency and the FFMA add up (fitted). The warp-tiled ones are predicted to overlap them:
      // a slice's loads are in flight during the whole previous slice, with 12-16 warps per multiprocessor.
      const double slice_ffma = per_sm * t.bm * t.bn * t.bk / (kFfmaPerSmCycle * t.efficiency);
      const double slice = t.measured ? kSliceCycles + slice_ffma : std::max(kSliceCycles, slice_ffma);
      const double latency = waves * ceil_div(k_chunk, t.bk) * slice;
      const double reduce = splits > 1 ? kReduceLaunchCycles + 4.0 * splits * s.m * s.n / kReduceBytesPerCycle : 0.0;
      // The compute term once more at a thousandth: of two tiles the latency term rates equal, the one with less
      // padded work.
      const double cost =
          (std::max(compute, latency) + reduce) * (t.measured ? 1.0 : kUnmeasuredMargin) + 1e-3 * compute;
      double& best_cost = splits > 1 ? split_cost : single_cost;
      GemmVariant& best = splits > 1 ? best_split : best_single;
      if (cost < best_cost) {
        best_cost = cost;
        best.tile = t.tile;
        best.splits = splits;
      }
    }
  }
  return split_cost < kSplitMargin * single_cost ? best_split : best_single;
}

const char* to_string(GemmTile tile) {
  switch (tile) {
    case GemmTile::t128x128:
      return "128x128";
    case GemmTile::t128x64:
      return "128x64";
    case GemmTile::t64x64:
      return "64x64";
    case GemmTile::t128x32:
      return "128x32";
    case GemmTile::t32x32:
      return "32x32";
    case GemmTile::t32x32k32:
      return "32x32k32";
    case GemmTile::t128x128w:
      return "128x128w";
    case GemmTile::t128x96w:
      return "128x96w";
    case GemmTile::t128x64w:
      return "128x64w";
    case GemmTile::t128x32w:
      return "128x32w";
  }
  return "?";
}

bool parse_gemm_tile(const std::string& text, GemmTile* tile) {
  for (const GemmTileInfo& t : kGemmTiles) {
    if (text == to_string(t.tile)) {
      *tile = t.tile;
      return true;
    }
  }
  return false;
}

std::string to_string(const GemmVariant& v) {
  return std::string("gemm ") + to_string(v.tile) + (v.vec4 ? " vec4" : " scalar") +
         (v.splits > 1 ? " splitk" + std::to_string(v.splits) : std::string()) +
         (v.splits > 1 && v.reduce_in_kernel ? " in-kernel" : "");
}

int64_t gemm_tile_count(int m, int n, GemmTile tile) {
  for (const GemmTileInfo& t : kGemmTiles)
    if (t.tile == tile) return ceil_div(m, t.bm) * ceil_div(n, t.bn);
  return 0;
}

// ---- tensor-core GEMM ---------------------------------------------------------------------------------------

namespace {

// The cost model's figures (cycles of one multiprocessor at the H200's 1.98 GHz; leads, not measurements):
struct TcTileInfo {
  TcTile tile;
  int bm, bn;
  int blocks_per_sm;       // resident blocks on the H200 (shared memory of 3 stages, threads, registers)
  double efficiency;       // fraction of the tensor-core rate the tile's fragment loads leave
  int fragments_per_warp;  // 16x16 accumulators each warp finishes one after another in the epilogue
  int threads;             // per block
};
constexpr TcTileInfo kTcTiles[] = {
    {TcTile::t128x128, 128, 128, 3, 0.8, 8, 256}, {TcTile::t128x64, 128, 64, 4, 0.7, 8, 128},
    {TcTile::t64x64, 64, 64, 6, 0.6, 4, 128},     {TcTile::t128x32, 128, 32, 5, 0.5, 4, 128},
    {TcTile::t32x32, 32, 32, 8, 0.35, 1, 128},
};
constexpr double kTcSliceCycles = 500;     // a k slice's copy latency not hidden by the other stages
constexpr double kMacPerSmCycleF16 = 512;  // mma.sync half, float32 accumulate, dense
constexpr double kBytesPerSmCycle = 16;    // 4.2 TB/s of DRAM over 132 multiprocessors at 1.98 GHz
constexpr int kTcMaxSplits = 16;
constexpr int kMinSplitSlices = 2;  // each split gets at least this many k slices

}  // namespace

TcGemmVariant choose_gemm_tc_variant(const TcGemmShape& s, const DeviceCaps& caps, const TcTile* only_tile,
                                     bool allow_split, int max_splits) {
  const int split_limit = allow_split ? (max_splits > 0 ? std::min(max_splits, kTcMaxSplits) : kTcMaxSplits) : 1;
  // The best single-pass and the best split variant; a split must win clearly (its extra pass is certain).
  TcGemmVariant best, best_split;
  best.vec = best_split.vec = s.vec;
  double best_cost = INFINITY, split_cost = INFINITY;
  const double sms = std::max(1, caps.num_sms);
  const double bytes_per_cycle = caps.dram_bytes_per_sm_cycle > 0 ? caps.dram_bytes_per_sm_cycle : kBytesPerSmCycle;
  const int in_bytes = dtype_bytes(s.in_type), out_bytes = dtype_bytes(s.out_type);
  const int bk = kTcSliceBytes / in_bytes;
  // TF32 runs at half the half-precision tensor-core rate.
  const double mac_rate = s.in_type == DType::f16 ? kMacPerSmCycleF16 : kMacPerSmCycleF16 / 2;
  for (const TcTileInfo& tile_info : kTcTiles) {
    if (only_tile != nullptr && tile_info.tile != *only_tile) continue;
    TcTileInfo t = tile_info;
    // Shared memory decides what fits this GPU at all and how many blocks share a multiprocessor (the table's
    // figure is the H200's, where registers may bind first; 1 KB per block is the runtime's reservation).
    const int64_t smem = gemm_tc_smem_bytes(t.tile, s.in_type);
    if (smem > caps.smem_per_block_optin) {
      if (only_tile != nullptr)
        throw Error(std::string("gemm_tc: tile ") + to_string(t.tile) + " needs " + std::to_string(smem) +
                    " bytes of shared memory per block; this GPU allows " + std::to_string(caps.smem_per_block_optin));
      continue;
    }
    const int64_t by_smem = caps.smem_per_sm / (smem + 1024);
    const int64_t by_threads = caps.max_threads_per_sm / t.threads;
    t.blocks_per_sm = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>({t.blocks_per_sm, by_smem, by_threads, int64_t{caps.max_blocks_per_sm}})));
    const int64_t tiles = ceil_div(s.m, t.bm) * ceil_div(s.n, t.bn);
    for (int splits = 1; splits <= split_limit; ++splits) {
      const int k_chunk = split_k_chunk(s.k, splits, bk);
      if (splits > 1 && (k_chunk < kMinSplitSlices * bk || ceil_div(s.k, k_chunk) != splits)) continue;
      const int64_t blocks = tiles * splits;
      const double waves = std::ceil(static_cast<double>(blocks) / (sms * t.blocks_per_sm));
      const double per_sm = std::min<double>(t.blocks_per_sm, std::ceil(static_cast<double>(blocks) / sms));
      // One slice of one wave: copy latency, then the larger of the blocks' tensor-core work and their operand
      // bytes; then the epilogue's output (and residual) bytes, or the partial sums of a split.
      const double mma = per_sm * t.bm * t.bn * bk / (mac_rate * t.efficiency);
      const double bytes = per_sm * (t.bm + t.bn) * bk * in_bytes / bytes_per_cycle;
      // The epilogue runs through each warp's staging area one fragment at a time: a tile whose warps own 8
      // fragments stores at about half the rate of one with 1 (fitted to every 1x1 convolution of
      // MobileNetV2 at batch 256 in fp16 with each tile forced, H200, run 6: the shallow expansions
      // (k = 16..32), which are all epilogue, ran 25-40% faster in the 4-fragment tiles than in the 8).
      const double epilogue = per_sm * t.bm * t.bn * (splits > 1 ? 4.0 : out_bytes * (s.residual ? 2.0 : 1.0)) /
                              bytes_per_cycle * (1.0 + t.fragments_per_warp / 8.0);
      const double reduce = splits > 1 ? kReduceLaunchCycles + 4.0 * splits * s.m * s.n / kReduceBytesPerCycle : 0.0;
      const double cost = waves * (ceil_div(k_chunk, bk) * (kTcSliceCycles + std::max(mma, bytes)) + epilogue) + reduce;
      TcGemmVariant& b = splits > 1 ? best_split : best;
      double& b_cost = splits > 1 ? split_cost : best_cost;
      if (cost < b_cost) {
        b_cost = cost;
        b.tile = t.tile;
        b.splits = splits;
      }
    }
  }
  return split_cost < kSplitMargin * best_cost ? best_split : best;
}

const char* to_string(TcTile tile) {
  switch (tile) {
    case TcTile::t128x128:
      return "128x128";
    case TcTile::t128x64:
      return "128x64";
    case TcTile::t64x64:
      return "64x64";
    case TcTile::t128x32:
      return "128x32";
    case TcTile::t32x32:
      return "32x32";
  }
  return "?";
}

bool parse_tc_tile(const std::string& text, TcTile* tile) {
  for (const TcTileInfo& t : kTcTiles) {
    if (text == to_string(t.tile)) {
      *tile = t.tile;
      return true;
    }
  }
  return false;
}

std::string to_string(const TcGemmVariant& v, DType in_type) {
  return std::string("gemm ") + (in_type == DType::f16 ? "tc-fp16 " : "tc-tf32 ") + to_string(v.tile) +
         (v.vec ? " vec" : " scalar") + (v.splits > 1 ? " splitk" + std::to_string(v.splits) : std::string()) +
         (v.splits > 1 && v.reduce_in_kernel ? " in-kernel" : "") +
         (v.splits > 1 && v.reduce_in_cluster ? " dsmem" : "");
}

int64_t gemm_tc_tile_count(int m, int n, TcTile tile) {
  for (const TcTileInfo& t : kTcTiles)
    if (t.tile == tile) return ceil_div(m, t.bm) * ceil_div(n, t.bn);
  return 0;
}

// ---- depthwise 3x3 ------------------------------------------------------------------------------------------

namespace {
constexpr int kBlockThreads = 256;  // the one-dimensional kernels' block (common.cuh's kBlockThreads)
// Below this many threads per multiprocessor with several columns per thread, one column per thread gives
// the scheduler more warps to hide latency with (small maps at small batches).
constexpr int64_t kDepthwiseMinThreadsPerSm = 2 * kBlockThreads;
// The direct convolution keeps at least this many threads per multiprocessor where fewer channels per thread
// allow (small maps at batch 1).
constexpr int64_t kDirectMinThreadsPerSm = 4 * kBlockThreads;
}  // namespace

DepthwiseVariant choose_depthwise_variant(const DepthwiseShape& s, int num_sms) {
  DepthwiseVariant v;
  v.dtype = s.dtype;
  const int wide = 16 / dtype_bytes(s.dtype);  // channels per 16-byte access
  v.vec = s.channels % wide == 0 && s.aligned ? wide : 1;
  if (s.stride_h == s.stride_w && (s.stride_h == 1 || s.stride_h == 2)) {
    v.stride = s.stride_h;
    v.cols = s.stride_h == 1 ? 4 : 2;
  } else {
    v.stride = 0;
    v.cols = 1;
  }
  // Fewer threads than a couple of blocks per multiprocessor: one column each.
  const int64_t sms = std::max(1, num_sms);
  const int64_t threads = static_cast<int64_t>(s.batch) * s.out_h * ceil_div(s.out_w, v.cols) * (s.channels / v.vec);
  if (v.cols > 1 && threads < kDepthwiseMinThreadsPerSm * sms) v.cols = 1;
  return v;
}

std::string to_string(const DepthwiseVariant& v) {
  return "dw3x3 " + (v.stride > 0 ? "s" + std::to_string(v.stride) : std::string("s-any")) +
         (v.dtype == DType::f16 ? " half" : " vec") + std::to_string(v.vec) + " cols" + std::to_string(v.cols);
}

// ---- direct convolution -----------------------------------------------------------------------------------

DirectConvVariant choose_direct_conv_variant(const DirectConvShape& s, int num_sms) {
  // The most channels per thread that divide a group: with all of a group's channels in one thread (the
  // stem: 32), every thread of a warp reads the same weights at the same time, one broadcast load for the
  // warp instead of one per thread (the L1 traffic of those loads bounded the 8-channel stem, run 1).
  // Small maps (batch 1) instead keep at least kDirectMinThreadsPerSm threads per multiprocessor where a
  // smaller count allows, trading the broadcast for parallelism.
  DirectConvVariant v;
  v.co = 1;  // odd channel counts: scalar loads and stores
  v.taps27 = s.kernel_h == 3 && s.kernel_w == 3 && s.groups > 0 && s.in_channels / s.groups == 3;
  const int cout_g = s.groups > 0 ? s.out_channels / s.groups : 0;
  const int64_t pixels = static_cast<int64_t>(s.batch) * s.out_h * s.out_w;
  for (int co : {32, 16, 8, 4}) {
    // 4 channels of the output per store: 16 bytes (float) or 8 (half) at 16-byte aligned pixels.
    if (!(s.out_channels % 4 == 0 && cout_g % co == 0 && s.aligned)) continue;
    v.co = co;
    if (pixels * (s.out_channels / co) >= kDirectMinThreadsPerSm * std::max(1, num_sms)) break;
  }
  return v;
}

std::string to_string(const DirectConvVariant& v, Layout input_layout, DType dtype) {
  return std::string("direct ") + (input_layout == Layout::nchw ? "nchw" : "nhwc") +
         (dtype == DType::f16 ? (input_layout == Layout::nchw ? "->half" : " half") : "") + " co" +
         std::to_string(v.co) + (v.taps27 ? " 3x3x3" : "");
}

// ---- expansion + depthwise --------------------------------------------------------------------------------

int64_t expand_depthwise_smem_bytes(const ExpandDepthwiseShape& s, const ExpandDepthwiseVariant& v) {
  return static_cast<int64_t>(expand_depthwise_smem(s.in_channels, s.stride_h, s.stride_w, v.tile_h, v.tile_w).total) *
         static_cast<int64_t>(sizeof(float));
}

ExpandDepthwiseVariant choose_expand_depthwise_variant(const ExpandDepthwiseShape& s, std::string* why_not,
                                                       int64_t max_smem) {
  max_smem = std::min(max_smem, kExpandDwMaxSmem);
  ExpandDepthwiseVariant v;
  v.tile_h = std::max(1, std::min(8, s.out_h));
  v.tile_w = std::max(1, std::min(8, s.out_w));
  while (expand_depthwise_smem_bytes(s, v) > max_smem && (v.tile_h > 1 || v.tile_w > 1)) {
    v.tile_h = std::max(1, v.tile_h / 2);
    v.tile_w = std::max(1, v.tile_w / 2);
  }
  if (why_not != nullptr) {
    why_not->clear();
    if (s.expanded % 4 != 0) *why_not = "expanded channels not a multiple of 4";
    if (expand_depthwise_smem_bytes(s, v) > max_smem)
      *why_not = "a 1x1 tile needs " + std::to_string(expand_depthwise_smem_bytes(s, v)) + " bytes of shared memory";
  }
  return v;
}

double expand_depthwise_recompute_factor(const ExpandDepthwiseShape& s, const ExpandDepthwiseVariant& v) {
  // Window pixels inside the map, summed over the tiles, over the map's pixels.
  double computed = 0;
  for (int oh0 = 0; oh0 < s.out_h; oh0 += v.tile_h)
    for (int ow0 = 0; ow0 < s.out_w; ow0 += v.tile_w) {
      const int h0 = oh0 * s.stride_h - s.pad_top, w0 = ow0 * s.stride_w - s.pad_left;
      const int h1 = h0 + (v.tile_h - 1) * s.stride_h + 3, w1 = w0 + (v.tile_w - 1) * s.stride_w + 3;
      const int rows = std::max(0, std::min(h1, s.in_h) - std::max(h0, 0));
      const int cols = std::max(0, std::min(w1, s.in_w) - std::max(w0, 0));
      computed += static_cast<double>(rows) * cols;
    }
  const double exact = static_cast<double>(s.in_h) * s.in_w;
  return exact > 0 ? computed / exact : 1.0;
}

std::string to_string(const ExpandDepthwiseVariant& v) {
  return "expand1x1+dw3x3 tile " + std::to_string(v.tile_h) + "x" + std::to_string(v.tile_w) + " slice " +
         std::to_string(kExpandDwSlice);
}

// ---- whole inverted-residual block (fp16) ---------------------------------------------------------------

namespace {
int round_up(int x, int m) { return (x + m - 1) / m * m; }

// ptxas' register counts are not known here: a guess that the device run checks (the items' accumulators,
// 16 floats each, over a base of about 64): 2 resident blocks of 256 threads up to 4 items, 1 at 6.
int fused_block_regs_blocks(int items) { return items <= 4 ? 2 : 1; }
}  // namespace

std::vector<float> to_tf32(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t x;
    std::memcpy(&x, &values[i], sizeof x);
    // Half a unit of the 13 dropped bits added to the magnitude, then truncated: ties away from zero. A carry moves
    // into the exponent correctly (up to infinity for the largest values, as cvt.rna).
    if ((x & 0x7f800000u) != 0x7f800000u) x = (x + 0x1000u) & 0xffffe000u;
    std::memcpy(&out[i], &x, sizeof x);
  }
  return out;
}

FusedBlockLayout fused_block_layout(const FusedBlockShape& s, int tile_h, int tile_w, FusedBlockMath math) {
  FusedBlockLayout l;
  const bool tf32 = math == FusedBlockMath::tf32;
  const int eb = tf32 ? 4 : 2;  // bytes an element
  const int st = std::max(1, s.stride);
  l.window_h = (tile_h - 1) * st + 3;
  l.window_w = (tile_w - 1) * st + 3;
  l.m1 = round_up(l.window_h * l.window_w, 16);
  l.m2 = round_up(tile_h * tile_w, 16);
  l.k_pad = round_up(std::max(1, s.in_channels), 16);
  l.e_pad = round_up(std::max(1, s.expanded), kFusedBlockChunk);
  l.co_pad = round_up(std::max(1, s.out_channels), 32);
  l.ld_x = l.k_pad + 8;
  l.ld_e = kFusedBlockChunk + (tf32 ? 4 : 8);
  l.ld_p = l.co_pad + (tf32 ? 4 : 8);
  l.ld_ex = st == 2 && !tf32 ? kFusedBlockChunk + 4 : kFusedBlockChunk + 8;
  l.ld_d = kFusedBlockChunk + 8;
  l.we_bytes = l.k_pad * l.ld_e * eb;
  l.wp_bytes = kFusedBlockChunk * l.ld_p * eb;
  l.dw_bytes = 10 * kFusedBlockChunk * eb;
  l.bias_bytes = kFusedBlockChunk * 4;
  int at = 0;
  l.x = at;
  at += l.m1 * l.ld_x * eb;
  l.ex = at;
  at += round_up(l.m1 * l.ld_ex * eb, 16);
  l.d = at;
  at += l.m2 * l.ld_d * eb;
  l.we = at;
  at += 2 * l.we_bytes;
  l.wp = at;
  at += 2 * l.wp_bytes;
  l.dw = at;
  at += 2 * l.dw_bytes;
  l.eb = at;
  at += 2 * l.bias_bytes;
  l.total = at;
  return l;
}

int fused_block_items(const FusedBlockShape& s, int tile_h, int tile_w) {
  const FusedBlockLayout l = fused_block_layout(s, tile_h, tile_w);
  const int items = (l.m2 / 16) * (l.co_pad / 32);
  return (items + kFusedBlockWarps - 1) / kFusedBlockWarps;
}

std::string fused_block_shape_refusal(const FusedBlockShape& s, int code_arch) {
  if (s.batch < 1 || s.in_channels < 1 || s.expanded < 1 || s.out_channels < 1 || s.in_h < 1 || s.in_w < 1 ||
      s.out_h < 1 || s.out_w < 1 || s.pad_top < 0 || s.pad_left < 0)
    return "sizes must be positive";
  if (s.in_channels % 8 != 0 || s.out_channels % 8 != 0)
    return "input and output channels must be multiples of 8 (16-byte accesses), got " + std::to_string(s.in_channels) +
           " and " + std::to_string(s.out_channels);
  if (s.stride != 1 && s.stride != 2) return "depthwise stride " + std::to_string(s.stride) + " (1 or 2 only)";
  if (s.residual && (s.stride != 1 || s.in_channels != s.out_channels || s.in_h != s.out_h || s.in_w != s.out_w))
    return "the residual's shape differs from the output's";
  if (code_arch > 0 && code_arch < 80)
    return "needs kernels compiled for compute_80 or newer (mma.sync, cp.async); this build runs compute_" +
           std::to_string(code_arch);
  return "";
}

FusedBlockVariant choose_fused_block_variant(const FusedBlockShape& s, const DeviceCaps& caps, int code_arch,
                                             std::string* why_not, FusedBlockMath math) {
  FusedBlockVariant best;
  const bool tf32 = math == FusedBlockMath::tf32;
  const double eb = tf32 ? 4.0 : 2.0;                 // bytes an element
  const double mma_per_cycle = tf32 ? 256.0 : 512.0;  // multiply-adds a multiprocessor's mma.sync retires
  std::string why = fused_block_shape_refusal(s, code_arch);
  double best_cost = 0;
  if (why.empty()) {
    const int sms = std::max(1, caps.num_sms);
    for (int th = 1; th <= std::min(s.out_h, 16); ++th) {
      for (int tw = 1; tw <= std::min(s.out_w, 16); ++tw) {
        const FusedBlockLayout l = fused_block_layout(s, th, tw, math);
        const int items = fused_block_items(s, th, tw);
        if (l.m2 > 256 || items > kFusedBlockMaxItems || l.total > caps.smem_per_block_optin) continue;
        // Tiles whose halos more than double the expansion's work are never worth it (small tiles at batch 1).
        if (fused_block_recompute_factor(s, FusedBlockVariant{th, tw, 2}) > kFusedBlockMaxRecompute) continue;
        const int variant_items = items <= 2 ? 2 : items <= 4 ? 4 : 6;
        const int by_smem = std::max(1, caps.smem_per_sm / (l.total + 1024));
        const int occ = std::max(1, std::min({by_smem, fused_block_regs_blocks(variant_items),
                                              caps.max_threads_per_sm / kFusedBlockThreads, caps.max_blocks_per_sm}));
        const double tc =
            (static_cast<double>(l.m1) * l.k_pad * l.e_pad + static_cast<double>(l.m2) * l.e_pad * l.co_pad) /
            mma_per_cycle;
        const double dw = static_cast<double>(th) * tw * 9.0 * l.e_pad / (tf32 ? 32.0 : 64.0);
        const double bytes = (static_cast<double>(l.k_pad) * l.e_pad + static_cast<double>(l.e_pad) * l.co_pad) * eb +
                             l.e_pad * 11.0 * 4.0 + static_cast<double>(l.window_h) * l.window_w * s.in_channels * eb +
                             static_cast<double>(th) * tw * s.out_channels * eb;
        const double throughput = tc + dw + bytes / 32.0;
        const double latency = (l.e_pad / kFusedBlockChunk) * 600.0 + 2000.0;
        const int64_t blocks = fused_block_blocks(s, FusedBlockVariant{th, tw, 2});
        const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sms) * occ));
        const double cost = waves * std::max(occ * throughput, throughput + latency);
        if (best.tile_h == 0 || cost < best_cost * 0.999) {
          best = FusedBlockVariant{th, tw, variant_items, math};
          best_cost = cost;
        }
      }
    }
    if (best.tile_h == 0)
      why = "no tile fits " + std::to_string(caps.smem_per_block_optin) + " bytes of shared memory and " +
            std::to_string(kFusedBlockMaxItems) + " projection items per warp with halos costing at most x" +
            std::to_string(kFusedBlockMaxRecompute).substr(0, 3);
  }
  if (why_not != nullptr) *why_not = why;
  return best;
}

std::string fused_block_refusal(const FusedBlockShape& s, int code_arch, int smem_per_block_optin,
                                FusedBlockMath math) {
  DeviceCaps caps;
  caps.smem_per_block_optin = smem_per_block_optin;
  std::string why;
  choose_fused_block_variant(s, caps, code_arch, &why, math);
  return why;
}

int64_t fused_block_blocks(const FusedBlockShape& s, const FusedBlockVariant& v) {
  if (v.tile_h < 1 || v.tile_w < 1) return 0;
  return ceil_div(s.out_h, v.tile_h) * ceil_div(s.out_w, v.tile_w) * static_cast<int64_t>(s.batch);
}

int64_t fused_block_partials_floats(const FusedBlockShape& s, const FusedBlockVariant& v) {
  if (v.splits <= 1) return 0;
  return static_cast<int64_t>(v.splits) * s.batch * s.out_h * s.out_w * fused_block_layout(s, 1, 1, v.math).co_pad;
}

double fused_block_recompute_factor(const FusedBlockShape& s, const FusedBlockVariant& v) {
  if (v.tile_h < 1 || v.tile_w < 1) return 1.0;
  // Window pixels inside the map, summed over the tiles: separable into rows and columns.
  auto covered = [&s](int out, int tile, int pad, int in) {
    double sum = 0;
    for (int o0 = 0; o0 < out; o0 += tile) {
      const int a = o0 * s.stride - pad, b = a + (tile - 1) * s.stride + 3;
      sum += std::max(0, std::min(b, in) - std::max(a, 0));
    }
    return sum;
  };
  const double exact = static_cast<double>(s.in_h) * s.in_w;
  const double computed =
      covered(s.out_h, v.tile_h, s.pad_top, s.in_h) * covered(s.out_w, v.tile_w, s.pad_left, s.in_w);
  return exact > 0 ? computed / exact : 1.0;
}

std::string to_string(const FusedBlockVariant& v) {
  return "block tile " + std::to_string(v.tile_h) + "x" + std::to_string(v.tile_w) + " chunk " +
         std::to_string(kFusedBlockChunk) + " items " + std::to_string(v.items) +
         (v.math == FusedBlockMath::tf32 ? " tf32" : "") + (v.splits > 1 ? " split " + std::to_string(v.splits) : "");
}

// ---- the whole block in float32 FFMA (fused_block_ffma) ---------------------------------------------

FusedBlockFfmaLayout fused_block_ffma_layout(const FusedBlockShape& s, int tile_h, int tile_w) {
  FusedBlockFfmaLayout l;
  const int st = std::max(1, s.stride);
  constexpr int C = kFusedBlockFfmaChunk;
  l.window_h = (std::max(1, tile_h) - 1) * st + 3;
  l.window_w = (std::max(1, tile_w) - 1) * st + 3;
  l.m1 = l.window_h * l.window_w;
  l.pout = std::max(1, tile_h) * std::max(1, tile_w);
  l.k_pad = round_up(std::max(1, s.in_channels), 4);
  l.e_pad = round_up(std::max(1, s.expanded), C);
  l.co_pad = round_up(std::max(1, s.out_channels), 4);
  l.ld_x = (l.k_pad / 4) % 2 == 1 ? l.k_pad : l.k_pad + 4;  // an odd number of 16-byte groups
  l.ld_d = C + 4;
  l.we_bytes = l.k_pad * C * 4;
  l.wp_bytes = C * l.co_pad * 4;
  l.vec_bytes = 11 * C * 4;
  int at = 0;
  l.x = at;
  at += l.m1 * l.ld_x * 4;
  l.ex = at;
  at += l.m1 * C * 4;
  l.d = at;
  at += l.pout * l.ld_d * 4;
  l.we = at;
  at += 2 * l.we_bytes;
  l.wp = at;
  at += 2 * l.wp_bytes;
  l.vec = at;
  at += 2 * l.vec_bytes;
  l.total = at;
  return l;
}

int fused_block_ffma_items(const FusedBlockShape& s, int tile_h, int tile_w, int px, int nc) {
  const FusedBlockFfmaLayout l = fused_block_ffma_layout(s, tile_h, tile_w);
  return static_cast<int>(ceil_div(l.pout, std::max(1, px)) * ceil_div(l.co_pad / 4, std::max(1, nc)));
}

std::string fused_block_ffma_shape_refusal(const FusedBlockShape& s) {
  if (s.batch < 1 || s.in_channels < 1 || s.expanded < 1 || s.out_channels < 1 || s.in_h < 1 || s.in_w < 1 ||
      s.out_h < 1 || s.out_w < 1 || s.pad_top < 0 || s.pad_left < 0)
    return "sizes must be positive";
  if (s.in_channels % 4 != 0 || s.out_channels % 4 != 0)
    return "input and output channels must be multiples of 4 (16-byte accesses), got " + std::to_string(s.in_channels) +
           " and " + std::to_string(s.out_channels);
  if (s.stride != 1 && s.stride != 2) return "depthwise stride " + std::to_string(s.stride) + " (1 or 2 only)";
  if (s.residual && (s.stride != 1 || s.in_channels != s.out_channels || s.in_h != s.out_h || s.in_w != s.out_w))
    return "the residual's shape differs from the output's";
  return "";
}

std::string fused_block_ffma_variant_refusal(const FusedBlockShape& s, const FusedBlockFfmaVariant& v,
                                             int smem_per_block_optin) {
  bool built = false;
  for (const FusedBlockFfmaTile& t : kFusedBlockFfmaTiles) built = built || (t.px == v.px && t.nc == v.nc);
  if (!built || v.tile_h < 1 || v.tile_w < 1) return "variant " + to_string(v) + " is not built";
  const FusedBlockFfmaLayout l = fused_block_ffma_layout(s, v.tile_h, v.tile_w);
  const int items = fused_block_ffma_items(s, v.tile_h, v.tile_w, v.px, v.nc);
  if (items > kFusedBlockFfmaThreads)
    return to_string(v) + " needs " + std::to_string(items) + " projection threads, the block has " +
           std::to_string(kFusedBlockFfmaThreads);
  if (l.m1 > kFusedBlockFfmaMaxWindow)
    return to_string(v) + " has a window of " + std::to_string(l.m1) + " pixels, at most " +
           std::to_string(kFusedBlockFfmaMaxWindow);
  if (l.total > smem_per_block_optin)
    return to_string(v) + " needs " + std::to_string(l.total) + " bytes of shared memory, the GPU allows " +
           std::to_string(smem_per_block_optin);
  return "";
}

FusedBlockFfmaVariant choose_fused_block_ffma_variant(const FusedBlockShape& s, const DeviceCaps& caps,
                                                      std::string* why_not) {
  FusedBlockFfmaVariant best;
  std::string why = fused_block_ffma_shape_refusal(s);
  double best_cost = 0;
  if (why.empty()) {
    const int sms = std::max(1, caps.num_sms);
    constexpr int C = kFusedBlockFfmaChunk, T = kFusedBlockFfmaThreads;
    for (int th = 1; th <= std::min(s.out_h, 16); ++th) {
      for (int tw = 1; tw <= std::min(s.out_w, 16); ++tw) {
        if (fused_block_recompute_factor(s, FusedBlockVariant{th, tw, 2}) > kFusedBlockMaxRecompute) continue;
        const FusedBlockFfmaLayout l = fused_block_ffma_layout(s, th, tw);
        for (const FusedBlockFfmaTile& t : kFusedBlockFfmaTiles) {
          const FusedBlockFfmaVariant v{th, tw, t.px, t.nc};
          if (!fused_block_ffma_variant_refusal(s, v, caps.smem_per_block_optin).empty()) continue;
          // FFMA instructions per thread and chunk of each phase and the warps that have them: the expansion's
          // passes (4 x 4 x k per pass, every warp), the depthwise's items (4 x 4 x 9 each, counted twice: it
          // waits on shared memory), the projection's micro-tile (only ceil(items / 32) warps).
          const double passes = std::ceil(l.m1 / static_cast<double>(kFusedBlockFfmaPassPixels));
          const double dw_slots = th * std::ceil(tw / 4.0) * (C / 4);
          const double dw_per_thread = std::ceil(dw_slots / T) * 2.0 * 144.0;
          const double proj_per_thread = t.px * t.nc * 4.0 * C;
          const double warps = T / 32.0;
          const double dw_warps = std::min(warps, std::ceil(dw_slots / 32.0));
          const double proj_warps = std::ceil(fused_block_ffma_items(s, th, tw, t.px, t.nc) / 32.0);
          const double exp_per_thread = passes * 16.0 * l.k_pad;
          // Issue: warp instructions over the 4 schedulers of a multiprocessor (what co-resident blocks share),
          // and the block's own critical path (a phase's warps beyond 4 queue behind each other); plus the
          // weights, window and output through L2 and a fixed cost per chunk (barriers).
          const double chunks = l.e_pad / C;
          const double bytes =
              (static_cast<double>(l.k_pad) * l.e_pad + static_cast<double>(l.e_pad) * l.co_pad + 11.0 * l.e_pad) *
                  4.0 +
              static_cast<double>(l.m1) * s.in_channels * 4.0 + static_cast<double>(l.pout) * s.out_channels * 4.0;
          const double throughput =
              chunks * (exp_per_thread * warps + dw_per_thread * dw_warps + proj_per_thread * proj_warps) / 4.0 +
              bytes / 32.0;
          const double latency =
              chunks * (exp_per_thread * std::ceil(warps / 4.0) + dw_per_thread * std::ceil(dw_warps / 4.0) +
                        proj_per_thread * std::ceil(proj_warps / 4.0) + 600.0) +
              2000.0;
          // Registers: 128 a thread (2 blocks) up to 8 accumulator quads (fused_block_ffma.cu's launch bounds),
          // else up to 255 (1 block).
          const int by_regs = t.px * t.nc <= 8 ? 2 : 1;
          const int by_smem = std::max(1, caps.smem_per_sm / (l.total + 1024));
          const int occ =
              std::max(1, std::min({by_smem, by_regs, caps.max_threads_per_sm / T, caps.max_blocks_per_sm}));
          const int64_t blocks = fused_block_blocks(s, FusedBlockVariant{th, tw, 2});
          const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sms) * occ));
          const double cost = waves * std::max(occ * throughput, latency);
          if (best.tile_h == 0 || cost < best_cost * 0.999) {
            best = v;
            best_cost = cost;
          }
        }
      }
    }
    if (best.tile_h == 0)
      why = "no tile fits " + std::to_string(caps.smem_per_block_optin) + " bytes of shared memory and " +
            std::to_string(kFusedBlockFfmaThreads) + " projection threads with halos costing at most x" +
            std::to_string(kFusedBlockMaxRecompute).substr(0, 3);
  }
  if (why_not != nullptr) *why_not = why;
  return best;
}

double fused_block_unfused_intensity(const FusedBlockShape& s) {
  const double in_px = static_cast<double>(s.in_h) * s.in_w, out_px = static_cast<double>(s.out_h) * s.out_w;
  const double E = s.expanded;
  const double flops =
      2.0 * (in_px * s.in_channels * E + out_px * E * 9.0 + out_px * E * static_cast<double>(s.out_channels));
  // Each layer reads its input and writes its output; the projection reads the residual too.
  const double values = in_px * s.in_channels + 2.0 * in_px * E + 2.0 * out_px * E + out_px * s.out_channels +
                        (s.residual ? out_px * s.out_channels : 0.0);
  return values > 0 ? flops / (values * 4.0) : 0.0;
}

int64_t fused_block_ffma_blocks(const FusedBlockShape& s, const FusedBlockFfmaVariant& v) {
  return fused_block_blocks(s, FusedBlockVariant{v.tile_h, v.tile_w, 2});
}

double fused_block_ffma_recompute_factor(const FusedBlockShape& s, const FusedBlockFfmaVariant& v) {
  return fused_block_recompute_factor(s, FusedBlockVariant{v.tile_h, v.tile_w, 2});
}

std::string to_string(const FusedBlockFfmaVariant& v) {
  return "block ffma tile " + std::to_string(v.tile_h) + "x" + std::to_string(v.tile_w) + " chunk " +
         std::to_string(kFusedBlockFfmaChunk) + " projection " + std::to_string(v.px) + "x" + std::to_string(4 * v.nc);
}

// ---- the stem and the first block (fused_stem) ----------------------------------------------------------

int fused_stem_smem_bytes(const FusedStemShape& s, int tile_h) {
  const int st = std::max(1, s.stem_stride);
  const int rows = tile_h + 2, cols = kFusedStemTileW + 2;  // the stem's map the tile's depthwise reads
  const int window = (3 * ((rows - 1) * st + 3) * fused_stem_window_pitch(st) + 3) / 4 * 4;  // 16-byte multiple
  const int e = dtype_bytes(s.dtype), ld = s.stem_channels + 16 / e;  // pitch: 16 bytes more than a pixel
  const int tile = tile_h * kFusedStemTileW;
  return (fused_stem_offsets(s.stem_channels, s.out_channels).total + window) * 4 + rows * cols * ld * e +
         tile * ld * e;
}

std::string fused_stem_refusal(const FusedStemShape& s) {
  if (s.batch < 1 || s.in_h < 1 || s.in_w < 1 || s.stem_h < 1 || s.stem_w < 1 || s.out_h < 1 || s.out_w < 1 ||
      s.stem_pad_top < 0 || s.stem_pad_left < 0 || s.dw_pad_top < 0 || s.dw_pad_left < 0)
    return "sizes must be positive, pads not negative";
  bool built = false;
  for (const FusedStemChannels& c : kFusedStemChannels)
    built = built || (c.stem == s.stem_channels && c.out == s.out_channels);
  if (!built) {
    std::string pairs;
    for (const FusedStemChannels& c : kFusedStemChannels)
      pairs += (pairs.empty() ? "" : ", ") + std::to_string(c.stem) + "->" + std::to_string(c.out);
    return "built for the channel pairs " + pairs + " (MobileNetV2's widths), not " + std::to_string(s.stem_channels) +
           "->" + std::to_string(s.out_channels);
  }
  if (s.stem_stride != 2) return "stem stride " + std::to_string(s.stem_stride) + " (2 only)";
  if (s.batch > 65535) return "batch " + std::to_string(s.batch) + " above 65535";
  return "";
}

int64_t fused_stem_blocks(const FusedStemShape& s, const FusedStemVariant& v) {
  if (v.tile_h < 1) return 0;
  return ceil_div(s.out_h, v.tile_h) * ceil_div(s.out_w, kFusedStemTileW) * static_cast<int64_t>(s.batch);
}

FusedStemVariant choose_fused_stem_variant(const FusedStemShape& s, const DeviceCaps& caps, std::string* why_not) {
  std::string why = fused_stem_refusal(s);
  FusedStemVariant v;
  if (why.empty()) {
    v.tile_h = 16;
    if (fused_stem_blocks(s, v) * 3 < static_cast<int64_t>(caps.num_sms) * 2) v.tile_h = 8;
    if (fused_stem_smem_bytes(s, v.tile_h) > caps.smem_per_block_optin) v.tile_h = 8;
    if (fused_stem_smem_bytes(s, v.tile_h) > caps.smem_per_block_optin) {
      why = "needs " + std::to_string(fused_stem_smem_bytes(s, v.tile_h)) + " bytes of shared memory, the GPU offers " +
            std::to_string(caps.smem_per_block_optin);
      v = FusedStemVariant{};
    }
  }
  if (why_not != nullptr) *why_not = why;
  return v;
}

double fused_stem_recompute_factor(const FusedStemShape& s, const FusedStemVariant& v) {
  if (v.tile_h < 1) return 1.0;
  auto covered = [](int out, int tile, int pad, int in) {  // stem pixels inside the map, summed over the tiles
    double sum = 0;
    for (int o0 = 0; o0 < out; o0 += tile)
      sum += std::max(0, std::min(o0 - pad + tile + 2, in) - std::max(o0 - pad, 0));
    return sum;
  };
  const double exact = static_cast<double>(s.stem_h) * s.stem_w;
  const double computed =
      covered(s.out_h, v.tile_h, s.dw_pad_top, s.stem_h) * covered(s.out_w, kFusedStemTileW, s.dw_pad_left, s.stem_w);
  return exact > 0 ? computed / exact : 1.0;
}

std::string to_string(const FusedStemVariant& v) {
  return "stem+block1 tile " + std::to_string(v.tile_h) + "x" + std::to_string(kFusedStemTileW);
}

}  // namespace mnv2::kernels
