// The cuda backend's planner without a GPU: the real MobileNetV2 topology planned for a T4, an A100, an
// RTX 4090 and an H200 at several batch sizes, precisions and options; checks what the plan promises the
// lowering (coverage, fusion, tiles that fit the device) and that the hardware changes the choices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/tiles.h"  // the tensor-core GEMM's shared memory per tile (checked against the kernel's layout)
#include "mnv2/cuda_plan.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/option_values.h"

namespace mnv2::test {
namespace {

const Model& model() {
  static const Model m = builtin_mobilenet_v2();
  return m;
}

std::vector<GpuProperties> gpus() {
  return {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090(), GpuProperties::h200()};
}

PrepareConfig config(int batch, Precision precision, CudaOptions::Variant variant = CudaOptions::Variant::fast,
                     CudaOptions::Fusion fusion = CudaOptions::Fusion::none) {
  PrepareConfig c;
  c.batch = batch;
  c.precision = precision;
  c.cuda.variant = variant;
  c.cuda.fusion = fusion;
  return c;
}

bool is_gemm(CudaKernel k) {
  return k == CudaKernel::pointwise_gemm || k == CudaKernel::linear_gemm || k == CudaKernel::im2col_gemm;
}
bool is_tc(CudaKernel k) { return k == CudaKernel::pointwise_tc || k == CudaKernel::linear_tc; }

// Every property a plan must have whatever the GPU and options.
void check_plan(const CudaPlan& plan, const std::string& what) {
  SCOPED_TRACE(what);
  const int n = static_cast<int>(model().layers.size());
  const bool fast = plan.config.cuda.variant == CudaOptions::Variant::fast;
  const std::string prefix = fast ? "fast: " : "baseline: ";
  int next = 0;
  for (const CudaStep& s : plan.steps) {
    SCOPED_TRACE(s.name + ": " + s.variant);
    // Every layer exactly once, in order: each step covers the next layers, ascending and contiguous.
    ASSERT_FALSE(s.layers.empty());
    for (int l : s.layers) EXPECT_EQ(l, next++);
    EXPECT_EQ(s.output_layer, s.layers.back());
    EXPECT_EQ(s.variant.rfind(prefix, 0), 0u);
    if (!fast) EXPECT_EQ(s.layers.size(), 1u);
    const std::string tag =
        std::string(s.half ? "tc-fp16 " : "tc-tf32 ") + s.launch.tile + (s.launch.vec ? " vec" : " scalar");
    if (is_gemm(s.kernel)) {
      // The variant string names the tile that runs.
      EXPECT_NE(s.variant.find("gemm " + s.launch.tile + (s.launch.vec ? " vec4" : " scalar")), std::string::npos);
      EXPECT_FALSE(s.tensor_cores);
    }
    if (is_tc(s.kernel)) {
      EXPECT_NE(s.variant.find("gemm " + tag), std::string::npos);
      EXPECT_TRUE(s.tensor_cores);
      kernels::TcTile tile{};
      ASSERT_TRUE(kernels::parse_tc_tile(s.launch.tile, &tile));
      const int64_t smem = kernels::gemm_tc_smem_bytes(
          tile, plan.config.precision == Precision::fp16 ? kernels::DType::f16 : kernels::DType::f32);
      EXPECT_LE(smem, plan.gpu.smem_per_block_optin);
      // cp.async (the three-stage copy pipeline) exists from sm_80 on; below it the plan says so.
      EXPECT_EQ(s.variant.find("no cp.async") != std::string::npos, plan.gpu.effective_code_arch() < 80);
    }
    if (s.kernel == CudaKernel::expand_depthwise) {
      // The block's shared memory fits what the device lets a block opt in to (and the kernel's own cap).
      const CudaStep& fused = s;
      const Layer& expand = model().layers[static_cast<size_t>(fused.layers.front())];
      const Layer& dw = model().layers[static_cast<size_t>(fused.layers.front() + 2)];
      const int64_t smem = int64_t{kernels::expand_depthwise_smem(expand.conv.in_channels, dw.conv.stride_h,
                                                                  dw.conv.stride_w, s.launch.tile_h, s.launch.tile_w)
                                       .total} *
                           4;
      EXPECT_LE(smem, std::min<int64_t>(plan.gpu.smem_per_block_optin, kernels::kExpandDwMaxSmem));
      EXPECT_GE(s.launch.tile_h, 1);
      EXPECT_NE(s.variant.find("tile " + s.launch.tile), std::string::npos);
      EXPECT_GE(s.layers.size(), 3u);
    }
    if (s.kernel == CudaKernel::fused_block) {
      // fp16 and tf32 (compute_80 code only, tensor cores) or fp32 (FFMA, any code); the layout fits the device and
      // the accumulators the build.
      const bool half = plan.config.precision == Precision::fp16;
      const bool tc = half || plan.config.precision == Precision::tf32;
      if (tc) EXPECT_GE(plan.gpu.effective_code_arch(), 80);
      EXPECT_TRUE(s.half == half && s.half_output == half && s.nhwc_output && s.tensor_cores == tc);
      const int first = s.layers.front();
      const Layer& expand = model().layers[static_cast<size_t>(first)];
      const Layer& dw = model().layers[static_cast<size_t>(first + 2)];
      const Layer& project = model().layers[static_cast<size_t>(first + 4)];
      ASSERT_TRUE(s.layers.size() == 5u || s.layers.size() == 6u);
      EXPECT_TRUE(expand.conv.pointwise() && dw.conv.depthwise() && project.conv.pointwise());
      EXPECT_EQ(s.clip_layer, first + 1);
      EXPECT_EQ(s.dw_clip_layer, first + 3);
      EXPECT_EQ(s.residual >= 0, s.layers.size() == 6u);
      if (s.residual >= 0) EXPECT_EQ(s.residual, expand.inputs.front());
      kernels::FusedBlockShape fs;
      fs.in_channels = expand.conv.in_channels;
      fs.expanded = expand.conv.out_channels;
      fs.out_channels = project.conv.out_channels;
      fs.stride = dw.conv.stride_h;
      if (tc) {
        const kernels::FusedBlockMath math = half ? kernels::FusedBlockMath::f16 : kernels::FusedBlockMath::tf32;
        EXPECT_LE(kernels::fused_block_layout(fs, s.launch.tile_h, s.launch.tile_w, math).total,
                  plan.gpu.smem_per_block_optin);
        EXPECT_LE(kernels::fused_block_items(fs, s.launch.tile_h, s.launch.tile_w), s.launch.items);
        EXPECT_TRUE(s.launch.items == 2 || s.launch.items == 4 || s.launch.items == 6);
        EXPECT_NE(s.variant.find("block tile " + s.launch.tile), std::string::npos);
        EXPECT_EQ(s.variant.find(" tf32 ") != std::string::npos, !half) << s.variant;
      } else {
        const kernels::FusedBlockFfmaVariant v{s.launch.tile_h, s.launch.tile_w, s.launch.px, s.launch.nc};
        EXPECT_EQ(kernels::fused_block_ffma_variant_refusal(fs, v, plan.gpu.smem_per_block_optin), "");
        EXPECT_NE(s.variant.find("block ffma tile " + s.launch.tile), std::string::npos);
        EXPECT_NE(s.variant.find("fp32 FFMA"), std::string::npos);
      }
    }
    if (s.kernel == CudaKernel::fused_stem) {
      // The network's first five layers (stem, clip, depthwise, clip, projection), every precision (tf32 takes the
      // float32 FFMA kernel); the tile's shared memory fits the device.
      EXPECT_EQ(s.layers, (std::vector<int>{0, 1, 2, 3, 4}));
      EXPECT_EQ(s.clip_layer, 1);
      EXPECT_EQ(s.dw_clip_layer, 3);
      EXPECT_TRUE(s.nhwc_output);
      EXPECT_EQ(s.half_output, plan.config.precision == Precision::fp16);
      EXPECT_EQ(s.tensor_cores, s.half && plan.gpu.effective_code_arch() >= 80);
      EXPECT_NE(s.variant.find(s.tensor_cores ? "on tensor cores" : "FFMA"), std::string::npos) << s.variant;
      kernels::FusedStemShape fs;
      fs.stem_channels = model().layers[0].conv.out_channels;
      fs.dtype = s.half ? kernels::DType::f16 : kernels::DType::f32;
      EXPECT_LE(kernels::fused_stem_smem_bytes(fs, s.launch.tile_h), plan.gpu.smem_per_block_optin);
      EXPECT_TRUE(s.launch.tile_h == 8 || s.launch.tile_h == 16);
      EXPECT_NE(s.variant.find("stem+block1 tile " + s.launch.tile), std::string::npos);
    }
    if (s.launch.splits > 1) EXPECT_NE(s.variant.find("splitk" + std::to_string(s.launch.splits)), std::string::npos);
  }
  EXPECT_EQ(next, n);
  if (fast && plan.config.precision != Precision::fp32)
    for (const CudaStep& s : plan.steps)
      if (s.kernel == CudaKernel::pointwise_gemm || s.kernel == CudaKernel::linear_gemm)
        ADD_FAILURE() << "an FFMA GEMM in " << to_string(plan.config.precision) << ": " << s.variant;
}

TEST(CudaPlanner, CoversEveryLayerOnceOnEveryGpuBatchAndPrecision) {
  for (const GpuProperties& gpu : gpus())
    for (int batch : {1, 8, 256})
      for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
        const std::string what = gpu.name + " batch " + std::to_string(batch) + " " + to_string(p);
        if (p == Precision::tf32 && gpu.arch() < 80) continue;  // refused: RefusesTf32BelowSm80
        const CudaPlan plan = plan_cuda_network(model(), config(batch, p), gpu);
        check_plan(plan, what);
        // The fast path fuses bias, clip and residual: 54 steps for the 99 layers in every mode.
        EXPECT_EQ(plan.steps.size(), 54u) << what;
        if (p == Precision::fp32) {
          check_plan(plan_cuda_network(model(), config(batch, p, CudaOptions::Variant::baseline), gpu),
                     what + " baseline");
          check_plan(plan_cuda_network(
                         model(), config(batch, p, CudaOptions::Variant::fast, CudaOptions::Fusion::expand_dw), gpu),
                     what + " expand_dw");
        }
      }
}

TEST(CudaPlanner, FastPathFusesClipsResidualsAndPadsTheLogits) {
  const CudaPlan plan = plan_cuda_network(model(), config(1, Precision::fp32), GpuProperties::h200());
  int residuals = 0, clips = 0;
  for (const CudaStep& s : plan.steps) {
    residuals += s.residual >= 0;
    clips += s.clip_layer >= 0;
    if (s.residual >= 0) EXPECT_NE(s.name.find("ResidualAdd"), std::string::npos) << s.name;
  }
  EXPECT_EQ(residuals, 10);  // MobileNetV2's ten residual blocks
  EXPECT_EQ(clips, 35);      // every ReLU6 follows a convolution it is the only reader of
  EXPECT_EQ(plan.steps.front().kernel, CudaKernel::direct_conv);
  EXPECT_NE(plan.steps.front().variant.find("direct nchw co"), std::string::npos) << plan.steps.front().variant;
  EXPECT_NE(plan.steps.front().variant.find("3x3x3"), std::string::npos) << plan.steps.front().variant;
  const CudaStep& linear = plan.steps.back();
  EXPECT_EQ(linear.kernel, CudaKernel::linear_gemm);
  EXPECT_EQ(linear.padded_features, 1004);
  EXPECT_NE(linear.variant.find("1001 features padded to 1004"), std::string::npos) << linear.variant;
  // fp16 pads to 8 halves.
  const CudaPlan half = plan_cuda_network(model(), config(1, Precision::fp16), GpuProperties::h200());
  EXPECT_EQ(half.steps.back().padded_features, 1008);
  EXPECT_NE(half.steps.back().variant.find("-> fp32 logits"), std::string::npos) << half.steps.back().variant;
}

TEST(CudaPlanner, ExpandDepthwiseFusesInFp32OnlyAndWhereItPays) {
  for (const GpuProperties& gpu : gpus()) {
    SCOPED_TRACE(gpu.name);
    const CudaPlan fused = plan_cuda_network(
        model(), config(1, Precision::fp32, CudaOptions::Variant::fast, CudaOptions::Fusion::expand_dw), gpu);
    int count = 0;
    for (const CudaStep& s : fused.steps) {
      if (s.kernel != CudaKernel::expand_depthwise) continue;
      ++count;
      // Expansion, its clip, the depthwise convolution and its clip: four layers, one kernel.
      EXPECT_EQ(s.layers.size(), 4u) << s.name;
      EXPECT_NE(s.variant.find("expanded map in shared memory only"), std::string::npos) << s.variant;
      EXPECT_LE(s.launch.tile_h, 8);
    }
    EXPECT_GT(count, 0);
    EXPECT_LT(fused.steps.size(), 54u);
    // fp16 keeps two steps and says why.
    const CudaPlan half = plan_cuda_network(
        model(), config(1, Precision::fp16, CudaOptions::Variant::fast, CudaOptions::Fusion::expand_dw), gpu);
    EXPECT_EQ(half.steps.size(), 54u);
    int noted = 0;
    for (const CudaStep& s : half.steps) {
      EXPECT_NE(s.kernel, CudaKernel::expand_depthwise);
      noted += s.variant.find("not fused in fp16") != std::string::npos;
    }
    EXPECT_GT(noted, 0);
  }
}

TEST(CudaPlanner, RefusesTf32BelowSm80AndReducedPrecisionInTheBaseline) {
  try {
    plan_cuda_network(model(), config(1, Precision::tf32), GpuProperties::t4());
    ADD_FAILURE() << "tf32 on a T4 must be refused";
  } catch (const UsageError&) {
    ADD_FAILURE() << "not a usage error: the hardware cannot";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tf32 needs TF32 tensor cores"), std::string::npos) << e.what();
  }
  // An H200 running compute_75 PTX has the hardware but not the instructions in its code.
  GpuProperties old_code = GpuProperties::h200();
  old_code.code_arch = 75;
  try {
    plan_cuda_network(model(), config(1, Precision::tf32), old_code);
    ADD_FAILURE() << "tf32 in compute_75 code must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compute_80"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(tf32_refusal(GpuProperties::a100()).empty());
  EXPECT_FALSE(tf32_refusal(GpuProperties::t4()).empty());
  // The same compute_75 code runs fp16 without cp.async, and says so.
  const CudaPlan half = plan_cuda_network(model(), config(8, Precision::fp16), old_code);
  check_plan(half, "H200 with compute_75 code, fp16");
  EXPECT_THROW(
      plan_cuda_network(model(), config(1, Precision::fp16, CudaOptions::Variant::baseline), GpuProperties::h200()),
      UsageError);
  EXPECT_THROW(plan_cuda_network(model(), config(0, Precision::fp32), GpuProperties::h200()), UsageError);
}

TEST(CudaPlanner, TilesFitTheDeviceAndFollowItsProperties) {
  // fp16's 128x128 tensor-core tile needs 65.5 KB of shared memory: more than a T4 block may have.
  EXPECT_GT(kernels::gemm_tc_smem_bytes(kernels::TcTile::t128x128, kernels::DType::f16),
            GpuProperties::t4().smem_per_block_optin);
  std::set<std::string> t4_tiles, h200_tiles;
  for (int batch : {8, 64, 256}) {
    for (const CudaStep& s : plan_cuda_network(model(), config(batch, Precision::fp16), GpuProperties::t4()).steps)
      if (is_tc(s.kernel)) t4_tiles.insert(s.launch.tile);
    for (const CudaStep& s : plan_cuda_network(model(), config(batch, Precision::fp16), GpuProperties::h200()).steps)
      if (is_tc(s.kernel)) h200_tiles.insert(s.launch.tile);
  }
  EXPECT_EQ(t4_tiles.count("128x128"), 0u);
  EXPECT_EQ(h200_tiles.count("128x128"), 1u);  // the large expansions at batch 256 take it where it fits

  // The FFMA GEMM's occupancy comes from registers, threads and blocks per SM: the H200's equal the figures the
  // cost model was fitted with; the T4 (1024 threads per SM) and the 4090 (1536) hold fewer large blocks.
  const kernels::DeviceCaps h200;  // the defaults describe the H200
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x128, h200), 1);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x64, h200), 3);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t64x64, h200), 4);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x32, h200), 5);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t32x32, h200), 16);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t32x32k32, h200), 7);
  // The warp-tiled tiles: their launch bounds hold them to 128 registers (t128x96w and t128x32w 168), so 16 warps
  // share a multiprocessor (12 with t128x96w).
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x128w, h200), 2);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x96w, h200), 2);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x64w, h200), 4);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x32w, h200), 6);
  kernels::DeviceCaps t4 = h200;
  t4.max_threads_per_sm = 1024;
  t4.max_blocks_per_sm = 16;
  t4.smem_per_sm = 64 * 1024;
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t64x64, t4), 4);
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t32x32k32, t4), 3);  // 17.4 KB of shared memory each
  EXPECT_EQ(kernels::gemm_blocks_per_sm(kernels::GemmTile::t128x32w, t4), 5);   // 10 KB each (no padding)
}

