// The fp16 block kernel's measured splits (kernels/tiles.h FusedBlockVariant::splits) per block shape and batch,
// for --cuda-fusion block_split (block_split_rules.cpp): where a GPU's architecture has a table and the running code
// was built for it, a block whose shape and batch the table lists runs with the tile and the split that measured
// fastest as a stage (mnv2_stage_bench, issue 33's prototype); every other block runs as --cuda-fusion block runs
// it. Plain C++: plans made without a GPU pick the same.
#pragma once

#include <span>

#include "kernels/tiles.h"
#include "mnv2/gpu_properties.h"

namespace mnv2 {

struct MeasuredBlockSplit {
  int batch = 0, in_channels = 0, expanded = 0, out_channels = 0, in_h = 0, in_w = 0, stride = 1;
  int tile_h = 0, tile_w = 0, splits = 1;  // the fastest variant of the bench file
};

// One architecture's table: its rows, and the measurement they were read from (the GPU, the file).
struct BlockSplitTable {
  int cc = 0;  // compute capability x 10, hardware and code alike
  const char* measurement = "";
  std::span<const MeasuredBlockSplit> rows;
};

std::span<const BlockSplitTable> block_split_tables();
// The table of this GPU's architecture, or nullptr: none measured, or code built for another architecture.
const BlockSplitTable* block_split_table(const GpuProperties& gpu);
// The row for this block (shape and batch; the pads are the model's) on this GPU, or nullptr.
const MeasuredBlockSplit* measured_block_split(const GpuProperties& gpu, const kernels::FusedBlockShape& s);

}  // namespace mnv2
