// Roofline ceilings, their cache, and the per-step points (see mnv2/roofline.h). The GPU calibration is
// in profile/gpu/calibration.cpp.
#include "mnv2/roofline.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "backends/cpu/cpu_common.h"
#include "backends/cpu/cpu_ops.h"
#include "gpu/plugin_api.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/flops.h"
#include "mnv2/input_files.h"
#include "mnv2/json_io.h"
#include "mnv2/model_lookup.h"
#include "mnv2/private_cache.h"

namespace mnv2 {
namespace fs = std::filesystem;

double Ceilings::attainable_gflop_s(double intensity) const { return std::min(gflop_s, bandwidth_gb_s * intensity); }

Ceilings calibrate_gpu(int device, Precision precision) {
  if (const std::string why = why_no_gpu(); !why.empty()) throw Error("no GPU to calibrate: " + why);
  return gpu_plugin::api()->calibrate(device, precision);
}
std::string gpu_calibration_key(int device) {
  if (const std::string why = why_no_gpu(); !why.empty()) throw Error("no GPU to calibrate: " + why);
  return gpu_plugin::api()->calibration_key(device);
}

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown CPU";
}

// Best throughput of `runs` timed calls after `warmup` untimed ones, in units per second.
template <typename F>
double best_rate(double units, int warmup, int runs, F&& call) {
  for (int i = 0; i < warmup; ++i) call();
  double best = 0;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, units / s);
  }
  return best;
}

}  // namespace

Ceilings calibrate_cpu(int cpu_threads) {
  Ceilings c;
  c.device = cpu_model_name();
  c.key = ceilings_key("cpu", Precision::fp32, cpu_threads);
  constexpr size_t kCopyBytes = size_t{256} << 20;
  std::vector<char> src(kCopyBytes, 1), dst(kCopyBytes, 0);
  // On the cpu backends' threads (MNV2_CPU_THREADS, which the cache key names too), each GEMM call on the
  // thread that owns its rows, as the reference path calls it; oneDNN's sgemm picks its kernel from CPUID,
  // like the oneDNN path's convolutions.
  const int threads = cpu_threads > 0 ? cpu_threads : cpu::thread_count();
  const cpu::ScopedOmpThreads team(threads);  // one thread: no nested sgemm team either
  c.bandwidth_gb_s = best_rate(2.0 * kCopyBytes / 1e9, 1, 5, [&] {
#pragma omp parallel num_threads(threads)
    {
      const size_t t = static_cast<size_t>(omp_get_thread_num()), team = static_cast<size_t>(omp_get_num_threads());
      const size_t first = kCopyBytes * t / team, last = kCopyBytes * (t + 1) / team;
      std::memcpy(dst.data() + first, src.data() + first, last - first);
    }
  });
  constexpr int n = 2048;
  std::vector<float> a(size_t{n} * n, 0.5f), b(size_t{n} * n, 0.25f), out(size_t{n} * n);
  c.gflop_s = best_rate(2.0 * n * n * n / 1e9, 1, 3, [&] {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), team = omp_get_num_threads();
      const int first = n * t / team, rows = n * (t + 1) / team - first;
      if (rows > 0)
        cpu::sgemm('N', 'N', rows, n, n, 1.0f, a.data() + static_cast<size_t>(first) * n, n, b.data(), n, 0.0f,
                   out.data() + static_cast<size_t>(first) * n, n);
    }
  });
  c.method = "memcpy of 256 MiB (read + write) and oneDNN SGEMM n=2048, each split over " + std::to_string(threads) +
             " OpenMP threads like the cpu backends; best of 5 and of 3";
  return c;
}