TEST(CudaPlanner, WarpTiledGemmTilesAreNamedAndRunOnlyWhenForced) {
  const kernels::DeviceCaps h200;
  const std::pair<kernels::GemmTile, int> tiles[] = {{kernels::GemmTile::t128x128w, 128},
                                                     {kernels::GemmTile::t128x96w, 96},
                                                     {kernels::GemmTile::t128x64w, 64},
                                                     {kernels::GemmTile::t128x32w, 32}};
  for (const auto& [t, bn] : tiles) {
    kernels::GemmTile parsed{};
    ASSERT_TRUE(kernels::parse_gemm_tile(kernels::to_string(t), &parsed)) << kernels::to_string(t);
    EXPECT_EQ(parsed, t);
    // Forced, on any shape: the tile asked for, a split only where allowed.
    const kernels::GemmVariant v = kernels::choose_gemm_variant({49, 1280, 320, 1, true}, h200, false, &t);
    EXPECT_EQ(v.tile, t);
    EXPECT_EQ(v.splits, 1);
    EXPECT_EQ(kernels::gemm_tile_count(200, 1280, t), 2 * ((1280 + bn - 1) / bn));  // 128 rows a tile
  }
  const auto chosen = [&](int m, int n, int k) {
    return std::string(kernels::to_string(kernels::choose_gemm_variant({m, n, k, 1, true}, h200, true).tile));
  };
  // Not chosen unless forced: measured slower than the tiles they would replace (tiles.cpp, kChooseUnmeasured).
  for (const auto& [m, n, k] :
       {std::tuple{256 * 49, 1280, 320}, std::tuple{256 * 196, 96, 576}, std::tuple{256 * 196, 576, 96},
        std::tuple{256 * 196, 64, 384}, std::tuple{256 * 12544, 96, 16}})
    EXPECT_EQ(chosen(m, n, k).back() == 'w', false) << m << "x" << n << "x" << k << ": " << chosen(m, n, k);
  // Batch 1's latency-bound 7x7 GEMMs keep the 32-deep slices and split-K that were measured best.
  EXPECT_EQ(chosen(49, 160, 960), "32x32k32");
  EXPECT_EQ(chosen(49, 1280, 320), "32x32k32");
}

