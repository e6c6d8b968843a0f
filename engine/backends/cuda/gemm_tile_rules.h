// The FFMA GEMM tiles measured fastest per shape (gemm_tile_rules.cpp): where a GPU's architecture has a table and
// the running code was built for it, the planner takes the measured tile for a GEMM shape the table lists (its
// split-K count from the cost model, as the measurement did) instead of the cost model's guess. Plain C++: plans
// made without a GPU pick the same.
#pragma once

#include <span>

#include "kernels/tiles.h"
#include "mnv2/gpu_properties.h"

namespace mnv2 {

struct MeasuredGemmTile {
  int m = 0, n = 0, k = 0;  // C is m x n, reduced over k (a 1x1 convolution: m = pixels of the batch)
  const char* tile = "";    // kernels::to_string(GemmTile)
};

// One architecture's table: the tiles, and the measurement they were read from (the GPU, the file).
struct GemmTileTable {
  int cc = 0;          // compute capability x 10, hardware and code alike
  int from_batch = 1;  // the bench file's batches from this one on are in the table (a smaller one's shapes not)
  const char* measurement = "";
  std::span<const MeasuredGemmTile> tiles;
};

std::span<const GemmTileTable> gemm_tile_tables();

// The table entry for this shape on this GPU, or nullptr: no table for its architecture, code built for another
// one (compute_75 PTX on an sm_90 card), or a shape that was not measured.
const MeasuredGemmTile* measured_gemm_tile(const GpuProperties& gpu, int m, int n, int k);
// The tile the table gives a GEMM of `shape` on `gpu` (a single GEMM with 16-byte operands, as measured): true and
// `*tile` set, or false where the table has none. Throws Error where the table names a tile the kernels lack.
bool measured_gemm_tile(const GpuProperties& gpu, const kernels::GemmShape& shape, kernels::GemmTile* tile);
// The table that entry came from (for the plan's note), or nullptr.
const GemmTileTable* gemm_tile_table(const GpuProperties& gpu);

}  // namespace mnv2
