// The profiler (see mnv2/profiler.h): phase 1 times whole runs without per-layer instrumentation,
// phase 2 times every step with the chosen timer; then statistics, derived figures and totals.
#include "mnv2/profiler.h"
#include "mnv2/build_info.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <random>

#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/flops.h"
#include "mnv2/labels.h"
#include "mnv2/memory.h"
#include "mnv2/sweep.h"
#include "util/nvml.h"

namespace mnv2 {

namespace {

// Forwards every callback to two observers (cupti + events for the two-timer check). The second one
// opens inside the first and closes outside it, so the event pair brackets the CUPTI range.
class TeeObserver : public StepObserver {
 public:
  TeeObserver(StepObserver* outer, StepObserver* inner) : outer_(outer), inner_(inner) {}
  void run_begin(void* s) override {
    outer_->run_begin(s);
    inner_->run_begin(s);
  }
  void run_end(void* s) override {
    inner_->run_end(s);
    outer_->run_end(s);
  }
  void step_begin(int step, void* s) override {
    outer_->step_begin(step, s);
    inner_->step_begin(step, s);
  }
  void step_end(int step, void* s) override {
    inner_->step_end(step, s);
    outer_->step_end(step, s);
  }

 private:
  StepObserver* outer_;
  StepObserver* inner_;
};

std::string iso_date_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string make_run_id(const std::string& backend) {
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%08x", backend.c_str(), rd());
  return iso_date_utc() + "-" + buf;
}

// The input for the whole batch: the given tensor (one image repeated, or exactly `batch` images) or random.
Tensor batch_input(const ProfileConfig& cfg, int channels) {
  const Shape want{cfg.batch, channels, cfg.height, cfg.width};
  if (!cfg.input) return random_input(want, 1);
  const Tensor& in = *cfg.input;
  if (in.shape.c != channels || in.shape.h != cfg.height || in.shape.w != cfg.width)
    throw UsageError("input tensor is " + in.shape.str() + " but the run is configured for " + want.str());
  if (in.shape.n == cfg.batch) return in;
  if (in.shape.n != 1)
    throw UsageError("input tensor holds " + std::to_string(in.shape.n) + " images; give 1 or exactly the batch (" +
                     std::to_string(cfg.batch) + ")");
  Tensor out(want);
  for (int64_t i = 0; i < cfg.batch; ++i)
    std::copy(in.data.begin(), in.data.end(), out.data.begin() + i * in.shape.per_image());
  return out;
}

std::string dims(const std::array<int, 3>& d) {
  return std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
}

bool check_progress(const ProfileProgress& progress, const std::string& phase, int done, int total) {
  if (progress && !progress(phase, done, total)) throw Error("cancelled");
  return true;
}

void validate(const ProfileConfig& cfg) {
  if (cfg.batch < 1 || cfg.batch > 65536) throw UsageError("batch must be in 1..65536");
  if (cfg.height < 1 || cfg.width < 1 || cfg.height > 8192 || cfg.width > 8192)
    throw UsageError("input size must be within 1..8192 on each side");
  if (cfg.warmup < 0 || cfg.warmup > 1000000) throw UsageError("warm-up count must be in 0..1000000");
  if (cfg.iters < 1 || cfg.iters > 1000000) throw UsageError("iteration count must be in 1..1000000");
}

void fill_environment(RunReport& r, bool gpu, int device) {
  const CudaEnvironment& env = cuda_environment();
  r.driver = cuda_version_string(env.driver_version);
  r.cuda_runtime = cuda_version_string(env.runtime_version);
  r.cudnn = env.cudnn_version;
  if (gpu) {
    r.gpu = record_gpu(device);  // throws UsageError for a device this machine does not show
    r.device = r.gpu.name;
    r.sm_clock_mhz_start = current_sm_clock_mhz(device);
  } else {
    r.device = "CPU";
  }
}

// Builds the timeline of one iteration: spans rebased so the iteration starts at 0 (CUPTI timestamps are
// ~1e18 ns; rebased they stay exact in JSON, whose doubles hold integers up to 2^53), layer spans from the
// records where CUPTI gave them, everything in start order.
Timeline make_timeline(IterationTiming&& it, TimerKind kind, int nsteps) {
  Timeline t;
  t.clock = to_string(kind);
  if (!it.records.empty()) {
    int64_t t0 = INT64_MAX;
    for (const KernelRecord& k : it.records) t0 = std::min(t0, k.start_ns);
    std::vector<StepSpan> spans(static_cast<size_t>(nsteps));
    for (KernelRecord& k : it.records) {
      k.start_ns -= t0;
      k.end_ns -= t0;
      if (k.step < 0 || k.step >= nsteps) continue;
      StepSpan& s = spans[static_cast<size_t>(k.step)];
      if (s.step < 0) s = StepSpan{k.step, k.start_ns, k.end_ns};
      s.start_ns = std::min(s.start_ns, k.start_ns);
      s.end_ns = std::max(s.end_ns, k.end_ns);
    }
    for (const StepSpan& s : spans)
      if (s.step >= 0) t.steps.push_back(s);
    t.records = std::move(it.records);
    std::stable_sort(t.records.begin(), t.records.end(),
                     [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  } else {
    t.steps = std::move(it.step_spans);
    t.threads = std::move(it.thread_spans);
  }
  std::stable_sort(t.steps.begin(), t.steps.end(),
                   [](const StepSpan& a, const StepSpan& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(t.threads.begin(), t.threads.end(), [](const ThreadSpan& a, const ThreadSpan& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
  });
  return t;
}

// Sum of the step times an iteration measured (steps it could not time count nothing).
double per_layer_total(const IterationTiming& it) {
  double total = 0;
  for (int64_t ns : it.step_ns)
    if (ns > 0) total += static_cast<double>(ns);
  return total;
}

}  // namespace

std::string step_span_name(const std::vector<Layer>& topology, const std::vector<int>& layers, int step) {
  std::string name;
  for (int l : layers) {
    if (l < 0 || l >= static_cast<int>(topology.size()) || topology[static_cast<size_t>(l)].name.empty())
      return "step " + std::to_string(step);
    name += (name.empty() ? "" : "+") + topology[static_cast<size_t>(l)].name;
  }
  return name.empty() ? "step " + std::to_string(step) : name;
}

// Totals: a step counts once, under its first layer's kind and block; a layer fused into a step of another
// group is counted as fused there, so no group silently reads as zero-cost.
void compute_group_totals(RunReport& r) {
  const std::vector<Layer>& layers = r.topology;
  double sum_medians = 0;
  for (const auto& p : r.steps) sum_medians += p.time_ns.median;
  std::map<std::string, GroupTotal> kinds, blocks;
  std::vector<std::string> block_order;
  for (const Layer& l : layers) {
    GroupTotal& k = kinds[to_string(l.kind)];
    k.name = to_string(l.kind);
    ++k.layers;
    if (!blocks.count(l.block_name)) block_order.push_back(l.block_name);
    GroupTotal& b = blocks[l.block_name];
    b.name = l.block_name;
    ++b.layers;
  }
  for (const auto& p : r.steps) {
    if (p.layers.empty()) continue;
    const Layer& first = layers.at(static_cast<size_t>(p.layers.front()));
    GroupTotal& k = kinds[to_string(first.kind)];
    k.median_ns += p.time_ns.median;
    k.macs += p.macs;
    ++k.steps;
    GroupTotal& b = blocks[first.block_name];
    b.median_ns += p.time_ns.median;
    b.macs += p.macs;
    ++b.steps;
    for (size_t i = 1; i < p.layers.size(); ++i) {
      const Layer& l = layers.at(static_cast<size_t>(p.layers[i]));
      if (l.kind != first.kind) ++kinds[to_string(l.kind)].fused_layers;
      if (l.block_name != first.block_name) ++blocks[l.block_name].fused_layers;
    }
  }
  r.per_kind.clear();
  r.per_block.clear();
  for (auto& [name, g] : kinds) {
    g.share = sum_medians > 0 ? g.median_ns / sum_medians : 0;
    r.per_kind.push_back(g);
  }
  for (const auto& name : block_order) {
    GroupTotal g = blocks[name];
    g.share = sum_medians > 0 ? g.median_ns / sum_medians : 0;
    r.per_block.push_back(g);
  }
}

RunReport profile(const Model& model, const ProfileConfig& cfg_in, const ProfileProgress& progress) {
  ProfileConfig cfg = cfg_in;
  validate(cfg);
  auto backend = make_backend(cfg.backend);
  if (Availability a = backend->availability(); !a.available)
    throw Error("backend '" + cfg.backend + "' is not available: " + a.reason);
  const bool gpu = !is_host_backend(backend->name());
  if (!gpu) cfg.timer = TimerKind::host_clock;
  if (gpu && cfg.timer == TimerKind::host_clock)
    throw UsageError("GPU backends are timed with cudaEvents or CUPTI (--timing event|cupti), not the host clock");

  RunReport r;
  r.backend = backend->name();
  r.backend_description = backend->description();
  r.run_id = make_run_id(r.backend);
  r.model_source = model.source;
  r.model_checksum = model.checksum;
  r.model_data_files = model.file.external_files;
  r.model_synthetic = model.synthetic;
  r.commit = build_commit();
  r.date = iso_date_utc();
  r.warnings = model.warnings;
  fill_environment(r, gpu, cfg.device);

  r.layer_stats = analyse(model, cfg.batch, cfg.height, cfg.width);
  DeviceMemoryProbe memory_probe(gpu, cfg.device);  // the driver's view of the memory the network takes
  PrepareConfig pc{cfg.batch, cfg.height, cfg.width, cfg.precision, cfg.cuda, cfg.cpu_threads, cfg.cudnn};
  pc.device = cfg.device;
  auto net = backend->prepare(model, pc);
  memory_probe.sample();
  // The count the net runs with (the cpu backends resolve 0 to their default), and its description with it.
  cfg.cpu_threads = gpu ? 0 : net->config().cpu_threads;
  if (const std::string d = net->description(); !d.empty()) r.backend_description = d;
  if (cfg.graph_replay && !net->has_graph()) {
    if (!cfg.layers_without_graph)
      throw UsageError("backend '" + r.backend + "' has no CUDA graph to replay: profile it layer by layer");
    r.warnings.push_back("backend '" + r.backend + "' has no CUDA graph: its layers were profiled one by one");
    cfg.graph_replay = false;
  }
  const Tensor input = batch_input(cfg, model.input_channels);
  r.input_checksum = "fnv1a64:" + fnv1a64_hex(input.data.data(), input.data.size() * sizeof(float));
  if (cfg.input_name.empty()) cfg.input_name = cfg.input ? "tensor" : "random(seed=1)";
  r.memory = net->memory();
  r.kernels_per_run = net->kernels_per_run();
  r.resolved_options = net->resolved_options();

  // What else runs beside the timed phases: the host's other processes, the GPU's clock and neighbours
  // (sampled between runs, never inside a timed one).
  HostContentionProbe host_probe;
  GpuConditionsProbe gpu_probe(gpu, cfg.device);
  gpu_probe.sample();
  host_probe.start();

  // Phase 1: end to end. Only the run boundaries are observed (one event pair on GPU backends).
  {
    auto run_timer = make_run_timer(gpu);
    const int total = cfg.warmup + cfg.iters;
    std::vector<double> host_ms, gpu_ms;
    RunOptions opts;
    opts.observer = run_timer.get();
    for (int i = 0; i < total; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      net->run(input, opts);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= cfg.warmup) {
        host_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (gpu) gpu_ms.push_back(static_cast<double>(run_timer->last_run_ns()) / 1e6);
      }
      if (i % 10 == 9) gpu_probe.sample();
      check_progress(progress, "end-to-end", i + 1, total);
    }
    r.end_to_end.host_ms = summarize(std::move(host_ms));
    if (gpu) r.end_to_end.gpu_ms = summarize(std::move(gpu_ms));
    r.end_to_end.images_per_s =
        r.end_to_end.host_ms.median > 0 ? cfg.batch * 1000.0 / r.end_to_end.host_ms.median : 0.0;
  }

  // Phase 2: per step, with the chosen timer (and events beside CUPTI for the two-timer check, layer by
  // layer only: events cannot time steps inside a graph replay).
  const std::vector<ExecStep>& steps = net->steps();
  const int nsteps = static_cast<int>(steps.size());
  if (cfg.graph_replay && cfg.timer != TimerKind::cupti_kernel)
    throw UsageError(
        "per-layer times inside a CUDA graph replay come from CUPTI only (--timing cupti): cudaEvents recorded "
        "at capture time do not time each step of a replay");
  auto source = make_timing_source(cfg.timer);
  for (const auto& w : source->warnings()) r.warnings.push_back(w);
  if (cfg.graph_replay && source->kind() != TimerKind::cupti_kernel)
    throw Error("per-layer times inside a CUDA graph replay need CUPTI, which is unavailable here: " +
                (source->warnings().empty() ? std::string("no reason given") : source->warnings().front()));
  std::unique_ptr<TimingSource> events;
  if (source->kind() == TimerKind::cupti_kernel && !cfg.graph_replay)
    events = make_timing_source(TimerKind::cuda_event);
  r.timer = to_string(source->kind());
  TeeObserver tee(events ? static_cast<StepObserver*>(events.get()) : source.get(), source.get());
  RunOptions opts;
  opts.observer = events ? static_cast<StepObserver*>(&tee) : source.get();
  opts.graph_replay = cfg.graph_replay;
  bool replayed = false;  // some iteration's records came from a graph replay

  std::vector<std::vector<double>> step_samples(static_cast<size_t>(nsteps)), event_samples(steps.size());
  std::vector<double> records_per_step(steps.size(), 0.0);
  std::vector<std::vector<std::string>> names(steps.size());
  std::vector<std::pair<int64_t, std::string>> longest_grid(steps.size(), {-1, ""});
  std::vector<std::string> longest_block(steps.size());
  // Timeline candidates: every `stride`-th timed iteration (all of them up to kMaxTimelineCandidates); the
  // per-layer total of every timed iteration, for the median.
  const int stride = (cfg.iters + kMaxTimelineCandidates - 1) / kMaxTimelineCandidates;
  std::vector<std::pair<int, IterationTiming>> candidates;
  std::vector<double> totals;
  const int total = cfg.warmup + cfg.iters;
  for (int i = 0; i < total; ++i) {
    source->begin_iteration(nsteps);
    if (events) events->begin_iteration(nsteps);
    net->run(input, opts);
    IterationTiming it = source->end_iteration();
    IterationTiming ev = events ? events->end_iteration() : IterationTiming{};
    replayed = replayed || it.graph_replay;
    if (i >= cfg.warmup) {
      for (int s = 0; s < nsteps && s < static_cast<int>(it.step_ns.size()); ++s)
        if (it.step_ns[static_cast<size_t>(s)] >= 0)
          step_samples[static_cast<size_t>(s)].push_back(static_cast<double>(it.step_ns[static_cast<size_t>(s)]));
      for (int s = 0; s < nsteps && s < static_cast<int>(ev.step_ns.size()); ++s)
        if (ev.step_ns[static_cast<size_t>(s)] >= 0)
          event_samples[static_cast<size_t>(s)].push_back(static_cast<double>(ev.step_ns[static_cast<size_t>(s)]));
      for (const KernelRecord& k : it.records) {
        if (k.step < 0 || k.step >= nsteps) continue;
        const auto s = static_cast<size_t>(k.step);
        records_per_step[s] += 1.0;
        if (std::find(names[s].begin(), names[s].end(), k.name) == names[s].end()) names[s].push_back(k.name);
        if (k.kind == "kernel" && k.duration_ns() > longest_grid[s].first) {
          longest_grid[s] = {k.duration_ns(), dims(k.grid)};
          longest_block[s] = dims(k.block);
        }
      }
      const int timed = i - cfg.warmup;
      totals.push_back(per_layer_total(it));
      if (timed % stride == 0) candidates.emplace_back(timed, std::move(it));
    }
    if (i % 10 == 9) gpu_probe.sample();
    check_progress(progress, "per-layer", i + 1, total);
  }
  if (!candidates.empty()) {
    // The candidate closest to the median total (the earliest on a tie): a typical iteration, not the last.
    const double median_total = summarize(totals).median;
    size_t best = 0;
    for (size_t c = 1; c < candidates.size(); ++c)
      if (std::fabs(totals[static_cast<size_t>(candidates[c].first)] - median_total) <
          std::fabs(totals[static_cast<size_t>(candidates[best].first)] - median_total))
        best = c;
    Timeline t = make_timeline(std::move(candidates[best].second), source->kind(), nsteps);
    t.iteration = candidates[best].first;
    t.iterations = cfg.iters;
    t.choice = "median per-layer total";
    t.total_ns = totals[static_cast<size_t>(t.iteration)];
    t.median_total_ns = median_total;
    if (!t.steps.empty()) r.timeline = std::move(t);
  }
  gpu_probe.sample();
  const HostContention host = host_probe.stop();
  for (const auto& w : source->warnings())
    if (std::find(r.warnings.begin(), r.warnings.end(), w) == r.warnings.end()) r.warnings.push_back(w);
  r.execution = replayed ? "graph replay" : "layer by layer";
  if (cfg.graph_replay && !replayed)
    r.warnings.push_back(
        "a graph replay was asked for, but no CUPTI record carried a graph node: times are as "
        "recorded, attribution may be missing");

  double sum_medians = 0;
  r.steps.resize(steps.size());
  for (int s = 0; s < nsteps; ++s) {
    StepProfile& p = r.steps[static_cast<size_t>(s)];
    const ExecStep& e = steps[static_cast<size_t>(s)];
    p.step = s;
    p.name = e.name;
    p.layers = e.layers;
    p.variant = e.variant;
    p.time_ns = summarize(step_samples[static_cast<size_t>(s)]);
    if (events) {
      p.event_ns = summarize(event_samples[static_cast<size_t>(s)]);
      p.timers_disagree = std::fabs(p.event_ns->median - p.time_ns.median) > events->resolution_ns();
    }
    p.kernel_names = names[static_cast<size_t>(s)];
    p.kernels_per_iter = records_per_step[static_cast<size_t>(s)] / cfg.iters;
    p.grid = longest_grid[static_cast<size_t>(s)].second;
    p.block = longest_block[static_cast<size_t>(s)];
    double flops = 0;
    for (int l : e.layers) {
      if (l < 0 || l >= static_cast<int>(r.layer_stats.size())) throw Error("backend step covers a bad layer index");
      p.macs += r.layer_stats[static_cast<size_t>(l)].macs;
      flops += layer_flops(model.layers[static_cast<size_t>(l)], r.layer_stats[static_cast<size_t>(l)]);
    }
    // The bytes that cross the step's boundary (a fused step's inner maps stay on chip), in the storage type (the
    // network input float32).
    p.bytes = static_cast<int64_t>(step_bytes(model.layers, r.layer_stats, e.layers, storage_bytes(cfg.precision)));
    if (p.time_ns.median > 0) {
      p.gflops = flops / p.time_ns.median;  // FLOP per ns = GFLOP/s; FLOPs as layer_flops() counts them
      p.gbytes_per_s = static_cast<double>(p.bytes) / p.time_ns.median;
    }
    sum_medians += p.time_ns.median;
  }
  for (auto& p : r.steps) p.share = sum_medians > 0 ? p.time_ns.median / sum_medians : 0.0;

  // Every topology layer must be covered by exactly one step: nothing dropped, nothing counted twice.
  r.layers.resize(model.layers.size());
  for (size_t l = 0; l < model.layers.size(); ++l) r.layers[l].layer = static_cast<int>(l);
  for (const auto& p : r.steps) {
    for (int l : p.layers) {
      LayerProfile& lp = r.layers[static_cast<size_t>(l)];
      if (lp.step >= 0) throw Error("layer " + std::to_string(l) + " is covered by two steps of the backend");
      lp.step = p.step;
      if (p.layers.size() > 1) lp.fused_group = p.name;
    }
  }
  for (const auto& lp : r.layers)
    if (lp.step < 0) throw Error("layer " + std::to_string(lp.layer) + " is not covered by any step of the backend");

  r.topology = model.layers;
  for (Layer& l : r.topology) {
    l.weight.clear();
    l.bias.clear();
    l.weight.shrink_to_fit();
    l.bias.shrink_to_fit();
  }
  compute_group_totals(r);
  r.sum_of_steps_ms = sum_medians / 1e6;
  const double e2e = r.end_to_end.gpu_ms ? r.end_to_end.gpu_ms->median : r.end_to_end.host_ms.median;
  r.gap_ms = e2e - r.sum_of_steps_ms;
  memory_probe.sample();
  memory_probe.finish(r.memory);
  if (gpu) r.sm_clock_mhz_end = current_sm_clock_mhz(cfg.device);
  cfg.input.reset();
  r.config = cfg;
  r.options = options_of(cfg);

  ReliabilityInputs checks;
  checks.end_to_end = r.end_to_end.gpu_ms ? *r.end_to_end.gpu_ms : r.end_to_end.host_ms;
  for (const StepProfile& p : r.steps) checks.steps.push_back(StepNoise{p.name, p.share, p.time_ns.cv});
  gpu_probe.fill(checks);
  checks.threads_used = gpu ? 1 : std::max(1, cfg.cpu_threads);
  checks.host = host;
  r.reliability = assess_reliability(checks);
  return r;
}

namespace {

// What differs between the plan that gave the logits and the one that gave every layer's output, in words.
std::string describe_plan_change(const PrepareConfig& timed, const PrepareConfig& full) {
  std::string text;
  if (timed.cuda.fusion != full.cuda.fusion)
    text = std::string("layer outputs from cuda fusion ") + to_string(full.cuda.fusion) +
           " (every layer materialised, the per-op kernels); logits and times from fusion " +
           to_string(timed.cuda.fusion);
  else if (timed.cudnn.variant != full.cudnn.variant)
    text = std::string("layer outputs from the cudnn ") + to_string(full.cudnn.variant) +
           " variant (every layer materialised); logits and times from the " + to_string(timed.cudnn.variant) +
           " variant";
  return text.empty() ? std::string("layer outputs from a second net that materialises every layer") : text;
}

}  // namespace

DiffReport diff_backends(const Model& model, const std::string& backend, const std::string& reference,
                         const PrepareConfig& config, const Tensor& input) {
  DiffReport d;
  d.backend = backend;
  d.reference = reference;
  // A layer "diverges" past what its arithmetic explains: float32 summation order stays far below 1e-4;
  // TF32 operands (10-bit mantissa) and fp16 storage round every layer at about 1e-3, and the threshold is
  // the mode's stated logits bound (precision_layer_threshold).
  d.threshold = precision_layer_threshold(config.precision);
  RunOptions keep;
  keep.keep_layer_outputs = true;
  auto run_one = [&](const std::string& name, std::vector<Tensor>& outputs) {
    auto b = make_backend(name);
    if (Availability a = b->availability(); !a.available)
      throw Error("backend '" + name + "' is not available: " + a.reason);
    PrepareConfig pc = config;
    if (name == reference) pc.precision = reference_precision(reference, config.precision);
    auto net = b->prepare(model, pc);
    const std::optional<PrepareConfig> every = net->every_layer_config();
    if (!every) {
      Tensor logits = net->run(input, keep);
      outputs = net->layer_outputs();
      return logits;
    }
    // The logits from the plan as prepared (the one profiles time), the layer outputs from one that has them all.
    Tensor logits = net->run(input);
    net.reset();
    auto full = b->prepare(model, *every);
    full->run(input, keep);
    outputs = full->layer_outputs();
    if (name == backend) d.outputs_plan = describe_plan_change(pc, *every);
    return logits;
  };
  std::vector<Tensor> out_a, out_ref;
  const Tensor logits_a = run_one(backend, out_a);
  const Tensor logits_ref = run_one(reference, out_ref);
  if (logits_a.data.size() != logits_ref.data.size()) throw Error("the two backends give logits of different sizes");
  d.logits = compare(logits_a.data.data(), logits_ref.data.data(), static_cast<int64_t>(logits_a.data.size()));
  const int classes = static_cast<int>(logits_a.shape.per_image());
  const std::vector<std::string> no_labels;
  for (const auto& p : top_k(logits_a.data.data(), classes, 5, no_labels)) d.top5.push_back(p.index);
  for (const auto& p : top_k(logits_ref.data.data(), classes, 5, no_labels)) d.reference_top5.push_back(p.index);
  d.top5_agree = d.top5 == d.reference_top5;
  // Every image of the batch must agree, not only the first.
  for (int64_t n = 1; n < logits_a.shape.n && d.top5_agree; ++n) {
    const float* a = logits_a.data.data() + n * classes;
    const float* b = logits_ref.data.data() + n * classes;
    auto ta = top_k(a, classes, 5, no_labels), tb = top_k(b, classes, 5, no_labels);
    for (size_t k = 0; k < ta.size(); ++k) d.top5_agree = d.top5_agree && ta[k].index == tb[k].index;
  }
  d.layers.resize(model.layers.size());
  for (size_t l = 0; l < model.layers.size(); ++l) {
    LayerDiff& ld = d.layers[l];
    ld.layer = static_cast<int>(l);
    if (l < out_a.size() && l < out_ref.size() && !out_a[l].empty() && out_a[l].data.size() == out_ref[l].data.size()) {
      ld.compared = true;
      ld.error = compare(out_a[l].data.data(), out_ref[l].data.data(), static_cast<int64_t>(out_a[l].data.size()));
      if (d.first_divergent_layer < 0 && (!ld.error.finite || ld.error.rel_l2 > d.threshold))
        d.first_divergent_layer = ld.layer;
    }
  }
  return d;
}

OptionValues options_of(const ProfileConfig& c) {
  std::map<std::string, std::string> v;
  v["backend"] = c.backend;
  v["precision"] = to_string(c.precision);
  v["batch"] = std::to_string(c.batch);
  // The size as asked: "" where the model's (or an image's preprocessing) gave it; the size that ran is the
  // report's input_height and input_width either way.
  const std::string& asked = c.options.value("input-size");
  const bool as_asked = asked.empty() || parse_input_size(asked) == std::pair<int, int>{c.height, c.width};
  v["input-size"] = as_asked ? asked : std::to_string(c.height) + "x" + std::to_string(c.width);
  v["warmup"] = std::to_string(c.warmup);
  v["iters"] = std::to_string(c.iters);
  v["timing"] = c.timer == TimerKind::cupti_kernel ? "cupti" : "event";
  v["exec"] = c.graph_replay ? "graph" : "layers";
  v["threads"] = std::to_string(c.cpu_threads);
  v["device"] = std::to_string(c.device);
  v["cuda-variant"] = to_string(c.cuda.variant);
  v["cuda-fusion"] = to_string(c.cuda.fusion);
  v["cuda-graph"] = to_string(c.cuda.graph);
  v["cuda-gemm-tile"] = c.cuda.gemm_tile;
  v["cuda-pdl"] = to_string(c.cuda.pdl);
  v["cuda-splitk"] = to_string(c.cuda.splitk);
  v["cudnn-variant"] = to_string(c.cudnn.variant);
  v["cudnn-graph"] = to_string(c.cudnn.graph);
  v["cudnn-layout"] = to_string(c.cudnn.layout);
  OptionValues out;
  const std::vector<std::string>& backends = find_option("backend")->choices;
  if (std::find(backends.begin(), backends.end(), c.backend) == backends.end())
    v.erase("backend");  // a report of a backend this program does not know: its backend field says which
  for (const auto& [name, value] : v) {
    const OptionValue& given = c.options.at(name);
    if (!honours(*find_option(name), c.backend)) {
      out.offer(name, given.value, given.source);  // the backend ignores it: recorded as asked
    } else if (given.value == value) {
      out.offer(name, value, given.source);
    } else {
      // A count the engine resolved (threads 0 -> the count used) keeps its source; other differences were set
      // by the caller.
      const bool resolved = name == "threads" && given.value == "0";
      out.offer(name, value, resolved ? given.source : OptionSource::flag);
    }
  }
  for (const OptionSpec& s : option_table())
    if (!s.per_run) out.offer(s.name, c.options.value(s.name), c.options.at(s.name).source);
  return out;
}

}  // namespace mnv2