TEST(CudaPlanner, PlansDifferWhereTheHardwareDiffers) {
  // Same network and options, four GPUs: the SM counts, shared memory and bandwidth change the choices.
  for (int batch : {1, 256})
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      std::vector<std::vector<std::string>> variants;
      for (const GpuProperties& gpu : gpus()) {
        std::vector<std::string> v;
        for (const CudaStep& s : plan_cuda_network(model(), config(batch, p), gpu).steps) v.push_back(s.variant);
        variants.push_back(v);
      }
      const std::string what = "batch " + std::to_string(batch) + " " + to_string(p);
      EXPECT_NE(variants[0], variants[3]) << "T4 vs H200, " << what;
      if (batch == 256 && p == Precision::fp16) {
        EXPECT_NE(variants[1], variants[3]) << "A100 vs H200, " << what;
        EXPECT_NE(variants[2], variants[3]) << "RTX 4090 vs H200, " << what;
      }
    }
  // The same GPU twice: the same plan (the planner has no hidden state).
  const CudaPlan a = plan_cuda_network(model(), config(8, Precision::fp16), GpuProperties::a100());
  const CudaPlan b = plan_cuda_network(model(), config(8, Precision::fp16), GpuProperties::a100());
  EXPECT_EQ(describe(a), describe(b));
}

// The GEMM tiles (and split-K counts) the backend chose on the real H200 (device run of 2026-11-23, from the
// device's own attributes), in step order: the H200 preset must plan the same, so a plan printed here for an H200
// is the one that runs there.
TEST(CudaPlanner, H200PresetPlansWhatTheRealH200Ran) {
  const struct {
    int batch;
    Precision precision;
    const char* tiles;
  } cases[] = {
      {1, Precision::fp32,
       "32x32k32 128x32 32x32k32 32x32k32 32x32k32/5 32x32k32 32x32k32/5 32x32k32 32x32k32/6 32x32k32 32x32k32/6 "
       "32x32k32 32x32k32/6 32x32k32 32x32k32/12 32x32k32 32x32k32/12 32x32k32 32x32k32/12 32x32k32 32x32k32/12 "
       "32x32k32 32x32k32/18 32x32k32 32x32k32/18 32x32k32 32x32k32/18 32x32k32/5 32x32k32/30 32x32k32/5 32x32k32/30 "
       "32x32k32/5 32x32k32/30 32x32k32/10 32x32k32/20"},
      {1, Precision::fp16,
       "32x32 64x64 32x32 128x32 32x32 128x32 32x32 32x32 32x32/3 32x32 32x32/3 32x32 32x32/3 32x32 32x32/6 32x32 "
       "32x32/6 32x32 32x32/6 32x32 32x32/6 32x32 32x32/6 32x32 32x32/6 32x32 32x32/9 32x32 32x32/10 32x32 32x32/10 "
       "32x32 32x32/10 64x64/5 32x32/8"},
      {256, Precision::fp16,
       "128x32 128x32 128x32 128x32 128x32 128x32 128x32 64x64 128x32 64x64 128x32 64x64 128x64 128x128 128x64 "
       "128x128 128x64 128x128 128x64 128x128 128x128 128x128 128x128 128x128 128x128 128x128 128x64 128x128 128x64 "
       "128x128 128x64 128x128 128x64 128x128 128x64/4"},
      {256, Precision::tf32,
       "128x32 128x32 128x32 128x32 128x32 128x32 128x32 64x64 128x32 64x64 128x32 64x64 128x64 128x128 128x64 "
       "128x128 128x64 128x128 128x64 128x128 128x128 128x128 128x128 128x128 128x128 128x128 128x64 128x128 128x64 "
       "128x128 128x64 128x128 128x64 128x128 128x128/8"},
  };
  for (const auto& c : cases) {
    std::string tiles;
    for (const CudaStep& s : plan_cuda_network(model(), config(c.batch, c.precision), GpuProperties::h200()).steps) {
      if (!is_gemm(s.kernel) && !is_tc(s.kernel)) continue;
      tiles += (tiles.empty() ? "" : " ") + s.launch.tile +
               (s.launch.splits > 1 ? "/" + std::to_string(s.launch.splits) : "");
    }
    EXPECT_EQ(tiles, c.tiles) << "batch " << c.batch << " " << to_string(c.precision);
  }
}

TEST(CudaPlanner, ForcedGemmTileIsHonouredAndBadOnesRefused) {
  PrepareConfig c = config(8, Precision::fp32);
  c.cuda.gemm_tile = "128x64";
  for (const CudaStep& s : plan_cuda_network(model(), c, GpuProperties::a100()).steps)
    if (is_gemm(s.kernel)) EXPECT_EQ(s.launch.tile, "128x64") << s.variant;
  c.cuda.gemm_tile = "7x7";
  EXPECT_THROW(plan_cuda_network(model(), c, GpuProperties::a100()), UsageError);
  // 128x128 in fp16 does not fit a T4: forcing it is an error, not a silent substitute.
  PrepareConfig half = config(8, Precision::fp16);
  half.cuda.gemm_tile = "128x128";
  EXPECT_THROW(plan_cuda_network(model(), half, GpuProperties::t4()), Error);
  EXPECT_NO_THROW(plan_cuda_network(model(), half, GpuProperties::h200()));
}

