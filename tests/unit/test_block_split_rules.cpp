// The measured block-split table (engine/backends/cuda/block_split_rules.cpp) without a GPU: every row is the
// fastest tile x split of the mnv2_stage_bench file it names, the table applies only where it was measured (sm_90
// hardware running sm_90 code), and --cuda-fusion block_split takes its rows for the blocks block fuses in fp16, says
// so in the step, sizes the shared workspace and counters for them, and runs every other block, precision and GPU as
// block does.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "backends/cuda/block_split_rules.h"
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

PrepareConfig config(int batch, Precision precision, CudaOptions::Fusion fusion) {
  PrepareConfig c;
  c.batch = batch;
  c.precision = precision;
  c.cuda.fusion = fusion;
  return c;
}

std::string bench_file(const BlockSplitTable& t) { return bench_file_named_in(t.measurement); }

TEST(BlockSplitRules, TableIsTheBenchFilesFastest) {
  ASSERT_FALSE(block_split_tables().empty());
  for (const BlockSplitTable& table : block_split_tables()) {
    SCOPED_TRACE(table.measurement);
    const std::string path = bench_file(table);
    ASSERT_FALSE(path.empty()) << "the measurement names no docs/bench file";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    const nlohmann::json bench = nlohmann::json::parse(in);
    std::set<std::tuple<int, int, int, int, int, int, int>> timed;
    for (const auto& b : bench.at("batches"))
      for (const auto& s : b.at("shapes")) {
        const std::string map = s.at("map");
        timed.insert({b.at("batch").get<int>(), s.at("cin").get<int>(), s.at("expanded").get<int>(),
                      s.at("cout").get<int>(), std::stoi(map), std::stoi(map.substr(map.find('x') + 1)),
                      s.at("stride").get<int>()});
      }
    EXPECT_EQ(table.rows.size(), timed.size()) << "every timed shape and batch has a row, and no row has no timing";
    std::set<std::tuple<int, int, int, int, int, int, int>> seen;
    for (const MeasuredBlockSplit& r : table.rows) {
      const std::tuple key{r.batch, r.in_channels, r.expanded, r.out_channels, r.in_h, r.in_w, r.stride};
      EXPECT_TRUE(seen.insert(key).second) << "a row twice";
      EXPECT_TRUE(timed.count(key)) << "a row the file did not time: batch " << r.batch << " " << r.in_channels << "->"
                                    << r.expanded << "->" << r.out_channels;
      // The row's variant is the file's fastest for it.
      bool found = false;
      for (const auto& b : bench.at("batches")) {
        if (b.at("batch").get<int>() != r.batch) continue;
        for (const auto& s : b.at("shapes")) {
          const std::string map = s.at("map");
          if (s.at("cin").get<int>() != r.in_channels || s.at("expanded").get<int>() != r.expanded ||
              s.at("cout").get<int>() != r.out_channels || std::stoi(map) != r.in_h || s.at("stride") != r.stride)
            continue;
          found = true;
          const std::string best = s.at("best_variant");
          const std::string want = "block tile " + std::to_string(r.tile_h) + "x" + std::to_string(r.tile_w) + " ";
          EXPECT_EQ(best.rfind(want, 0), 0u) << best;
          EXPECT_EQ(best.find(" split ") == std::string::npos ? 1 : std::stoi(best.substr(best.find(" split ") + 7)),
                    r.splits)
              << best;
        }
      }
      EXPECT_TRUE(found);
    }
  }
}