std::string ceilings_key(const std::string& backend, Precision precision, int cpu_threads, int device) {
  if (is_host_backend(backend)) {
    // The GEMM named too: ceilings cached when OpenBLAS measured them (on some CPUs with its oldest kernels)
    // are not read back as this build's.
    const int threads = cpu_threads > 0 ? cpu_threads : cpu::thread_count();
    return "cpu|" + cpu_model_name() + "|threads " + std::to_string(threads) + "|oneDNN sgemm";
  }
  const CudaEnvironment& env = cuda_environment();
  if (env.devices.empty()) throw Error("backend '" + backend + "' needs a GPU: " + env.why_none);
  if (device < 0 || device >= static_cast<int>(env.devices.size()))
    throw Error("no CUDA device " + std::to_string(device) + " (this machine has " +
                std::to_string(env.devices.size()) + " visible)");
  std::string key = gpu_calibration_key(device);
  if (precision != Precision::fp32) key.append("|").append(to_string(precision));
  return key;
}

namespace {

constexpr const char* kRooflineCacheName = "roofline.json";

void add_warning(std::string* warning, const std::string& text) {
  if (warning == nullptr) return;
  if (!warning->empty()) *warning += "; ";
  *warning += text;
}

// The cache's "devices" object ({key: ceilings}); a missing file is an empty one. Throws Error naming the file
// when it cannot be read (a link, not a regular file, over its budget) or is not a roofline cache.
json::Json read_devices(const PrivateCache& cache) {
  const std::optional<std::string> text = cache.read(kRooflineCacheName, inputs::kRooflineCache);
  if (!text) return json::Json::object();
  const std::string file = cache.file(kRooflineCacheName);
  json::Json doc;
  try {
    doc = json::parse(*text, inputs::kRooflineCache);
  } catch (const Error& e) {
    throw Error(file + ": " + e.what());
  }
  if (!doc.is_object()) throw Error(file + ": not a roofline cache");
  const json::Json* devices = json::find(doc, "devices");
  if (devices == nullptr || !devices->is_object()) return json::Json::object();
  return *devices;
}

}  // namespace

std::string roofline_cache_file() {
  const std::string dir = cache_dir();
  return dir.empty() ? std::string() : (fs::path(dir) / kRooflineCacheName).string();
}

bool store_ceilings(const Ceilings& c, std::string* warning) {
  const PrivateCache cache = PrivateCache::open_default();
  if (!cache.usable()) {
    add_warning(warning, "the calibration is not cached: " + cache.note());
    return false;
  }
  try {
    // Read, merge and write under the entry's lock: entries other processes stored meanwhile are kept.
    const PrivateCache::Lock lock = cache.lock(kRooflineCacheName);
    json::Json devices = json::Json::object();
    try {
      devices = read_devices(cache);
    } catch (const std::exception&) {
      // Unreadable or damaged: written anew (the write itself refuses a link or anything but a regular file).
    }
    devices[c.key] = c;
    const json::Json out = {{"schema", "mnv2.roofline-cache/1"}, {"devices", devices}};
    cache.write(kRooflineCacheName, json::dump(out, 2) + "\n");
    return true;
  } catch (const std::exception& e) {
    add_warning(warning, "the calibration could not be cached: " + std::string(e.what()));
    return false;
  }
}

void to_json(json::Json& j, const Ceilings& c) {
  j = json::Json{{"device", c.device},
                 {"key", c.key},
                 {"bandwidth_gb_s", c.bandwidth_gb_s},
                 {"gflop_s", c.gflop_s},
                 {"ridge_flop_per_byte", c.ridge()},
                 {"method", c.method}};
}