// The launch chain at batch 1 on the H200: 54 steps, and as many reduction kernels as split GEMMs unless the
// split GEMMs reduce in the kernel; no input transpose (the stem reads NCHW) and no tail (float32 1x1 logits).
TEST(CudaPlanner, KernelCountFollowsTheSplitKReduction) {
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    SCOPED_TRACE(to_string(precision));
    PrepareConfig c = config(1, precision);
    EXPECT_EQ(c.cuda.splitk, CudaOptions::SplitK::separate) << "the default: measured faster (PERFORMANCE.md 9b)";
    const CudaPlan separate = plan_cuda_network(model(), c, GpuProperties::h200());
    c.cuda.splitk = CudaOptions::SplitK::in_kernel;
    const CudaPlan in_kernel = plan_cuda_network(model(), c, GpuProperties::h200());
    ASSERT_EQ(in_kernel.steps.size(), 54u);
    ASSERT_EQ(separate.steps.size(), 54u);
    int splits = 0;
    for (size_t i = 0; i < in_kernel.steps.size(); ++i) {
      const CudaStep& a = in_kernel.steps[i];
      const CudaStep& b = separate.steps[i];
      SCOPED_TRACE(a.variant);
      EXPECT_EQ(a.launch.splits, b.launch.splits);  // the same choices, only the reduction differs
      EXPECT_EQ(a.launch.tile, b.launch.tile);
      EXPECT_EQ(a.kernels, 1);
      EXPECT_EQ(b.kernels, b.launch.splits > 1 ? 2 : 1);
      EXPECT_EQ(a.launch.splitk_in_kernel, a.launch.splits > 1);
      EXPECT_FALSE(b.launch.splitk_in_kernel);
      EXPECT_EQ(a.variant.find("in-kernel") != std::string::npos, a.launch.splits > 1);
      EXPECT_EQ(b.variant.find("in-kernel"), std::string::npos);
      splits += a.launch.splits > 1 ? 1 : 0;
    }
    EXPECT_GE(splits, 10) << "batch 1 splits the 14x14 and 7x7 GEMMs";
    EXPECT_EQ(in_kernel.tail_kernels, 0);
    EXPECT_EQ(planned_kernels(in_kernel), 54);
    EXPECT_EQ(planned_kernels(separate), 54 + splits);
    EXPECT_GT(in_kernel.gemm_tile_counters, 0);
    EXPECT_EQ(separate.gemm_tile_counters, 0);
    EXPECT_NE(describe(in_kernel).find("54 kernels per run"), std::string::npos) << describe(in_kernel);
    EXPECT_NE(describe(separate).find(std::to_string(54 + splits) + " kernels per run"), std::string::npos);
  }
  // The cluster reduction: the tensor-core GEMMs (fp16) split at most kClusterMaxSplits ways and add their pieces in
  // their cluster (one kernel, no workspace); the FFMA GEMMs (fp32) keep the second kernel and the plan says why;
  // without clusters (an A100, or compute_80 code on the H200) every split keeps the second kernel, with the reason.
  for (Precision precision : {Precision::fp16, Precision::fp32}) {
    SCOPED_TRACE(to_string(precision));
    PrepareConfig c = config(1, precision);
    c.cuda.splitk = CudaOptions::SplitK::cluster;
    const CudaPlan cluster = plan_cuda_network(model(), c, GpuProperties::h200());
    int clustered = 0, separate = 0;
    for (const CudaStep& s : cluster.steps) {
      SCOPED_TRACE(s.variant);
      if (s.launch.splits <= 1) continue;
      const bool tc = s.kernel == CudaKernel::pointwise_tc || s.kernel == CudaKernel::linear_tc;
      EXPECT_EQ(s.launch.splitk_cluster, tc);
      EXPECT_FALSE(s.launch.splitk_in_kernel);
      if (tc) {
        EXPECT_LE(s.launch.splits, kernels::kClusterMaxSplits);
        EXPECT_EQ(s.kernels, 1);
        EXPECT_NE(s.variant.find(" dsmem"), std::string::npos);
        ++clustered;
      } else {
        EXPECT_EQ(s.kernels, 2);
        ++separate;
      }
    }
    const std::string chain = describe(cluster);
    if (precision == Precision::fp16) {
      EXPECT_GE(clustered, 10) << chain;
      EXPECT_EQ(separate, 0) << chain;
      EXPECT_EQ(cluster.gemm_workspace_floats, 0) << "no split keeps a workspace";
      EXPECT_NE(chain.find(std::to_string(clustered) + " split-K GEMMs reduced in their cluster"), std::string::npos)
          << chain;
    } else {
      EXPECT_EQ(clustered, 0) << chain;
      EXPECT_GE(separate, 10) << chain;
      EXPECT_NE(chain.find("tensor-core GEMMs only"), std::string::npos) << chain;
    }
    GpuProperties ampere_code = GpuProperties::h200();
    ampere_code.code_arch = 80;
    for (const GpuProperties& gpu : {GpuProperties::a100(), ampere_code}) {
      const CudaPlan none = plan_cuda_network(model(), c, gpu);
      for (const CudaStep& s : none.steps) EXPECT_FALSE(s.launch.splitk_cluster) << s.variant;
      if (precision == Precision::fp16)
        EXPECT_NE(describe(none).find("needs thread-block clusters"), std::string::npos) << describe(none);
    }
  }
  // Batch 256 splits the classifier alone: one kernel per step in the kernel, one more separately.
  PrepareConfig big = config(256, Precision::fp16);
  big.cuda.splitk = CudaOptions::SplitK::in_kernel;
  const CudaPlan large = plan_cuda_network(model(), big, GpuProperties::h200());
  EXPECT_EQ(planned_kernels(large), static_cast<int64_t>(large.steps.size()));
  big.cuda.splitk = CudaOptions::SplitK::separate;
  EXPECT_EQ(planned_kernels(plan_cuda_network(model(), big, GpuProperties::h200())),
            static_cast<int64_t>(large.steps.size()) + 1);
  // The baseline: im2col + GEMM per convolution (GEMM alone for 1x1 stride-1), one kernel per other layer, and
  // the reduction of a split GEMM (the classifier's).
  const CudaPlan base =
      plan_cuda_network(model(), config(3, Precision::fp32, CudaOptions::Variant::baseline), GpuProperties::a100());
  for (const CudaStep& s : base.steps) {
    const int reduction = s.launch.splits > 1 ? 1 : 0;
    if (s.kernel != CudaKernel::im2col_gemm) {
      EXPECT_EQ(s.kernels, 1 + reduction) << s.variant;
      continue;
    }
    const bool identity = s.variant.find("no im2col") != std::string::npos;
    const int chunks = (3 + s.launch.images_per_launch - 1) / s.launch.images_per_launch;
    EXPECT_EQ(s.kernels, chunks * ((identity ? 1 : 2) + reduction)) << s.variant;
  }
}

