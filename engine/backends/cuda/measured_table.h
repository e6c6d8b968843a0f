// Where a measured table (gemm_tile_rules.h, block_split_rules.h) applies: on a GPU of the table's architecture
// running code built for that architecture, as it was measured (not, e.g., compute_75 PTX JIT-compiled on an sm_90
// card). One rule for every such table.
#pragma once

#include <span>

#include "mnv2/gpu_properties.h"

namespace mnv2 {

// The table of `tables` (each with a compute capability `cc`, major x 10 + minor) for this GPU and its code, or
// nullptr.
template <class Table>
const Table* measured_table_for(std::span<const Table> tables, const GpuProperties& gpu) {
  if (gpu.effective_code_arch() != gpu.arch()) return nullptr;
  for (const Table& t : tables)
    if (t.cc == gpu.arch()) return &t;
  return nullptr;
}

}  // namespace mnv2