void from_json(const json::Json& j, Ceilings& c) {
  c.device = json::string_at(j, "device");
  c.key = json::string_at(j, "key");
  c.bandwidth_gb_s = json::number_at(j, "bandwidth_gb_s");
  c.gflop_s = json::number_at(j, "gflop_s");
  c.method = json::string_at(j, "method");
  // Within physical reason: positive, and under ten times the fastest memory (HBM3e, 8 TB/s) and the fastest
  // dense tensor-core GEMM (about 2 PFLOP/s) any device has. A cache edited by hand, or damaged, past these is
  // measured again rather than trusted.
  // Below, a floor no device since the 1990s is under (0.1 GB/s, 0.1 GFLOP/s): a denormal bandwidth (5e-324)
  // would make the ridge infinite (written as null) and every step "memory bound".
  constexpr double kMaxBandwidthGbS = 80'000, kMaxGflopS = 20'000'000, kMinBandwidthGbS = 0.1, kMinGflopS = 0.1;
  if (!std::isfinite(c.bandwidth_gb_s) || !std::isfinite(c.gflop_s) || !(c.bandwidth_gb_s > 0) || !(c.gflop_s > 0))
    throw Error("ceilings must be finite and positive");
  if (c.bandwidth_gb_s < kMinBandwidthGbS)
    throw Error("a bandwidth of " + json::dump(c.bandwidth_gb_s) + " GB/s is below any device (at least 0.1)");
  if (c.gflop_s < kMinGflopS)
    throw Error("a compute roof of " + json::dump(c.gflop_s) + " GFLOP/s is below any device (at least 0.1)");
  if (c.bandwidth_gb_s > kMaxBandwidthGbS)
    throw Error("a bandwidth of " + std::to_string(c.bandwidth_gb_s) + " GB/s is beyond any device (at most " +
                std::to_string(static_cast<int64_t>(kMaxBandwidthGbS)) + ")");
  if (c.gflop_s > kMaxGflopS)
    throw Error("a compute roof of " + std::to_string(c.gflop_s) + " GFLOP/s is beyond any device (at most " +
                std::to_string(static_cast<int64_t>(kMaxGflopS)) + ")");
}

Ceilings device_ceilings(const std::string& backend, bool recalibrate, std::string* warning, Precision precision,
                         int cpu_threads, int device) {
  if (is_host_backend(backend)) precision = Precision::fp32;  // the cpu backends have no other mode
  const std::string key = ceilings_key(backend, precision, cpu_threads, device);
  const PrivateCache cache = PrivateCache::open_default();
  json::Json devices = json::Json::object();  // the cache file: {"schema": "mnv2.roofline-cache/1", "devices": {}}
  if (cache.usable()) {
    try {
      devices = read_devices(cache);
    } catch (const std::exception& e) {
      add_warning(warning, std::string(e.what()) + "; ignored, calibrating again");
    }
  }
  if (devices.contains(key)) {
    try {
      Ceilings c = devices[key].get<Ceilings>();
      if (c.key != key) throw Error("the entry is keyed '" + c.key + "'");
      c.from_cache = true;
      if (!recalibrate) return c;
    } catch (const std::exception& e) {
      // Only this entry is replaced: the others (other devices, backends, precisions) stay cached.
      add_warning(warning, cache.file(kRooflineCacheName) +
                               ": the cached ceilings of this device are not believable (" + e.what() +
                               "); measuring them again");
    }
  }
  Ceilings c = is_host_backend(backend) ? calibrate_cpu(cpu_threads) : calibrate_gpu(device, precision);
  c.key = key;
  c.stored = store_ceilings(c, warning);
  return c;
}

std::vector<RooflinePoint> roofline_points(const RunReport& r, const Ceilings& ceilings) {
  std::vector<RooflinePoint> points;
  for (const StepProfile& s : r.steps) {
    if (s.layers.empty() || !(s.time_ns.median > 0)) continue;
    RooflinePoint p;
    p.step = s.step;
    p.layer = s.layers.front();
    p.name = s.name;
    p.kind = to_string(r.topology.at(static_cast<size_t>(p.layer)).kind);
    // Bytes that cross the step's boundary (mnv2/flops.h): a fused step's inner tensors never reach memory; the
    // storage type's bytes, the network input's float32.
    p.bytes = step_bytes(r.topology, r.layer_stats, s.layers, storage_bytes(r.config.precision));
    for (int l : s.layers)
      p.flops += layer_flops(r.topology.at(static_cast<size_t>(l)), r.layer_stats.at(static_cast<size_t>(l)));
    if (!(p.flops > 0) || !(p.bytes > 0)) continue;
    p.intensity = p.flops / p.bytes;
    p.time_ns = s.time_ns.median;
    p.gflop_s = p.flops / p.time_ns;  // FLOP per ns = GFLOP/s
    p.attainable_gflop_s = ceilings.attainable_gflop_s(p.intensity);
    p.memory_bound = p.intensity < ceilings.ridge();
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace mnv2
