// The measured block splits (block_split_rules.h). A table is generated, never typed:
//   scripts/block-split-table.py <mnv2_stage_bench JSON>
// prints the rows: for every block shape and batch the bench timed, the tile x split with the lowest median µs a
// stage (PDL edges). The unit test BlockSplitRules.TableIsTheBenchFilesFastest re-reads the file and fails where a
// row and it disagree.
#include "backends/cuda/block_split_rules.h"

#include <array>

#include "backends/cuda/measured_table.h"

namespace mnv2 {

namespace {

constexpr const char* kSm90Measurement =
    "mnv2_stage_bench on an NVIDIA H200, 2026-11-30 (docs/bench/h200-2026-11-30-stage17/call8-sweep/stage_bench.json)";

constexpr auto kSm90Rows = std::to_array<MeasuredBlockSplit>({
    // NVIDIA H200: 22 rows, batch: blocks (µs a stage: unsplit as planned, this)
    {1, 16, 96, 24, 112, 112, 2, 4, 4, 1},   // b1: block2 (7.89, 7.67)
    {1, 24, 144, 24, 56, 56, 1, 8, 8, 5},    // b1: block3 (10.69, 7.44)
    {1, 24, 144, 32, 56, 56, 2, 4, 4, 5},    // b1: block4 (10.17, 6.29)
    {1, 32, 192, 32, 28, 28, 1, 4, 5, 6},    // b1: block5-6 (11.32, 6.21)
    {1, 32, 192, 64, 28, 28, 2, 1, 7, 6},    // b1: block7 (11.60, 5.72)
    {1, 64, 384, 64, 14, 14, 1, 4, 4, 12},   // b1: block8-10 (21.44, 6.61)
    {1, 64, 384, 96, 14, 14, 1, 4, 4, 12},   // b1: block11 (22.24, 7.61)
    {1, 96, 576, 96, 14, 14, 1, 2, 7, 18},   // b1: block12-13 (34.17, 8.85)
    {1, 96, 576, 160, 14, 14, 2, 1, 7, 18},  // b1: block14 (34.43, 8.18)
    {1, 160, 960, 160, 7, 7, 1, 2, 2, 15},   // b1: block15-16 (61.18, 9.04)
    {1, 160, 960, 320, 7, 7, 1, 2, 2, 15},   // b1: block17 (68.60, 11.36)
    {8, 16, 96, 24, 112, 112, 2, 7, 14, 1},  // b8: block2 (14.58, 14.58)
    {8, 24, 144, 24, 56, 56, 1, 7, 14, 1},   // b8: block3 (15.99, 15.99)
    {8, 24, 144, 32, 56, 56, 2, 7, 7, 2},    // b8: block4 (14.49, 12.84)
    {8, 32, 192, 32, 28, 28, 1, 7, 7, 2},    // b8: block5-6 (13.25, 10.70)
    {8, 32, 192, 64, 28, 28, 2, 2, 7, 2},    // b8: block7 (12.60, 9.48)
    {8, 64, 384, 64, 14, 14, 1, 4, 7, 4},    // b8: block8-10 (22.33, 10.87)
    {8, 64, 384, 96, 14, 14, 1, 4, 7, 4},    // b8: block11 (23.14, 11.98)
    {8, 96, 576, 96, 14, 14, 1, 7, 7, 6},    // b8: block12-13 (35.38, 16.10)
    {8, 96, 576, 160, 14, 14, 2, 2, 7, 6},   // b8: block14 (37.71, 12.81)
    {8, 160, 960, 160, 7, 7, 1, 2, 7, 8},    // b8: block15-16 (61.54, 15.68)
    {8, 160, 960, 320, 7, 7, 1, 2, 7, 8},    // b8: block17 (69.28, 19.48)
});

constexpr std::array kTables{BlockSplitTable{90, kSm90Measurement, kSm90Rows}};

}  // namespace

std::span<const BlockSplitTable> block_split_tables() { return kTables; }

const BlockSplitTable* block_split_table(const GpuProperties& gpu) {
  return measured_table_for<BlockSplitTable>(kTables, gpu);
}

const MeasuredBlockSplit* measured_block_split(const GpuProperties& gpu, const kernels::FusedBlockShape& s) {
  const BlockSplitTable* table = block_split_table(gpu);
  if (table == nullptr) return nullptr;
  for (const MeasuredBlockSplit& r : table->rows)
    if (r.batch == s.batch && r.in_channels == s.in_channels && r.expanded == s.expanded &&
        r.out_channels == s.out_channels && r.in_h == s.in_h && r.in_w == s.in_w && r.stride == s.stride)
      return &r;
  return nullptr;
}

}  // namespace mnv2
