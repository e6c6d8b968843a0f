// The cuda backend's options as both front ends take them: a flag or setting wins, then the documented
// environment override, then the engine's default. The engine itself never reads the environment for them.
//
//   MNV2_CUDA_VARIANT   fast | baseline          --cuda-variant     (app: Run settings > cuda)
//   MNV2_CUDA_FUSE      none | expand_dw | block --cuda-fusion
//   MNV2_CUDA_GRAPH     auto | on | off          --cuda-graph
//   MNV2_CUDA_GEMM_TILE 128x64, ... (forced)     --cuda-gemm-tile
//   MNV2_CUDA_PDL       auto | on | off          --cuda-pdl
//   MNV2_CUDA_SPLITK    separate | in_kernel     --cuda-splitk
#pragma once

#include <cstdlib>
#include <string>

#include "mnv2/backend.h"
#include "mnv2/error.h"

namespace mnv2::frontend {

// Given values (empty: not given) over the environment over the defaults; a bad value is a UsageError naming
// where it came from.
inline CudaOptions resolve_cuda_options(const std::string& variant, const std::string& fusion, const std::string& graph,
                                        const std::string& gemm_tile, const std::string& pdl = {},
                                        const std::string& splitk = {}) {
  auto pick = [](const std::string& given, const char* env) -> std::pair<std::string, std::string> {
    if (!given.empty()) return {given, ""};
    const char* value = std::getenv(env);
    if (value != nullptr && *value != '\0') return {value, std::string(" (from ") + env + ")"};
    return {"", ""};
  };
  CudaOptions o;
  auto parse = [](const std::pair<std::string, std::string>& v, auto parser, auto& field) {
    if (v.first.empty()) return;
    try {
      field = parser(v.first);
    } catch (const UsageError& e) {
      throw UsageError(e.what() + v.second);
    }
  };
  parse(pick(variant, "MNV2_CUDA_VARIANT"), parse_cuda_variant, o.variant);
  parse(pick(fusion, "MNV2_CUDA_FUSE"), parse_cuda_fusion, o.fusion);
  parse(pick(graph, "MNV2_CUDA_GRAPH"), parse_cuda_graph, o.graph);
  o.gemm_tile = pick(gemm_tile, "MNV2_CUDA_GEMM_TILE").first;
  parse(pick(pdl, "MNV2_CUDA_PDL"), parse_cuda_pdl, o.pdl);
  parse(pick(splitk, "MNV2_CUDA_SPLITK"), parse_cuda_splitk, o.splitk);
  return o;
}

}  // namespace mnv2::frontend
