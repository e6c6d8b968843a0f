// The measured FFMA GEMM tile tables (gemm_tile_rules.h). A table is generated, never typed:
//   scripts/gemm-tile-table.py <mnv2_gemm_bench JSON>
// prints the rows: for every 1x1-convolution GEMM shape the bench timed (MobileNetV2's at batch 1, 8, 64 and 256),
// the forced tile with the lowest median of 200 timed runs (each tile with the split-K count the cost model gives
// it, the one the planner then uses). The unit test GemmTileRules.TableIsTheBenchFilesFastestTiles re-reads the
// file and fails where a row and it disagree.
//
// Batch 1 is left out (from_batch 8): there the fastest tiles gained 2% of GEMM time in isolation (6 us summed over
// the network) but took 3 more split-K GEMMs, and the network with them was slower on the same H200, 0.250-0.251 ms
// against 0.246-0.248 with the cost model's tiles (2026-11-29, docs/bench/h200-2026-11-29-issue32b/README.md).
#include "backends/cuda/gemm_tile_rules.h"

#include <array>
#include <string>

#include "backends/cuda/measured_table.h"
#include "mnv2/error.h"

namespace mnv2 {

namespace {

constexpr const char* kSm90Measurement =
    "mnv2_gemm_bench on an NVIDIA H200, 2026-11-29 (docs/bench/h200-2026-11-29-issue32/suite-gemm/gemm_bench.json)";

constexpr auto kSm90Fp32Tiles = std::to_array<MeasuredGemmTile>({
    // NVIDIA H200: 57 shapes, batch: layer (its median ms, cuBLAS's)
    {392, 160, 576, "32x32k32"},    // b8: block14.project (0.0122, 0.0133)
    {392, 160, 960, "32x32k32"},    // b8: block15.project (0.0149, 0.0148)
    {392, 320, 960, "64x64"},       // b8: block17.project (0.0189, 0.0176)
    {392, 960, 160, "32x32k32"},    // b8: block15.expand (0.0134, 0.0102)
    {392, 1280, 320, "32x32k32"},   // b8: head.conv (0.0224, 0.0184)
    {1568, 64, 192, "64x64"},       // b8: block7.project (0.0097, 0.0084)
    {1568, 64, 384, "32x32k32"},    // b8: block8.project (0.0125, 0.0118)
    {1568, 96, 384, "128x32"},      // b8: block11.project (0.0142, 0.0132)
    {1568, 96, 576, "128x32w"},     // b8: block12.project (0.0168, 0.0168)
    {1568, 384, 64, "32x32k32"},    // b8: block8.expand (0.0103, 0.0094)
    {1568, 576, 96, "64x64"},       // b8: block12.expand (0.0139, 0.0109)
    {6272, 32, 144, "32x32"},       // b8: block4.project (0.0108, 0.0094)
    {6272, 32, 192, "32x32"},       // b8: block5.project (0.0120, 0.0090)
    {6272, 192, 32, "32x32"},       // b8: block5.expand (0.0098, 0.0087)
    {25088, 24, 96, "32x32k32"},    // b8: block2.project (0.0122, 0.0142)
    {25088, 24, 144, "32x32k32"},   // b8: block3.project (0.0171, 0.0131)
    {25088, 144, 24, "32x32"},      // b8: block3.expand (0.0168, 0.0143)
    {100352, 16, 32, "128x32w"},    // b8: block1.project (0.0133, 0.0138)
    {100352, 96, 16, "32x32"},      // b8: block2.expand (0.0275, 0.0264)
    {3136, 160, 576, "128x32"},     // b64: block14.project (0.0297, 0.0253)
    {3136, 160, 960, "128x96w"},    // b64: block15.project (0.0426, 0.0392)
    {3136, 320, 960, "128x64"},     // b64: block17.project (0.0699, 0.0539)
    {3136, 960, 160, "128x96w"},    // b64: block15.expand (0.0360, 0.0316)
    {3136, 1280, 320, "128x128w"},  // b64: head.conv (0.0805, 0.0643)
    {12544, 64, 192, "32x32k32"},   // b64: block7.project (0.0186, 0.0154)
    {12544, 64, 384, "128x64"},     // b64: block8.project (0.0291, 0.0250)
    {12544, 96, 384, "128x96w"},    // b64: block11.project (0.0430, 0.0364)
    {12544, 96, 576, "128x96w"},    // b64: block12.project (0.0602, 0.0517)
    {12544, 384, 64, "64x64"},      // b64: block8.expand (0.0313, 0.0254)
    {12544, 576, 96, "128x64"},     // b64: block12.expand (0.0573, 0.0491)
    {50176, 32, 144, "128x32"},     // b64: block4.project (0.0229, 0.0179)
    {50176, 32, 192, "128x32"},     // b64: block5.project (0.0332, 0.0232)
    {50176, 192, 32, "128x64"},     // b64: block5.expand (0.0359, 0.0320)
    {200704, 24, 96, "128x32w"},    // b64: block2.project (0.0517, 0.0477)
    {200704, 24, 144, "128x32"},    // b64: block3.project (0.0819, 0.0626)
    {200704, 144, 24, "32x32"},     // b64: block3.expand (0.0958, 0.1089)
    {802816, 16, 32, "128x32w"},    // b64: block1.project (0.0807, 0.0853)
    {802816, 96, 16, "32x32"},      // b64: block2.expand (0.1783, 0.2042)
    {12544, 160, 576, "128x32w"},   // b256: block14.project (0.0847, 0.0726)
    {12544, 160, 960, "128x32w"},   // b256: block15.project (0.1467, 0.1181)
    {12544, 320, 960, "128x64w"},   // b256: block17.project (0.2277, 0.1774)
    {12544, 960, 160, "128x128w"},  // b256: block15.expand (0.1282, 0.1029)
    {12544, 1280, 320, "128x64w"},  // b256: head.conv (0.2947, 0.2430)
    {50176, 64, 192, "128x64"},     // b256: block7.project (0.0428, 0.0420)
    {50176, 64, 384, "128x64"},     // b256: block8.project (0.0817, 0.0669)
    {50176, 96, 384, "128x96w"},    // b256: block11.project (0.1354, 0.1124)
    {50176, 96, 576, "128x32w"},    // b256: block12.project (0.1952, 0.1624)
    {50176, 384, 64, "128x64"},     // b256: block8.expand (0.1000, 0.0865)
    {50176, 576, 96, "128x64w"},    // b256: block12.expand (0.1883, 0.1574)
    {200704, 32, 144, "128x32w"},   // b256: block4.project (0.0710, 0.0636)
    {200704, 32, 192, "128x32w"},   // b256: block5.project (0.1042, 0.0805)
    {200704, 192, 32, "128x64w"},   // b256: block5.expand (0.1229, 0.1137)
    {802816, 24, 96, "128x32"},     // b256: block2.project (0.1809, 0.1637)
    {802816, 24, 144, "128x32"},    // b256: block3.project (0.2741, 0.2190)
    {802816, 144, 24, "32x32"},     // b256: block3.expand (0.3597, 0.4265)
    {3211264, 16, 32, "128x32w"},   // b256: block1.project (0.2971, 0.3380)
    {3211264, 96, 16, "32x32"},     // b256: block2.expand (0.6925, 0.8107)
});

constexpr std::array kTables{GemmTileTable{90, 8, kSm90Measurement, kSm90Fp32Tiles}};

}  // namespace

std::span<const GemmTileTable> gemm_tile_tables() { return kTables; }

const GemmTileTable* gemm_tile_table(const GpuProperties& gpu) {
  return measured_table_for<GemmTileTable>(kTables, gpu);
}

const MeasuredGemmTile* measured_gemm_tile(const GpuProperties& gpu, int m, int n, int k) {
  const GemmTileTable* table = gemm_tile_table(gpu);
  if (table == nullptr) return nullptr;
  for (const MeasuredGemmTile& t : table->tiles)
    if (t.m == m && t.n == n && t.k == k) return &t;
  return nullptr;
}

bool measured_gemm_tile(const GpuProperties& gpu, const kernels::GemmShape& shape, kernels::GemmTile* tile) {
  if (shape.batch != 1 || !shape.vec4) return false;
  const MeasuredGemmTile* row = measured_gemm_tile(gpu, shape.m, shape.n, shape.k);
  if (row == nullptr) return false;
  if (!kernels::parse_gemm_tile(row->tile, tile))
    throw Error(std::string("cuda: the measured GEMM tile table names an unknown tile ") + row->tile);
  return true;
}

}  // namespace mnv2
