// End-to-end latency and throughput of one backend: warm-up runs, then timed runs, no instrumentation.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/reliability.h"
#include "mnv2/stats.h"

namespace mnv2 {

struct BenchConfig {
  std::string backend = "cpu";
  int batch = 1;
  int height = 224;
  int width = 224;
  int warmup = 5;  // untimed runs first (allocation, caches, algorithm choice stay out of the figures)
  int iters = 50;  // timed runs
  Precision precision = Precision::fp32;
  CudaOptions cuda;     // the cuda backend's options (PrepareConfig::cuda)
  int cpu_threads = 0;  // the cpu backends' threads (PrepareConfig::cpu_threads); in a result: the count used
  uint64_t seed = 1;    // the input is uniform random in [-1, 1] from this seed (never zeros)
  CudnnOptions cudnn;   // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;       // the GPU backends' CUDA ordinal (PrepareConfig::device)
  // Also time the end-to-end path from 8-bit pixels (PreparedNet::run_u8): `batch` network-size RGB images
  // (uniform random bytes from the seed) per run, in sub-batches of `sub_batch` (0: one of `batch`), the net
  // prepared at the sub-batch; host clock from the caller's bytes to the logits on the host.
  bool u8_input = false;
  int sub_batch = 0;
};

struct BenchResult {
  BenchConfig config;
  std::string backend_description;
  Summary latency_ms;             // host wall time per run(): input upload, all layers, logits download, sync
  std::optional<Summary> gpu_ms;  // GPU backends: event pair on the stream around the same run
  double images_per_s = 0;        // batch / median host latency
  // Device-resident (backends that can, PreparedNet::runs_device_resident()): the network alone on an input
  // already on the GPU, no upload or download, one CUDA graph replay, timed by an event pair on the stream;
  // the figure PyTorch's "CUDA graph" anchors give. Never a replacement for the end-to-end figures above.
  std::optional<Summary> device_ms;
  double device_images_per_s = 0;  // batch / median device-resident time
  // The 8-bit path (BenchConfig::u8_input): host time per `batch` images, from bytes to logits.
  std::optional<Summary> u8_ms;
  double u8_images_per_s = 0;  // batch / median of u8_ms
  std::string u8_path;         // how the backend did it (PreparedNet::u8_path())
  MemoryReport memory;
  // Kernel launches per run (PreparedNet::kernels_per_run(): the CUDA graph's kernel nodes); -1 where the backend
  // does not count them, and in files written before the count existed.
  int64_t kernels_per_run = -1;
  std::vector<ResolvedOption> resolved_options;  // as RunReport::resolved_options
  Reliability reliability;                       // of the end-to-end figures (mnv2/reliability.h)
  GpuRecord gpu;  // the GPU backends' card and its settings; index -1 for the cpu backends
};

// Called after each run with (runs done, total runs); returning false cancels (throws Error "cancelled").
using ProgressFn = std::function<bool(int done, int total)>;

// Throws UsageError for out-of-range values (batch < 1, warmup < 0, iters < 1, ...), Error on failure.
BenchResult run_bench(const Model& model, const BenchConfig& config, const ProgressFn& progress = {});

// A deterministic random input of the given shape.
Tensor random_input(Shape shape, uint64_t seed);

}  // namespace mnv2
