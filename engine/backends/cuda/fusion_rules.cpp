// The automatic plan's rules (mnv2/cuda_plan.h): which fusion runs for --cuda-fusion auto, per architecture,
// precision and batch, each rule written from a measurement of every plan in one call on that architecture. No
// CUDA here: the planner and its unit tests resolve the choice for GPUs this machine does not have.
//
// How a rule is made: `mnv2 bench --backends cuda --cuda-fusion none` and `--cuda-fusion block` (and fused cuDNN
// and the PyTorch anchor) at batches 1, 8, 64 and 256 in one call (scripts/device-run.sh, section round2); the
// fusion with the lower device-resident median at every measured batch of a range is its rule. A batch above the
// measured ones takes the largest measured batch's choice and its rule says so. An architecture with no call in
// the table gets the per-layer plan, which every GPU and every build runs, and the reason says so.
#include <string>
#include <vector>

#include "mnv2/cuda_plan.h"

namespace mnv2 {

namespace {

constexpr int kMaxBatch = 65536;  // the option table's largest batch

// The figures the sm_90 rules stand on (device-resident medians, ms, batch 1 / 8 / 64 / 256, block against none in
// the same call): an H200 on 2026-11-29 (docs/PERFORMANCE.md run 13, docs/bench/h200-2026-11-29-issue32/table) and
// an H100 on 2026-11-26 (run 12, docs/bench/h100-2026-11-26-tf32/final-round2).
constexpr const char* kFp16 =
    "measured fastest at batch 1, 8, 64, 256 on an H200 (block 0.191 / 0.400 / 0.953 / 2.778 ms, none 0.200 / 0.452 / "
    "1.479 / 4.859; docs/bench/h200-2026-11-29-issue32/table) and an H100 (block 0.193 / 0.388 / 0.942 / 2.752, none "
    "0.200 / 0.461 / 1.508 / 5.027; docs/bench/h100-2026-11-26-tf32/final-round2)";
// fp16 up to batch 8: block_split against block, three alternating rounds of one binary on an H200 on 2026-11-30
// (docs/PERFORMANCE.md run 16, docs/bench/h200-2026-11-30-stage/call5-split); batches 2-7 have no row in the split
// table (block_split_rules.cpp) and so run as block.
constexpr const char* kFp16Split =
    "measured fastest at batch 1 and 8 on an H200 (block_split 0.178 / 0.323 ms, block 0.179 / 0.403, the medians of "
    "three alternating rounds each; docs/bench/h200-2026-11-30-stage/call5-split); at batches 2-7, which its table "
    "has no split for, it runs as block";
constexpr const char* kTf32 =
    "measured fastest at batch 1, 8, 64, 256 on an H200 (block 0.256 / 0.572 / 2.106 / 6.937 ms, none 0.267 / 0.677 / "
    "2.389 / 7.842; docs/bench/h200-2026-11-29-issue32/table) and an H100 (block 0.257 / 0.585 / 2.099 / 6.955, none "
    "0.269 / 0.708 / 2.543 / 8.464; docs/bench/h100-2026-11-26-tf32/final-round2)";
constexpr const char* kFp32 =
    "measured fastest at batch 1, 8, 64, 256 on an H200 (block 0.247 / 0.534 / 2.342 / 8.303 ms, none 0.261 / 0.551 / "
    "2.512 / 8.858; docs/bench/h200-2026-11-29-issue32/table) and an H100 (block 0.257 / 0.538 / 2.416 / 8.641, none "
    "0.265 / 0.562 / 2.649 / 9.456; docs/bench/h100-2026-11-26-tf32/final-round2)";
constexpr const char* kAbove =
    "above the measured batches (the largest was 256, where every block kernel already runs many waves): the choice "
    "measured at 256";

std::string sm(int cc) { return "sm_" + std::to_string(cc); }

}  // namespace

const std::vector<CudaFusionRule>& cuda_fusion_rules() {
  using F = CudaOptions::Fusion;
  static const std::vector<CudaFusionRule> rules = {
      {90, Precision::fp16, 1, 8, F::block_split, kFp16Split}, {90, Precision::fp16, 9, 256, F::block, kFp16},
      {90, Precision::fp16, 257, kMaxBatch, F::block, kAbove}, {90, Precision::tf32, 1, 256, F::block, kTf32},
      {90, Precision::tf32, 257, kMaxBatch, F::block, kAbove}, {90, Precision::fp32, 1, 256, F::block, kFp32},
      {90, Precision::fp32, 257, kMaxBatch, F::block, kAbove},
  };
  return rules;
}

CudaFusionChoice resolve_cuda_fusion(const PrepareConfig& config, const GpuProperties& gpu) {
  using F = CudaOptions::Fusion;
  const CudaOptions& o = config.cuda;
  if (o.fusion != F::automatic) return {o.fusion, "as asked"};
  if (o.variant != CudaOptions::Variant::fast)
    return {F::none, "auto: the baseline variant runs a step per layer, it has no fused steps"};
  const int cc = gpu.arch();
  bool measured_here = false;
  for (const CudaFusionRule& r : cuda_fusion_rules()) {
    if (r.cc != cc) continue;
    measured_here = true;
    if (r.precision != config.precision || config.batch < r.min_batch || config.batch > r.max_batch) continue;
    if (gpu.effective_code_arch() != cc)
      return {F::none, "auto: the rules for " + sm(cc) + " were measured with " + sm(cc) +
                           " code and this build runs compute_" + std::to_string(gpu.effective_code_arch()) +
                           " code here: the per-layer plan (none), the portable choice"};
    return {r.fusion, std::string("auto: ") + to_string(r.fusion) + " on " + sm(cc) + ", " +
                          to_string(config.precision) + ", batch " + std::to_string(r.min_batch) + ".." +
                          std::to_string(r.max_batch) + ": " + r.measurement};
  }
  if (measured_here)
    return {F::none, "auto: no measurement of " + std::string(to_string(config.precision)) + " at batch " +
                         std::to_string(config.batch) + " on " + sm(cc) +
                         ": the per-layer plan (none), the portable choice"};
  return {F::none, "auto: no measurement of the plans on " + sm(cc) + " (" + gpu.name +
                       ") yet: the per-layer plan (none), the portable choice, which every GPU runs"};
}

}  // namespace mnv2
