// The measured FFMA GEMM tile table (engine/backends/cuda/gemm_tile_rules.cpp) without a GPU: every row is the
// fastest forced tile of the bench file it names, the table applies only where it was measured (sm_90 hardware
// running sm_90 code), and the planner takes its tiles, says so in the step, and leaves forced tiles, the
// baseline variant, other GPUs and unmeasured shapes to the cost model.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "backends/cuda/gemm_tile_rules.h"
#include "backends/cuda/shapes.h"  // device_caps
#include "bench_file.h"
#include "kernels/tiles.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/model.h"

namespace mnv2::test {
namespace {

const Model& model() {
  static const Model m = builtin_mobilenet_v2();
  return m;
}

PrepareConfig config(int batch, Precision precision) {
  PrepareConfig c;
  c.batch = batch;
  c.precision = precision;
  c.cuda.fusion = CudaOptions::Fusion::none;
  return c;
}

std::string bench_file(const GemmTileTable& t) { return bench_file_named_in(t.measurement); }

TEST(GemmTileRules, TableIsTheBenchFilesFastestTiles) {
  ASSERT_FALSE(gemm_tile_tables().empty());
  for (const GemmTileTable& table : gemm_tile_tables()) {
    SCOPED_TRACE(table.measurement);
    const std::string path = bench_file(table);
    ASSERT_FALSE(path.empty()) << "the measurement names no docs/bench file";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const nlohmann::json bench = nlohmann::json::parse(in);
    // Every shape the file timed, with its fastest forced tile (the tile of "gemm <tile> vec4 [splitkN]").
    std::map<std::tuple<int, int, int>, std::string> fastest;
    for (const auto& b : bench.at("batches")) {
      if (b.at("batch").get<int>() < table.from_batch) continue;
      for (const auto& r : b.at("rows")) {
        const std::string variant = r.at("best_tile").at("variant");
        const size_t a = variant.find(' ') + 1;
        fastest[{r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>()}] =
            variant.substr(a, variant.find(' ', a) - a);
      }
    }
    EXPECT_EQ(table.tiles.size(), fastest.size()) << "every timed shape has a row, and no row has no timing";
    std::set<std::tuple<int, int, int>> seen;
    for (const MeasuredGemmTile& row : table.tiles) {
      const std::tuple key{row.m, row.n, row.k};
      SCOPED_TRACE(std::to_string(row.m) + "x" + std::to_string(row.n) + "x" + std::to_string(row.k));
      EXPECT_TRUE(seen.insert(key).second) << "a shape twice";
      kernels::GemmTile tile{};
      EXPECT_TRUE(kernels::parse_gemm_tile(row.tile, &tile)) << row.tile;
      ASSERT_TRUE(fastest.count(key)) << "not in the file";
      EXPECT_EQ(fastest[key], row.tile);
    }
  }
}

TEST(GemmTileRules, AppliesOnlyWhereItWasMeasured) {
  const GpuProperties h200 = GpuProperties::h200();
  const MeasuredGemmTile* row = measured_gemm_tile(h200, 12544 * 256, 96, 16);  // block 2's expansion at b256
  ASSERT_NE(row, nullptr);
  EXPECT_STREQ(row->tile, "32x32");
  EXPECT_EQ(measured_gemm_tile(h200, 12544 * 3, 96, 16), nullptr) << "batch 3 was not measured";
  // By shape, as the planner and the bench ask: the tile parsed; nothing for a batched or unaligned GEMM.
  kernels::GemmTile tile{};
  ASSERT_TRUE(measured_gemm_tile(h200, kernels::GemmShape{12544 * 256, 96, 16, 1, true}, &tile));
  EXPECT_EQ(tile, kernels::GemmTile::t32x32);
  EXPECT_FALSE(measured_gemm_tile(h200, kernels::GemmShape{12544 * 256, 96, 16, 1, false}, &tile));
  EXPECT_FALSE(measured_gemm_tile(h200, kernels::GemmShape{12544 * 256, 96, 16, 2, true}, &tile));
  EXPECT_EQ(measured_gemm_tile(h200, 12544, 96, 17), nullptr);
  GpuProperties ptx75 = h200;
  ptx75.code_arch = 75;  // the compute_75 PTX plugin on the same card: other code, not what was measured
  EXPECT_EQ(measured_gemm_tile(ptx75, 12544 * 256, 96, 16), nullptr);
  EXPECT_EQ(gemm_tile_table(ptx75), nullptr);
  for (const GpuProperties& other : {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090()})
    EXPECT_EQ(measured_gemm_tile(other, 12544 * 256, 96, 16), nullptr) << other.name;
}

TEST(GemmTileRules, PlannerTakesTheMeasuredTilesAndSaysSo) {
  const GpuProperties h200 = GpuProperties::h200();
  const kernels::DeviceCaps caps = cuda_backend::device_caps(h200);
  for (int batch : {8, 64, 256}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const std::vector<LayerStats> stats = analyse(model(), batch, 224, 224);
    const CudaPlan plan = plan_cuda_network(model(), config(batch, Precision::fp32), h200);
    int gemms = 0;
    for (const CudaStep& s : plan.steps) {
      if (s.kernel != CudaKernel::pointwise_gemm) continue;
      SCOPED_TRACE(s.name + ": " + s.variant);
      ++gemms;
      // Every 1x1 convolution of the 224x224 network at a measured batch is in the table ...
      const Layer& conv = model().layers[static_cast<size_t>(s.layers.front())];
      const Shape& out = stats[static_cast<size_t>(s.layers.front())].output;
      const int m = static_cast<int>(out.n * out.h * out.w), n = conv.conv.out_channels, k = conv.conv.in_channels;
      const MeasuredGemmTile* row = measured_gemm_tile(h200, m, n, k);
      ASSERT_NE(row, nullptr);
      EXPECT_EQ(s.launch.tile, row->tile);
      EXPECT_NE(s.variant.find(" (tile measured fastest)"), std::string::npos);
      // ... and its split is the cost model's for that tile: what the bench forced and timed.
      kernels::GemmTile tile{};
      ASSERT_TRUE(kernels::parse_gemm_tile(row->tile, &tile));
      EXPECT_EQ(s.launch.splits, kernels::choose_gemm_variant({m, n, k, 1, true}, caps, true, &tile).splits);
    }
    EXPECT_GT(gemms, 10);
  }
}

TEST(GemmTileRules, CostModelWhereTheTableDoesNotApply) {
  const auto measured_steps = [](const CudaPlan& plan) {
    int n = 0;
    for (const CudaStep& s : plan.steps) n += s.variant.find("measured fastest") != std::string::npos;
    return n;
  };
  // Another GPU, compute_75 code, an unmeasured batch or input size, a forced tile, the baseline variant.
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), config(256, Precision::fp32), GpuProperties::a100())), 0);
  GpuProperties ptx75 = GpuProperties::h200();
  ptx75.code_arch = 75;
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), config(256, Precision::fp32), ptx75)), 0);
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), config(3, Precision::fp32), GpuProperties::h200())), 0);
  // Batch 1 was measured and left out (gemm_tile_rules.cpp: slower in the network).
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), config(1, Precision::fp32), GpuProperties::h200())), 0);
  PrepareConfig small = config(256, Precision::fp32);
  small.height = small.width = 160;
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), small, GpuProperties::h200())), 0);
  PrepareConfig forced = config(256, Precision::fp32);
  forced.cuda.gemm_tile = "64x64";
  const CudaPlan f = plan_cuda_network(model(), forced, GpuProperties::h200());
  EXPECT_EQ(measured_steps(f), 0);
  for (const CudaStep& s : f.steps)
    if (s.kernel == CudaKernel::pointwise_gemm) EXPECT_EQ(s.launch.tile, "64x64");
  PrepareConfig baseline = config(256, Precision::fp32);
  baseline.cuda.variant = CudaOptions::Variant::baseline;
  EXPECT_EQ(measured_steps(plan_cuda_network(model(), baseline, GpuProperties::h200())), 0);
}

}  // namespace
}  // namespace mnv2::test