TEST(CudaPlanner, PdlOnlyWhereTheGpuAndTheCodeHaveIt) {
  PrepareConfig c = config(1, Precision::fp32);
  const CudaPlan h200 = plan_cuda_network(model(), c, GpuProperties::h200());
  EXPECT_TRUE(h200.pdl);
  EXPECT_EQ(h200.pdl_note, "");
  EXPECT_NE(describe(h200).find("PDL on"), std::string::npos) << describe(h200);
  // auto stops above batch 1 in fp32 and tf32 and above batch 64 in fp16 (measured slower above: run 15); on still
  // means on there.
  EXPECT_TRUE(plan_cuda_network(model(), config(1, Precision::fp16), GpuProperties::h200()).pdl);
  EXPECT_TRUE(plan_cuda_network(model(), config(1, Precision::tf32), GpuProperties::h200()).pdl);
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    const CudaPlan b8 = plan_cuda_network(model(), config(8, p), GpuProperties::h200());
    EXPECT_FALSE(b8.pdl) << to_string(p);
    EXPECT_EQ(b8.pdl_note, std::string("auto: off above batch 1 in ") + to_string(p));
  }
  for (int batch : {8, 64})
    EXPECT_TRUE(plan_cuda_network(model(), config(batch, Precision::fp16), GpuProperties::h200()).pdl);
  const CudaPlan fp16_b256 = plan_cuda_network(model(), config(256, Precision::fp16), GpuProperties::h200());
  EXPECT_FALSE(fp16_b256.pdl);
  EXPECT_EQ(fp16_b256.pdl_note, "auto: off above batch 64 in fp16");
  const CudaPlan big = plan_cuda_network(model(), config(64, Precision::fp32), GpuProperties::h200());
  EXPECT_FALSE(big.pdl);
  EXPECT_NE(big.pdl_note.find("above batch 1"), std::string::npos) << big.pdl_note;
  PrepareConfig forced = config(256, Precision::fp16);
  forced.cuda.pdl = CudaOptions::Pdl::on;
  EXPECT_TRUE(plan_cuda_network(model(), forced, GpuProperties::h200()).pdl);
  for (const GpuProperties& older : {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090()}) {
    const CudaPlan p = plan_cuda_network(model(), c, older);
    EXPECT_FALSE(p.pdl) << older.name;
    EXPECT_NE(p.pdl_note.find("9.0"), std::string::npos) << p.pdl_note;
  }
  GpuProperties jit = GpuProperties::h200();
  jit.code_arch = 75;  // compute_75 PTX on the H200: griddepcontrol is not in that code
  EXPECT_FALSE(plan_cuda_network(model(), c, jit).pdl);
  EXPECT_NE(plan_cuda_network(model(), c, jit).pdl_note.find("compute_75"), std::string::npos);
  PrepareConfig no_graph = c;
  no_graph.cuda.graph = CudaOptions::Graph::off;
  EXPECT_FALSE(plan_cuda_network(model(), no_graph, GpuProperties::h200()).pdl);
  PrepareConfig off = c;
  off.cuda.pdl = CudaOptions::Pdl::off;
  const CudaPlan p_off = plan_cuda_network(model(), off, GpuProperties::h200());
  EXPECT_FALSE(p_off.pdl);
  EXPECT_NE(describe(p_off).find("PDL off"), std::string::npos);
  // Asked for explicitly where it cannot run: refused, naming why.
  PrepareConfig on = c;
  on.cuda.pdl = CudaOptions::Pdl::on;
  EXPECT_TRUE(plan_cuda_network(model(), on, GpuProperties::h200()).pdl);
  EXPECT_THROW(plan_cuda_network(model(), on, GpuProperties::t4()), Error);
  EXPECT_THROW(plan_cuda_network(model(), on, jit), Error);
  // Under PDL the kernels load their weights before their wait; late_weights keeps PDL and moves them after it (the
  // comparison the early loads were measured against), and is refused where PDL is, naming itself.
  EXPECT_TRUE(plan_cuda_network(model(), on, GpuProperties::h200()).weights_before_wait);
  EXPECT_TRUE(h200.weights_before_wait);
  PrepareConfig late = config(8, Precision::fp16);
  late.cuda.pdl = CudaOptions::Pdl::late_weights;
  const CudaPlan p_late = plan_cuda_network(model(), late, GpuProperties::h200());
  EXPECT_TRUE(p_late.pdl);
  EXPECT_FALSE(p_late.weights_before_wait);
  EXPECT_NE(describe(p_late).find("PDL on, weights loaded after the wait"), std::string::npos) << describe(p_late);
  try {
    plan_cuda_network(model(), late, GpuProperties::a100());
    ADD_FAILURE() << "late_weights needs PDL";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pdl late_weights"), std::string::npos) << e.what();
  }
  // The option names parse both ways.
  for (CudaOptions::Pdl v : kCudaPdls) EXPECT_EQ(parse_cuda_pdl(to_string(v)), v);
  for (CudaOptions::SplitK v :
       {CudaOptions::SplitK::in_kernel, CudaOptions::SplitK::separate, CudaOptions::SplitK::cluster})
    EXPECT_EQ(parse_cuda_splitk(to_string(v)), v);
  EXPECT_THROW(parse_cuda_pdl("maybe"), UsageError);
  EXPECT_THROW(parse_cuda_splitk("later"), UsageError);
}

// Fusion block: which blocks become one fused_block step on each preset. Blocks 2..17 of MobileNetV2 have an
// expansion (block 1 starts with its depthwise convolution and stays unfused).
bool stem_fused(const CudaPlan& plan) {
  return !plan.steps.empty() && plan.steps.front().kernel == CudaKernel::fused_stem;
}

std::vector<int> fused_blocks(const CudaPlan& plan) {
  std::vector<int> first_layers;
  for (const CudaStep& s : plan.steps)
    if (s.kernel == CudaKernel::fused_block) first_layers.push_back(s.layers.front());
  return first_layers;
}

TEST(CudaPlanner, BlockFusionFusesEveryExpandingBlockAtLargeBatchesInFp16AndFp32) {
  for (const GpuProperties& gpu : {GpuProperties::a100(), GpuProperties::rtx4090(), GpuProperties::h200()})
    for (Precision precision : {Precision::fp16, Precision::fp32})
      for (int batch : {1, 8, 64, 256}) {
        SCOPED_TRACE(gpu.name + " " + to_string(precision) + " batch " + std::to_string(batch));
        const CudaPlan plan = plan_cuda_network(
            model(), config(batch, precision, CudaOptions::Variant::fast, CudaOptions::Fusion::block), gpu);
        check_plan(plan, gpu.name + " block");
        const std::vector<int> fused = fused_blocks(plan);
        // The stem + block 1 (3 steps unfused) is one step too; each fused block replaces 3 steps by 1.
        EXPECT_TRUE(stem_fused(plan));
        // 16-row tiles unless they leave a third of the multiprocessors idle: batch 1 (49 tiles) takes 8 rows.
        // (fp32's 16-row tile needs more shared memory than an RTX 4090's block may have: 8 rows there.)
        const bool large_smem = gpu.smem_per_block_optin >= 160 * 1024;
        if (precision == Precision::fp16 || large_smem)
          EXPECT_EQ(plan.steps.front().launch.tile_h, batch == 1 ? 8 : 16);
        EXPECT_EQ(plan.steps.size(), 54u - 2u - 2u * fused.size());
        int residuals = 0, noted = 0;
        for (const CudaStep& s : plan.steps) {
          residuals += s.kernel == CudaKernel::fused_block && s.residual >= 0;
          noted += s.variant.find("(fusion block: not fused: ") != std::string::npos;
          if (s.kernel == CudaKernel::fused_block) {
            EXPECT_EQ(s.name.find("Conv2d " + std::to_string(s.layers.front()) + " + "), 0u) << s.name;
            EXPECT_NE(s.name.find(" + Conv2d " + std::to_string(s.layers.front() + 4)), std::string::npos) << s.name;
          }
        }
        EXPECT_EQ(static_cast<int>(fused.size()) + noted, 16) << "each expanding block fused or says why not";
        // fp32 fuses only the memory-bound block 2 (the unfused layers' intensity; tiles.h:
        // kFusedBlockFfmaMaxIntensity), the others say why not (counted above).
        if (precision == Precision::fp32 && batch >= 8) EXPECT_EQ(fused, std::vector<int>{5});
        if (batch == 256 && precision == Precision::fp16) {
          EXPECT_EQ(fused.size(), 16u);
          EXPECT_EQ(residuals, 10);  // every residual block has an expansion
          EXPECT_EQ(plan.steps.size(), 20u);
        }
        // Small maps at batch 1 give too few blocks: not fused, and said so.
        if (batch == 1) EXPECT_LT(fused.size(), 16u);
      }
}

