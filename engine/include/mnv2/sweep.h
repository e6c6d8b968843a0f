// Sweeps: end-to-end benchmarks (run_bench) over every combination of backends, input sizes and batch
// sizes, in that nesting order, and their CSV. The CLI's bench and the app's sweep page both run this.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/bench.h"

namespace mnv2 {

struct SweepConfig {
  std::vector<std::string> backends = {"cpu"};
  std::vector<std::pair<int, int>> sizes = {{224, 224}};  // height x width
  std::vector<int> batches = {1};
  int warmup = 5;
  int iters = 50;
  Precision precision = Precision::fp32;
  CudaOptions cuda;       // the cuda backend's options (PrepareConfig::cuda)
  int cpu_threads = 0;    // the cpu backends' threads (PrepareConfig::cpu_threads)
  CudnnOptions cudnn;     // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;         // the GPU backends' CUDA ordinal (PrepareConfig::device)
  bool u8_input = false;  // BenchConfig::u8_input
  int sub_batch = 0;      // sub-batches of the 8-bit path: batches larger than this run as sub-batches of it
};

// (configuration index, configurations, runs done in it, its runs); false cancels (Error "cancelled").
using SweepProgress = std::function<bool(int config, int configs, int done, int total)>;

// Each point's BenchConfig, in run order (backend, then size, then batch).
std::vector<BenchConfig> sweep_points(const SweepConfig& config);

// Throws UsageError for an empty list, Error from the first failing point (naming backend, size, batch).
std::vector<BenchResult> run_sweep(const Model& model, const SweepConfig& config, const SweepProgress& progress = {});

// "500x334" (height x width) -> {500, 334}; a single number is a square; each side 8..8192. Throws
// UsageError naming the side.
std::pair<int, int> parse_input_size(const std::string& text);
// "224x224,500x334" -> {{224, 224}, {500, 334}}.
std::vector<std::pair<int, int>> parse_size_list(const std::string& text);

}  // namespace mnv2