TEST(BlockSplitRules, AppliesOnlyWhereItWasMeasured) {
  const GpuProperties h200 = GpuProperties::h200();
  const BlockSplitTable* table = block_split_table(h200);
  ASSERT_NE(table, nullptr);
  ASSERT_FALSE(table->rows.empty());
  const MeasuredBlockSplit& r = table->rows.front();
  kernels::FusedBlockShape s;
  s.batch = r.batch;
  s.in_channels = r.in_channels;
  s.expanded = r.expanded;
  s.out_channels = r.out_channels;
  s.in_h = r.in_h;
  s.in_w = r.in_w;
  s.stride = r.stride;
  EXPECT_EQ(measured_block_split(h200, s), &r);
  kernels::FusedBlockShape other = s;
  other.batch = 3;  // not measured
  EXPECT_EQ(measured_block_split(h200, other), nullptr);
  GpuProperties ptx75 = h200;
  ptx75.code_arch = 75;  // the compute_75 PTX plugin on the same card: other code, not what was measured
  EXPECT_EQ(block_split_table(ptx75), nullptr);
  EXPECT_EQ(measured_block_split(ptx75, s), nullptr);
  for (const GpuProperties& g : {GpuProperties::t4(), GpuProperties::a100(), GpuProperties::rtx4090()})
    EXPECT_EQ(measured_block_split(g, s), nullptr) << g.name;
}

TEST(BlockSplitRules, PlannerSplitsTheMeasuredBlocksInFp16Only) {
  using F = CudaOptions::Fusion;
  const GpuProperties h200 = GpuProperties::h200();
  std::set<int> batches;
  for (const MeasuredBlockSplit& r : block_split_table(h200)->rows) batches.insert(r.batch);
  for (const int batch : batches) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const CudaPlan block = plan_cuda_network(model(), config(batch, Precision::fp16, F::block), h200);
    const CudaPlan split = plan_cuda_network(model(), config(batch, Precision::fp16, F::block_split), h200);
    EXPECT_EQ(split.fusion, F::block_split);
    int split_steps = 0, fused = 0, fused_before = 0;
    for (const CudaStep& s : block.steps) fused_before += s.kernel == CudaKernel::fused_block ? 1 : 0;
    for (const CudaStep& s : split.steps) {
      if (s.kernel != CudaKernel::fused_block) continue;
      ++fused;
      SCOPED_TRACE(s.name + ": " + s.variant);
      EXPECT_EQ(s.launch.block_splits > 1, s.variant.find(" split ") != std::string::npos);
      if (s.launch.block_splits <= 1) continue;
      ++split_steps;
      EXPECT_TRUE(s.half);
    }
    // The blocks block fuses, and no others (the stage bench measured the split kernel against the unsplit one).
    EXPECT_EQ(fused, fused_before) << describe(split);
    EXPECT_GE(split_steps, 1) << describe(split);
    EXPECT_GE(split.gemm_workspace_floats, block.gemm_workspace_floats);
    EXPECT_GT(split.gemm_workspace_floats, 0);
    EXPECT_GT(split.gemm_tile_counters, 0);
    EXPECT_NE(describe(split).find("fusion block_split"), std::string::npos);
    // Other precisions: block_split is block.
    for (const Precision p : {Precision::fp32, Precision::tf32}) {
      const CudaPlan b = plan_cuda_network(model(), config(batch, p, F::block), h200);
      const CudaPlan sp = plan_cuda_network(model(), config(batch, p, F::block_split), h200);
      ASSERT_EQ(b.steps.size(), sp.steps.size()) << to_string(p);
      for (size_t i = 0; i < b.steps.size(); ++i) EXPECT_EQ(b.steps[i].variant, sp.steps[i].variant) << to_string(p);
    }
  }
  // A GPU without a table, and sm_90 hardware running compute_75 code: block's plan.
  GpuProperties ptx75 = h200;
  ptx75.code_arch = 75;
  for (const GpuProperties& g : {GpuProperties::a100(), ptx75}) {
    const CudaPlan b = plan_cuda_network(model(), config(1, Precision::fp16, F::block), g);
    const CudaPlan sp = plan_cuda_network(model(), config(1, Precision::fp16, F::block_split), g);
    ASSERT_EQ(b.steps.size(), sp.steps.size()) << g.name;
    for (size_t i = 0; i < b.steps.size(); ++i) EXPECT_EQ(b.steps[i].variant, sp.steps[i].variant) << g.name;
  }
}

}  // namespace
}  // namespace mnv2::test
