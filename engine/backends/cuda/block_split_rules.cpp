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
    "mnv2_stage_bench on an NVIDIA H200, 2026-11-30 (docs/bench/h200-2026-11-30-stage/call4-stage/stage_bench.json)";

constexpr auto kSm90Rows = std::to_array<MeasuredBlockSplit>({
    // NVIDIA H200: 22 rows, batch: blocks (µs a stage: unsplit as planned, this)
    {1, 16, 96, 24, 112, 112, 2, 4, 4, 1},   // b1: block2 (7.95, 7.61)
    {1, 24, 144, 24, 56, 56, 1, 8, 8, 1},    // b1: block3 (10.70, 10.11)
    {1, 24, 144, 32, 56, 56, 2, 2, 2, 1},    // b1: block4 (10.17, 10.16)
    {1, 32, 192, 32, 28, 28, 1, 1, 7, 2},    // b1: block5-6 (11.25, 10.28)
    {1, 32, 192, 64, 28, 28, 2, 1, 7, 4},    // b1: block7 (11.62, 9.19)
    {1, 64, 384, 64, 14, 14, 1, 1, 7, 8},    // b1: block8-10 (21.25, 10.00)
    {1, 64, 384, 96, 14, 14, 1, 1, 7, 8},    // b1: block11 (22.18, 10.18)
    {1, 96, 576, 96, 14, 14, 1, 1, 7, 8},    // b1: block12-13 (34.02, 12.41)
    {1, 96, 576, 160, 14, 14, 2, 1, 7, 18},  // b1: block14 (34.52, 10.95)
    {1, 160, 960, 160, 7, 7, 1, 1, 7, 18},   // b1: block15-16 (60.93, 12.93)
    {1, 160, 960, 320, 7, 7, 1, 1, 7, 10},   // b1: block17 (68.15, 19.34)
    {8, 16, 96, 24, 112, 112, 2, 7, 14, 1},  // b8: block2 (14.96, 14.96)
    {8, 24, 144, 24, 56, 56, 1, 7, 14, 1},   // b8: block3 (15.97, 15.97)
    {8, 24, 144, 32, 56, 56, 2, 7, 7, 1},    // b8: block4 (14.43, 13.70)
    {8, 32, 192, 32, 28, 28, 1, 7, 7, 1},    // b8: block5-6 (13.09, 12.42)
    {8, 32, 192, 64, 28, 28, 2, 2, 7, 1},    // b8: block7 (12.49, 12.38)
    {8, 64, 384, 64, 14, 14, 1, 7, 7, 4},    // b8: block8-10 (22.12, 14.58)
    {8, 64, 384, 96, 14, 14, 1, 4, 7, 4},    // b8: block11 (23.12, 15.53)
    {8, 96, 576, 96, 14, 14, 1, 4, 7, 4},    // b8: block12-13 (35.22, 19.82)
    {8, 96, 576, 160, 14, 14, 2, 1, 7, 4},   // b8: block14 (38.43, 17.04)
    {8, 160, 960, 160, 7, 7, 1, 4, 4, 8},    // b8: block15-16 (61.13, 19.55)
    {8, 160, 960, 320, 7, 7, 1, 1, 7, 4},    // b8: block17 (68.77, 30.77)
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
