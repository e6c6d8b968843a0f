// The roofline: a device's measured ceilings (memory bandwidth, FLOP/s) from a short calibration run,
// cached per device, and each profiled step's arithmetic intensity and achieved FLOP/s against them.
#pragma once

#include <string>
#include <vector>

#include "mnv2/json_io.h"
#include "mnv2/profiler.h"

namespace mnv2 {

struct Ceilings {
  std::string device;         // "NVIDIA H200" or the CPU's model name
  std::string key;            // what the cache is keyed by: name, UUID, clocks (GPU); model name, threads (CPU)
  double bandwidth_gb_s = 0;  // best of the timed copies: bytes read + bytes written, / time
  double gflop_s = 0;         // best of the timed GEMMs: 2*n^3 / time, in the precision calibrated for
  std::string method;         // what was measured, with sizes
  bool from_cache = false;
  bool stored = false;  // calibrated now and written to the cache (device_ceilings); false when not cached
  // Intensity (FLOP/byte) where the two ceilings meet: below it a step is memory-bound.
  double ridge() const { return bandwidth_gb_s > 0 ? gflop_s / bandwidth_gb_s : 0; }
  double attainable_gflop_s(double intensity) const;  // min(gflop_s, bandwidth_gb_s * intensity)
};

// GPU `device` (the CUDA ordinal among the visible GPUs): a device-to-device copy of 1 GiB (or an eighth of the free
// memory if less) and a cuBLAS GEMM of 8192 (4096 if memory is short) in `precision`'s arithmetic: fp32 an SGEMM with
// CUBLAS_DEFAULT_MATH (no TF32), tf32 an SGEMM with CUBLAS_TF32_TENSOR_OP_MATH, fp16 a GemmEx of half
// operands with float32 accumulation (tensor cores) — the compute roof a run in that mode can reach. 3
// warm-up and 10 timed runs each, cudaEvent timing. Throws Error without CUDA or a device.
Ceilings calibrate_gpu(int device = 0, Precision precision = Precision::fp32);
// "gpu|NAME|UUID|sm MHZ|mem MHZ" of GPU `device` (the clocks are the maximum the device reports).
std::string gpu_calibration_key(int device);
// The host: memcpy of 256 MiB and oneDNN SGEMM of 2048 on `cpu_threads` threads (0: the cpu backends' count).
Ceilings calibrate_cpu(int cpu_threads = 0);

// Ceilings for the device a backend runs on ("cpu" or a GPU backend) in `precision` (a GPU's compute roof
// depends on it; the cpu is fp32 only), from the cache file when it holds this device's and mode's key
// (unless `recalibrate`), otherwise calibrated and stored (store_ceilings). The cache is roofline.json in the
// private cache folder (mnv2/private_cache.h): read without following a link, within inputs::kRooflineCache,
// each entry checked (finite, 0.1..80 000 GB/s, 0.1..2e7 GFLOP/s; else measured again). A cache that cannot
// be used, read or written is ignored with a warning in `warning`. `cpu_threads` (0: the cpu
// backends' default) is the thread count the cpu's ceilings are measured with, as its key says; `device` is the
// GPU backends' CUDA ordinal among the visible GPUs (PrepareConfig::device). Which ceilings belong to a profiled
// run is the roofline study's rule (roofline_study, mnv2/studies.h).
Ceilings device_ceilings(const std::string& backend, bool recalibrate, std::string* warning = nullptr,
                         Precision precision = Precision::fp32, int cpu_threads = 0, int device = 0);
// Stores `c` under c.key: the cache is read, merged and written under its lock, so concurrent writers lose no
// entry. A cache that cannot be used or written adds to `warning` (never a throw) and gives false.
bool store_ceilings(const Ceilings& c, std::string* warning = nullptr);
// cache_dir()/roofline.json, or "" when there is no cache folder.
std::string roofline_cache_file();
// A calibration key for the device `backend` runs on here in `precision` (what device_ceilings looks up):
// the device's key, with "|tf32" or "|fp16" appended for a GPU's reduced modes.
std::string ceilings_key(const std::string& backend, Precision precision = Precision::fp32, int cpu_threads = 0,
                         int device = 0);

// One profiled step on the roofline. FLOPs: 2 per MAC for Conv2d and Linear, 1 per add for ResidualAdd
// and pooling, 2 per element for ReLU6/ReLU (a min and a max); bytes: the fewest moved (inputs +
// weights + output), summed over the step's layers.
struct RooflinePoint {
  int step = 0;
  int layer = 0;     // the step's first layer
  std::string name;  // the step's name
  std::string kind;  // the first layer's kind (the colour)
  double flops = 0, bytes = 0;
  double intensity = 0;           // FLOP per byte
  double time_ns = 0;             // median
  double gflop_s = 0;             // achieved: flops / median
  double attainable_gflop_s = 0;  // the roofline at this intensity
  bool memory_bound = false;      // intensity below the ridge
};
std::vector<RooflinePoint> roofline_points(const RunReport& report, const Ceilings& ceilings);

// JSON of ceilings (the cache's per-device record, and reports): nlohmann's to_json/from_json, so
// `json::Json j = ceilings;` and `j.get<Ceilings>()` work. from_json throws Error for a wrong type, a missing
// key or a ceiling that is not positive.
void to_json(json::Json& j, const Ceilings& c);
void from_json(const json::Json& j, Ceilings& c);

}  // namespace mnv2