TEST(CudaPlanner, BlockFusionIsEveryPrecisionAndTensorCoresNeedCompute80Code) {
  // T4 (sm_75) and an H200 running compute_75 PTX: nothing fused in fp16, each expanding block says why; fp32's
  // FFMA kernel fuses block 2 there too.
  GpuProperties old_code = GpuProperties::h200();
  old_code.code_arch = 75;
  for (const GpuProperties& gpu : {GpuProperties::t4(), old_code}) {
    const CudaPlan plan = plan_cuda_network(
        model(), config(256, Precision::fp16, CudaOptions::Variant::fast, CudaOptions::Fusion::block), gpu);
    check_plan(plan, gpu.name + " block, old code");
    EXPECT_TRUE(fused_blocks(plan).empty());
    EXPECT_TRUE(stem_fused(plan)) << "the fused stem is FFMA: any architecture";
    int noted = 0;
    for (const CudaStep& s : plan.steps) noted += s.variant.find("compute_80") != std::string::npos;
    EXPECT_EQ(noted, 16);
    const CudaPlan fp32 = plan_cuda_network(
        model(), config(256, Precision::fp32, CudaOptions::Variant::fast, CudaOptions::Fusion::block), gpu);
    check_plan(fp32, gpu.name + " block fp32, old code");
    // Block 2 (the memory-bound one) fused, the others saying why not.
    int not_fused = 0;
    for (const CudaStep& s : fp32.steps) not_fused += s.variant.find("(fusion block: not fused: ") != std::string::npos;
    EXPECT_EQ(fused_blocks(fp32), std::vector<int>{5});
    EXPECT_EQ(not_fused, 15);
  }
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    const CudaPlan plan = plan_cuda_network(
        model(), config(256, p, CudaOptions::Variant::fast, CudaOptions::Fusion::block), GpuProperties::h200());
    check_plan(plan, std::string("h200 block ") + to_string(p));
    // Both fuse the stem + block 1 (FFMA); fp32 the memory-bound block 2 (FFMA), tf32 blocks 2-6 (4.4-8.1 FLOP/B) on
    // tensor cores; each says for the other blocks why not (their intensity).
    const bool fp32 = p == Precision::fp32;
    EXPECT_TRUE(stem_fused(plan));
    EXPECT_NE(plan.steps.front().variant.find("fp32 FFMA"), std::string::npos) << plan.steps.front().variant;
    EXPECT_EQ(plan.steps.size(), fp32 ? 50u : 42u);
    const std::vector<int> expected = fp32 ? std::vector<int>{5} : std::vector<int>{5, 10, 16, 21, 27};
    EXPECT_EQ(fused_blocks(plan), expected);
    int noted = 0;
    for (const CudaStep& s : plan.steps)
      noted += s.variant.find(fp32 ? "FLOP/byte unfused (> 5.0): the FFMA GEMMs are faster there"
                                   : "FLOP/byte unfused (> 8.5): the TF32 GEMMs are faster there") != std::string::npos;
    EXPECT_EQ(noted, fp32 ? 15 : 11);
    if (p == Precision::tf32) {
      for (const CudaStep& s : plan.steps) {
        if (s.kernel != CudaKernel::fused_block) continue;
        EXPECT_TRUE(s.tensor_cores && !s.half) << s.variant;  // TF32: float32 storage on tensor cores
        EXPECT_NE(s.variant.find(" tf32 "), std::string::npos) << s.variant;
        EXPECT_EQ(s.launch.px, 0);
        EXPECT_GT(s.launch.items, 0);
      }
    }
  }
}

// MobileNetV2's expanding blocks at batch 256: input, expanded and output channels, input map, stride.
constexpr int kBlockShapes[][5] = {{16, 96, 24, 112, 2},  {24, 144, 24, 56, 1}, {24, 144, 32, 56, 2},
                                   {32, 192, 32, 28, 1},  {32, 192, 64, 28, 2}, {64, 384, 64, 14, 1},
                                   {64, 384, 96, 14, 1},  {96, 576, 96, 14, 1}, {96, 576, 160, 14, 2},
                                   {160, 960, 160, 7, 1}, {160, 960, 320, 7, 1}};
kernels::FusedBlockShape block_shape(const int (&b)[5]) {
  kernels::FusedBlockShape t;
  t.batch = 256;
  t.in_channels = b[0];
  t.expanded = b[1];
  t.out_channels = b[2];
  t.in_h = t.in_w = b[3];
  t.stride = b[4];
  t.out_h = t.out_w = b[4] == 2 ? b[3] / 2 : b[3];
  t.pad_top = t.pad_left = b[4] == 2 ? 0 : 1;  // TF-style for stride 2, as the main model
  t.residual = b[4] == 1 && b[0] == b[2];
  return t;
}

// The fp32 FFMA block kernel's host side: its shared-memory layout (16-byte aligned parts, the window's pitch an odd
// number of 16-byte groups), a tile for every MobileNetV2 block shape on the H200 within the thread and window
// limits, the variant refusals, and the intensity rule the planner applies (block 2 only under the threshold).
TEST(CudaPlanner, FusedBlockFfmaLayoutChooserAndIntensity) {
  kernels::FusedBlockShape s{256, 24, 144, 24, 56, 56, 56, 56, 1, 1, 1, true};
  const kernels::FusedBlockFfmaLayout l = kernels::fused_block_ffma_layout(s, 8, 8);
  EXPECT_EQ(l.window_h, 10);
  EXPECT_EQ(l.m1, 100);
  EXPECT_EQ(l.pout, 64);
  EXPECT_EQ(l.k_pad, 24);
  EXPECT_EQ(l.e_pad, 160);
  EXPECT_EQ(l.co_pad, 24);
  for (int off : {l.x, l.ex, l.d, l.we, l.wp, l.vec, l.total}) EXPECT_EQ(off % 16, 0);
  for (int k : {16, 24, 32, 64, 96, 160}) {
    kernels::FusedBlockShape t = s;
    t.in_channels = k;
    EXPECT_EQ(kernels::fused_block_ffma_layout(t, 8, 8).ld_x / 4 % 2, 1) << k;
  }
  // 8x8 pixels x 24 channels: 2x4 micro-tiles need 32 x 6 = 192 threads; 8x8 x 160 channels with 2x4: 32 x 40.
  EXPECT_EQ(kernels::fused_block_ffma_items(s, 8, 8, 2, 1), 192);
  EXPECT_EQ(kernels::fused_block_ffma_variant_refusal(s, {8, 8, 2, 1}, 227 * 1024), "");
  kernels::FusedBlockShape wide = s;
  wide.out_channels = 160;
  wide.residual = false;
  EXPECT_NE(kernels::fused_block_ffma_variant_refusal(wide, {8, 8, 2, 1}, 227 * 1024).find("projection threads"),
            std::string::npos);
  EXPECT_NE(kernels::fused_block_ffma_variant_refusal(s, {8, 8, 3, 1}, 227 * 1024).find("not built"),
            std::string::npos);
  EXPECT_NE(kernels::fused_block_ffma_variant_refusal(s, {8, 8, 2, 1}, 16 * 1024).find("shared memory"),
            std::string::npos);
  kernels::FusedBlockShape odd = s;
  odd.in_channels = odd.out_channels = 6;
  EXPECT_NE(kernels::fused_block_ffma_shape_refusal(odd).find("multiples of 4"), std::string::npos);

  const kernels::DeviceCaps caps;  // the H200's defaults
  int under = 0;
  for (const auto& b : kBlockShapes) {
    const kernels::FusedBlockShape t = block_shape(b);
    std::string why;
    const kernels::FusedBlockFfmaVariant v = kernels::choose_fused_block_ffma_variant(t, caps, &why);
    EXPECT_EQ(why, "") << b[0] << "->" << b[1] << "->" << b[2];
    EXPECT_EQ(kernels::fused_block_ffma_variant_refusal(t, v, caps.smem_per_block_optin), "");
    EXPECT_GE(kernels::fused_block_ffma_recompute_factor(t, v), 1.0);
    const double intensity = kernels::fused_block_unfused_intensity(t);
    under += intensity <= kernels::kFusedBlockFfmaMaxIntensity;
    if (b[3] == 112) EXPECT_NEAR(intensity, 4.44, 0.01);              // block 2
    if (b[3] == 56 && b[4] == 1) EXPECT_NEAR(intensity, 6.33, 0.01);  // block 3
  }
  EXPECT_EQ(under, 1) << "only block 2's unfused layers are memory-bound";
}

// A block whose channels are not multiples of 8 stays unfused (the kernel's 16-byte accesses) and says so; with
// 16 channels the same network fuses. stem 3x3 (3 -> C), expand 1x1 (C -> 4C), ReLU6, dw 3x3, ReLU6, project
// 1x1 (4C -> C), add, pool, Linear.
Model block_model(int c) {
  Model m;
  m.input_channels = 3;
  m.num_classes = 10;
  auto conv = [](int in, int out, int k, int groups, int input) {
    Layer l;
    l.kind = LayerKind::Conv2d;
    l.inputs = {input};
    l.conv.in_channels = in;
    l.conv.out_channels = out;
    l.conv.kernel_h = l.conv.kernel_w = k;
    l.conv.groups = groups;
    l.conv.pad_top = l.conv.pad_left = l.conv.pad_bottom = l.conv.pad_right = k / 2;
    l.weight.assign(static_cast<size_t>(out) * (in / groups) * k * k, 0.01f);
    l.bias.assign(static_cast<size_t>(out), 0.0f);
    return l;
  };
  auto relu6 = [](int input) {
    Layer l;
    l.kind = LayerKind::ReLU6;
    l.inputs = {input};
    return l;
  };
  Layer add;
  add.kind = LayerKind::ResidualAdd;
  add.inputs = {5, 0};
  Layer pool;
  pool.kind = LayerKind::GlobalAveragePool;
  pool.inputs = {6};
  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.inputs = {7};
  fc.in_features = c;
  fc.out_features = 10;
  fc.weight.assign(static_cast<size_t>(10) * c, 0.01f);
  m.layers = {conv(3, c, 3, 1, kNetworkInput),
              conv(c, 4 * c, 1, 1, 0),
              relu6(1),
              conv(4 * c, 4 * c, 3, 4 * c, 2),
              relu6(3),
              conv(4 * c, c, 1, 1, 4),
              add,
              pool,
              fc};
  for (size_t i = 0; i < m.layers.size(); ++i) m.layers[i].index = static_cast<int>(i);
  return m;
}

