// End-to-end benchmark (see mnv2/bench.h).
#include "mnv2/bench.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/image.h"
#include "mnv2/memory.h"
#include "mnv2/timing.h"

namespace mnv2 {

Tensor random_input(Shape shape, uint64_t seed) {
  Tensor t(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data) v = dist(rng);
  return t;
}

namespace {

// Uniform random bytes: `images` RGB images of height x width, HWC.
std::vector<uint8_t> random_u8_images(int64_t images, int height, int width, uint64_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(images * height * width * 3));
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t r = rng();
    for (size_t b = i; b < std::min(bytes.size(), i + 8); ++b, r >>= 8) bytes[b] = static_cast<uint8_t>(r);
  }
  return bytes;
}

// The 8-bit path (BenchConfig::u8_input): `batch` images per timed run, in sub-batches run by a net prepared at
// the sub-batch (the main one where they are equal), host clock.
void bench_u8(const Backend& backend, const Model& model, const PrepareConfig& pc, PreparedNet& net,
              BenchResult& result, const ProgressFn& progress) {
  const BenchConfig& config = result.config;
  const int sub = config.sub_batch > 0 ? config.sub_batch : config.batch;
  std::unique_ptr<PreparedNet> sub_net;
  if (sub != config.batch) {
    PrepareConfig spc = pc;
    spc.batch = sub;
    sub_net = backend.prepare(model, spc);
  }
  PreparedNet& runner = sub_net ? *sub_net : net;
  const InputNormaliser norm = make_input_normaliser(model.preprocess);
  const std::vector<uint8_t> images = random_u8_images(config.batch, config.height, config.width, config.seed);
  const int total = config.warmup + config.iters;
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(config.iters));
  for (int i = 0; i < total; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    runner.run_u8(images.data(), config.batch, norm);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= config.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (progress && !progress(i + 1, total)) throw Error("cancelled");
  }
  result.u8_ms = summarize(std::move(ms));
  result.u8_images_per_s = result.u8_ms->median > 0 ? config.batch * 1000.0 / result.u8_ms->median : 0.0;
  result.u8_path = runner.u8_path();
  result.config.sub_batch = sub;
}

}  // namespace

BenchResult run_bench(const Model& model, const BenchConfig& config, const ProgressFn& progress) {
  if (config.batch < 1 || config.batch > 65536) throw UsageError("batch must be in 1..65536");
  if (config.warmup < 0 || config.warmup > 1000000) throw UsageError("warm-up count must be in 0..1000000");
  if (config.iters < 1 || config.iters > 1000000) throw UsageError("iteration count must be in 1..1000000");
  if (config.sub_batch < 0 || (config.sub_batch > 0 && config.batch % config.sub_batch != 0))
    throw UsageError("the sub-batch must divide the batch (" + std::to_string(config.batch) + "), got " +
                     std::to_string(config.sub_batch));
  if (config.sub_batch > 0 && !config.u8_input) throw UsageError("a sub-batch applies to the 8-bit input path only");
  auto backend = make_backend(config.backend);
  BenchResult result;
  if (Availability a = backend->availability(); !a.available)
    throw Error("backend '" + config.backend + "' is not available: " + a.reason);

  PrepareConfig pc{config.batch, config.height,      config.width, config.precision,
                   config.cuda,  config.cpu_threads, config.cudnn};
  pc.device = config.device;
  const bool gpu = !is_host_backend(backend->name());
  if (gpu) result.gpu = record_gpu(config.device);     // throws UsageError for a device this machine does not show
  DeviceMemoryProbe memory_probe(gpu, config.device);  // the driver's view of what the network takes
  auto net = backend->prepare(model, pc);
  memory_probe.sample();
  const Tensor input =
      random_input(Shape{config.batch, model.input_channels, config.height, config.width}, config.seed);

  result.config = config;
  result.backend_description = backend->description();
  result.config.cpu_threads = gpu ? 0 : net->config().cpu_threads;  // the count used
  if (const std::string d = net->description(); !d.empty()) result.backend_description = d;
  const int total = config.warmup + config.iters;
  // Only the run's boundaries are observed: one event pair on the stream for GPU backends.
  HostContentionProbe host_probe;
  GpuConditionsProbe gpu_probe(gpu, config.device);
  gpu_probe.sample();
  host_probe.start();
  auto run_timer = make_run_timer(gpu);
  RunOptions opts;
  opts.observer = run_timer.get();
  std::vector<double> ms, gpu_ms;
  ms.reserve(static_cast<size_t>(config.iters));
  for (int i = 0; i < total; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    net->run(input, opts);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= config.warmup) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (gpu) gpu_ms.push_back(static_cast<double>(run_timer->last_run_ns()) / 1e6);
    }
    if (i % 10 == 9) gpu_probe.sample();
    if (progress && !progress(i + 1, total)) throw Error("cancelled");
  }
  gpu_probe.sample();
  const HostContention host = host_probe.stop();
  result.latency_ms = summarize(std::move(ms));
  if (gpu) result.gpu_ms = summarize(std::move(gpu_ms));
  result.images_per_s = result.latency_ms.median > 0 ? config.batch * 1000.0 / result.latency_ms.median : 0.0;

  // Device-resident: the last end-to-end run left the input on the device; the same warm-up and count.
  if (gpu && net->runs_device_resident()) {
    RunOptions resident = opts;
    resident.device_resident = true;
    std::vector<double> device_ms;
    device_ms.reserve(static_cast<size_t>(config.iters));
    for (int i = 0; i < total; ++i) {
      net->run(input, resident);
      if (i >= config.warmup) device_ms.push_back(static_cast<double>(run_timer->last_run_ns()) / 1e6);
      if (progress && !progress(i + 1, total)) throw Error("cancelled");
    }
    result.device_ms = summarize(std::move(device_ms));
    result.device_images_per_s = result.device_ms->median > 0 ? config.batch * 1000.0 / result.device_ms->median : 0.0;
  }
  if (config.u8_input) bench_u8(*backend, model, pc, *net, result, progress);
  result.kernels_per_run = net->kernels_per_run();
  result.resolved_options = net->resolved_options();
  result.memory = net->memory();
  memory_probe.sample();
  memory_probe.finish(result.memory);
  // The checks judge the end-to-end figures (the device-resident ones are the same network, no copies).
  ReliabilityInputs checks;
  checks.end_to_end = result.gpu_ms ? *result.gpu_ms : result.latency_ms;
  gpu_probe.fill(checks);
  checks.threads_used = gpu ? 1 : std::max(1, result.config.cpu_threads);
  checks.host = host;
  result.reliability = assess_reliability(checks);
  return result;
}

}  // namespace mnv2