TEST(CudaPlanner, BlockFusionRefusesChannelsThatAreNotMultiplesOf8) {
  PrepareConfig c = config(64, Precision::fp16, CudaOptions::Variant::fast, CudaOptions::Fusion::block);
  c.height = c.width = 32;
  const CudaPlan fused = plan_cuda_network(block_model(16), c, GpuProperties::h200());
  ASSERT_EQ(fused_blocks(fused), std::vector<int>{1});
  EXPECT_EQ(fused.steps[1].layers, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(fused.steps[1].residual, 0);
  const CudaPlan refused = plan_cuda_network(block_model(12), c, GpuProperties::h200());
  EXPECT_TRUE(fused_blocks(refused).empty());
  EXPECT_NE(refused.steps[1].variant.find("multiples of 8"), std::string::npos) << refused.steps[1].variant;
  kernels::FusedBlockShape s{64, 12, 48, 12, 32, 32, 32, 32, 1, 1, 1, true};
  EXPECT_NE(kernels::fused_block_shape_refusal(s, 90).find("multiples of 8"), std::string::npos);
  s.in_channels = s.out_channels = 16;
  EXPECT_EQ(kernels::fused_block_shape_refusal(s, 90), "");
  EXPECT_NE(kernels::fused_block_shape_refusal(s, 75).find("compute_80"), std::string::npos);
  s.stride = 2;  // a residual needs the output's shape
  EXPECT_NE(kernels::fused_block_shape_refusal(s, 90), "");
}

// The tile chooser's layout arithmetic: padded sizes, 16-byte aligned offsets, odd 16-byte row strides (the
// 8 rows an ldmatrix reads in different banks), and a tile for every real block shape on the H200.
TEST(CudaPlanner, FusedBlockLayoutIsAlignedAndEveryBlockShapeHasATile) {
  kernels::FusedBlockShape s{256, 24, 144, 24, 56, 56, 56, 56, 1, 1, 1, true};
  const kernels::FusedBlockLayout l = kernels::fused_block_layout(s, 8, 8);
  EXPECT_EQ(l.window_h, 10);
  EXPECT_EQ(l.m1, 112);  // 100 window pixels
  EXPECT_EQ(l.m2, 64);
  EXPECT_EQ(l.k_pad, 32);
  EXPECT_EQ(l.e_pad, 160);
  EXPECT_EQ(l.co_pad, 32);
  for (int off : {l.x, l.ex, l.d, l.we, l.wp, l.dw, l.eb, l.total}) EXPECT_EQ(off % 16, 0);
  for (int ld : {l.ld_x, l.ld_e, l.ld_p}) EXPECT_EQ((ld * 2 / 16) % 2, 1) << ld;
  // The expanded window's pitch: two depthwise pixel groups of a half warp, 4 x stride pixels apart, start 64
  // bytes apart modulo 128 (no shared bank); rows stay 8-byte aligned for the depthwise's loads.
  for (int stride : {1, 2}) {
    kernels::FusedBlockShape t = s;
    t.stride = stride;
    const kernels::FusedBlockLayout lt = kernels::fused_block_layout(t, 8, 14);
    EXPECT_EQ(lt.ld_ex * 2 % 8, 0) << stride;
    EXPECT_EQ(4 * stride * lt.ld_ex * 2 % 128, 64) << stride;
  }
  const kernels::DeviceCaps caps;  // the H200's defaults
  for (const auto& b : kBlockShapes) {
    const kernels::FusedBlockShape t = block_shape(b);
    std::string why;
    const kernels::FusedBlockVariant v = kernels::choose_fused_block_variant(t, caps, 90, &why);
    EXPECT_EQ(why, "") << b[0] << "->" << b[1] << "->" << b[2];
    EXPECT_GE(v.tile_h, 1);
    EXPECT_GE(kernels::fused_block_recompute_factor(t, v), 1.0);
    std::printf("%3d->%3d->%3d %3dx%-3d s%d: %s, %lld blocks, expansion x%.2f\n", b[0], b[1], b[2], b[3], b[3], b[4],
                kernels::to_string(v).c_str(), static_cast<long long>(kernels::fused_block_blocks(t, v)),
                kernels::fused_block_recompute_factor(t, v));
  }
}

// The TF32 layout (fused_block_tf32.cu): float32 regions, 16-byte aligned rows and offsets, and fragment loads free
// of bank conflicts as the kernel issues them (lane l: row l / 4, column pair 2 (l % 4) for A, 8 bytes, a half warp
// per pass; rows 2 (l % 4) and + 1, column l / 4 for B, 4 bytes; the accumulators' stores into ex as A); a TF32 tile
// for every MobileNetV2 block shape on the H200.
TEST(CudaPlanner, FusedBlockTf32LayoutIsConflictFreeAndEveryBlockShapeHasATile) {
  const kernels::FusedBlockMath tf32 = kernels::FusedBlockMath::tf32;
  // Banks of one warp's access: 8-byte loads pass a half warp at a time (16 lanes x 2 words), 4-byte ones the whole.
  auto conflict_free = [](int ld, bool a_operand) {
    for (int half = 0; half < (a_operand ? 2 : 1); ++half) {
      std::set<int> banks;
      for (int lane = half * 16; lane < (a_operand ? half * 16 + 16 : 32); ++lane) {
        const int gq = lane / 4, tq = lane % 4;
        if (a_operand) {
          banks.insert((gq * ld + 2 * tq) % 32);
          banks.insert((gq * ld + 2 * tq + 1) % 32);
        } else {
          banks.insert((2 * tq * ld + gq) % 32);  // b0; b1 is the next row: the same argument
        }
      }
      if (banks.size() != 32u) return false;
    }
    return true;
  };
  const kernels::DeviceCaps caps;  // the H200's defaults
  for (const auto& b : kBlockShapes) {
    const kernels::FusedBlockShape t = block_shape(b);
    for (int th : {1, 7, 8}) {
      const kernels::FusedBlockLayout l = kernels::fused_block_layout(t, th, th, tf32);
      const kernels::FusedBlockLayout h = kernels::fused_block_layout(t, th, th);
      EXPECT_EQ(l.m1, h.m1);
      EXPECT_EQ(l.k_pad, h.k_pad);  // one packing for both (fused_block_padding)
      for (int off : {l.x, l.ex, l.d, l.we, l.wp, l.dw, l.eb, l.total}) EXPECT_EQ(off % 16, 0);
      for (int ld : {l.ld_x, l.ld_e, l.ld_p, l.ld_ex, l.ld_d}) EXPECT_EQ(ld % 4, 0) << ld;  // 16-byte rows
      EXPECT_TRUE(conflict_free(l.ld_x, true)) << l.ld_x;
      EXPECT_TRUE(conflict_free(l.ld_d, true)) << l.ld_d;
      EXPECT_TRUE(conflict_free(l.ld_ex, true)) << l.ld_ex;
      EXPECT_TRUE(conflict_free(l.ld_e, false)) << l.ld_e;
      EXPECT_TRUE(conflict_free(l.ld_p, false)) << l.ld_p;
      EXPECT_EQ(l.x, 0);
      EXPECT_EQ(l.ex, l.m1 * l.ld_x * 4);
      EXPECT_EQ(l.we_bytes, l.k_pad * l.ld_e * 4);
      EXPECT_EQ(l.dw_bytes, 10 * kernels::kFusedBlockChunk * 4);
      EXPECT_GT(l.total, h.total);
    }
    std::string why;
    const kernels::FusedBlockVariant v = kernels::choose_fused_block_variant(t, caps, 90, &why, tf32);
    EXPECT_EQ(why, "") << b[0] << "->" << b[1] << "->" << b[2];
    EXPECT_EQ(v.math, tf32);
    EXPECT_LE(kernels::fused_block_layout(t, v.tile_h, v.tile_w, tf32).total, caps.smem_per_block_optin);
    EXPECT_NE(kernels::to_string(v).find(" tf32"), std::string::npos);
    std::printf("%3d->%3d->%3d %3dx%-3d s%d: %s, %lld blocks\n", b[0], b[1], b[2], b[3], b[3], b[4],
                kernels::to_string(v).c_str(), static_cast<long long>(kernels::fused_block_blocks(t, v)));
  }
  // TF32 rounding on the host: nearest, ties away from zero, 10 mantissa bits.
  const std::vector<float> r = kernels::to_tf32({1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f, -(1.0f + 0x1p-11f),
                                                 1.0f + 0x1p-12f, 3.0f, std::numeric_limits<float>::infinity()});
  EXPECT_EQ(r[0], 1.0f + 0x1p-10f);  // a tie: away from zero
  EXPECT_EQ(r[1], 1.0f + 0x1p-10f);
  EXPECT_EQ(r[2], -(1.0f + 0x1p-10f));
  EXPECT_EQ(r[3], 1.0f);
  EXPECT_EQ(r[4], 3.0f);
  EXPECT_EQ(r[5], std::numeric_limits<float>::infinity());
}

// The default plan (fusion auto) follows the rules table: on sm_90 with its own code, the block plan at every
// precision and batch (the measurements named by each rule); the per-layer plan, saying why, on a GPU the table
// has no measurement for, on sm_90 running compute_75 code, and for the baseline variant.
bool same_steps(const CudaPlan& a, const CudaPlan& b) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i)
    if (a.steps[i].kernel != b.steps[i].kernel || a.steps[i].layers != b.steps[i].layers ||
        a.steps[i].variant != b.steps[i].variant)
      return false;
  return planned_kernels(a) == planned_kernels(b);
}

TEST(CudaPlanner, AutoFusionFollowsTheRulesTable) {
  using F = CudaOptions::Fusion;
  EXPECT_EQ(CudaOptions{}.fusion, F::automatic) << "auto is the default";
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16})
    for (int batch : {1, 3, 8, 64, 256, 257, 1024}) {
      SCOPED_TRACE(std::string(to_string(p)) + " batch " + std::to_string(batch));
      // fp16 up to batch 8: block_split (run 16); everything else on sm_90: block.
      const F want = p == Precision::fp16 && batch <= 8 ? F::block_split : F::block;
      const CudaPlan automatic =
          plan_cuda_network(model(), config(batch, p, CudaOptions::Variant::fast, F::automatic), GpuProperties::h200());
      const CudaPlan block =
          plan_cuda_network(model(), config(batch, p, CudaOptions::Variant::fast, want), GpuProperties::h200());
      EXPECT_EQ(automatic.fusion, want);
      EXPECT_EQ(block.fusion, want);
      EXPECT_EQ(block.fusion_note, "as asked");
      EXPECT_TRUE(same_steps(automatic, block)) << describe(automatic) << describe(block);
      EXPECT_EQ(automatic.config.cuda.fusion, F::automatic) << "the plan keeps what was asked";
      const std::string name = to_string(want);
      EXPECT_EQ(automatic.fusion_note.rfind("auto: " + name + " on sm_90, " + std::string(to_string(p)), 0), 0u)
          << automatic.fusion_note;
      EXPECT_NE(automatic.fusion_note.find(batch <= 256 ? "docs/bench/" : "above the measured batches"),
                std::string::npos)
          << automatic.fusion_note;
      EXPECT_NE(describe(automatic).find("fusion auto -> " + name + ", "), std::string::npos) << describe(automatic);
      EXPECT_NE(describe(automatic).find("\nfusion auto: " + name + " on sm_90"), std::string::npos);
      // block_split at a batch its table has no split for (3) is block's plan step for step.
      if (want == F::block_split && batch == 3)
        EXPECT_TRUE(same_steps(
            automatic,
            plan_cuda_network(model(), config(batch, p, CudaOptions::Variant::fast, F::block), GpuProperties::h200())));
    }
  // No measurement on these architectures: the per-layer plan, the same as asking for it.
  for (const GpuProperties& other : {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090()})
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      SCOPED_TRACE(other.name);
      const CudaPlan automatic =
          plan_cuda_network(model(), config(8, p, CudaOptions::Variant::fast, F::automatic), other);
      EXPECT_EQ(automatic.fusion, F::none);
      EXPECT_NE(automatic.fusion_note.find("no measurement of the plans on sm_" + std::to_string(other.arch())),
                std::string::npos)
          << automatic.fusion_note;
      EXPECT_NE(automatic.fusion_note.find("portable"), std::string::npos);
      EXPECT_TRUE(same_steps(automatic, plan_cuda_network(model(), config(8, p), other)));
    }
  // sm_90 running compute_75 PTX (the portable build): the rules were measured with sm_90 code.
  GpuProperties jit = GpuProperties::h200();
  jit.code_arch = 75;
  const CudaPlan portable =
      plan_cuda_network(model(), config(1, Precision::fp16, CudaOptions::Variant::fast, F::automatic), jit);
  EXPECT_EQ(portable.fusion, F::none);
  EXPECT_NE(portable.fusion_note.find("compute_75"), std::string::npos) << portable.fusion_note;
  // The baseline variant has no fused steps.
  const CudaPlan baseline = plan_cuda_network(
      model(), config(1, Precision::fp32, CudaOptions::Variant::baseline, F::automatic), GpuProperties::h200());
  EXPECT_EQ(baseline.fusion, F::none);
  EXPECT_NE(baseline.fusion_note.find("baseline"), std::string::npos);
  // The names parse both ways; the option's default is auto.
  for (F f : {F::automatic, F::none, F::expand_dw, F::block, F::block_split})
    EXPECT_EQ(parse_cuda_fusion(to_string(f)), f);
}

// The table itself: every rule names its measurement, resolves to a real plan, and no two rules of an
// architecture and precision cover the same batch (the choice is deterministic).
TEST(CudaPlanner, FusionRulesAreDisjointAndNameTheirMeasurement) {
  const std::vector<CudaFusionRule>& rules = cuda_fusion_rules();
  ASSERT_FALSE(rules.empty());
  for (size_t i = 0; i < rules.size(); ++i) {
    const CudaFusionRule& r = rules[i];
    SCOPED_TRACE("rule " + std::to_string(i));
    EXPECT_NE(r.fusion, CudaOptions::Fusion::automatic);
    EXPECT_GE(r.min_batch, 1);
    EXPECT_LE(r.min_batch, r.max_batch);
    EXPECT_GT(std::string(r.measurement).size(), 20u);
    // Every measurement folder a rule names is in the source tree (docs/bench folders are named after their GPU
    // and were renamed once; the rule's text must follow).
    const std::string text = r.measurement;
    for (size_t at = text.find("docs/bench/"); at != std::string::npos; at = text.find("docs/bench/", at + 1)) {
      const std::string path = text.substr(at, text.find_first_of(");, ", at) - at);
      EXPECT_TRUE(std::filesystem::exists(std::string(MNV2_TEST_DATA_DIR) + "/../../" + path)) << path;
    }
    for (size_t j = i + 1; j < rules.size(); ++j) {
      const CudaFusionRule& o = rules[j];
      if (o.cc == r.cc && o.precision == r.precision)
        EXPECT_TRUE(o.max_batch < r.min_batch || o.min_batch > r.max_batch) << "rules " << i << " and " << j;
    }
  }
}

TEST(CudaPlanner, DescribePrintsEveryStep) {
  const CudaPlan plan = plan_cuda_network(model(), config(256, Precision::fp16), GpuProperties::rtx4090());
  const std::string text = describe(plan);
  EXPECT_NE(text.find("NVIDIA GeForce RTX 4090 (sm_89, 128 SMs)"), std::string::npos) << text;
  EXPECT_NE(text.find("54 steps"), std::string::npos) << text;
  for (const CudaStep& s : plan.steps)
    EXPECT_NE(text.find(s.name + "  [" + to_string(s.kernel) + "]  " + s.variant), std::string::npos);
}

}  // namespace
}  // namespace mnv2::test
