// The profiler: an un-instrumented run for end-to-end latency and throughput, then a separate
// instrumented run for per-layer times, for any backend, batch and input size. Produces a RunReport.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/model.h"
#include "mnv2/options.h"
#include "mnv2/reliability.h"
#include "mnv2/stats.h"
#include "mnv2/tensor.h"
#include "mnv2/timing.h"

namespace mnv2 {

struct ProfileConfig {
  std::string backend = "cpu";
  int batch = 1;
  int height = 224;
  int width = 224;
  int warmup = 10;  // untimed runs before each of the two timed phases
  int iters = 100;  // timed runs in each phase
  Precision precision = Precision::fp32;
  CudaOptions cuda;     // the cuda backend's options (PrepareConfig::cuda)
  int cpu_threads = 0;  // the cpu backends' threads (PrepareConfig::cpu_threads); in a report: the count used
  TimerKind timer = TimerKind::cuda_event;  // GPU backends; the cpu backend always uses the host clock
  // Per-layer phase: replay the backend's CUDA graph and attribute CUPTI records to steps by graph node
  // (true; needs timer cupti_kernel and a backend with a graph), or run layer by layer (false).
  bool graph_replay = false;
  // With graph_replay: a backend that has no CUDA graph (cpu, cudnn) is profiled layer by layer, with a
  // warning in its report, instead of refused (compare, where a list mixes backends).
  bool layers_without_graph = false;
  // Input: when empty, a deterministic random batch (seed 1). A single image is repeated over the batch.
  std::optional<Tensor> input;
  std::string input_name;  // shown in reports ("cat.input.f32", "random(seed=1)")
  CudnnOptions cudnn;      // the cudnn backend's options (PrepareConfig::cudnn)
  int device = 0;          // the GPU backends' CUDA ordinal among the visible GPUs (PrepareConfig::device)
  // Where each option's value came from, as the front end resolved it (mnv2/options.h). The fields above are
  // what runs; profile() records them in the report with these sources (a field set by a caller without a
  // source, e.g. a test, is recorded as a flag).
  OptionValues options;
};

// A configuration's run options with their sources: each field's value, with the source `config.options`
// gives it where the values agree, else "flag" (set by the caller); the per-run options only.
OptionValues options_of(const ProfileConfig& config);

// One execution step of the prepared network (one topology layer, or several when the backend fused them).
struct StepProfile {
  int step = 0;
  std::string name;
  std::vector<int> layers;
  std::string variant;
  Summary time_ns;                        // the chosen timer, per iteration
  std::optional<Summary> event_ns;        // cupti runs also time steps with events (the two-timer check)
  bool timers_disagree = false;           // |median cupti - median event| > event resolution
  std::vector<std::string> kernel_names;  // distinct, in launch order (cupti)
  double kernels_per_iter = 0;            // cupti: activity records per iteration in this step
  std::string grid, block;                // of the longest kernel, "x,y,z" (cupti)
  int64_t macs = 0, bytes = 0;            // macs summed over the covered layers; bytes crossing the step's boundary
                                          // (step_bytes, mnv2/flops.h) in the storage type
  double gflops = 0, gbytes_per_s = 0;    // from the median time
  double share = 0;                       // of the sum of step medians
};

// One row per topology layer; time figures refer to the layer's step (shared by fused layers).
struct LayerProfile {
  int layer = 0;
  int step = -1;
  std::string fused_group;  // the step name when the step covers more than one layer, else empty
};

struct GroupTotal {
  std::string name;      // a layer kind or a block name
  double median_ns = 0;  // sum of the medians of the steps whose first layer is in the group
  double share = 0;
  int64_t macs = 0;
  int layers = 0;        // layers of the network in the group
  int steps = 0;         // steps counted here (their first layer is in the group)
  int fused_layers = 0;  // layers of the group that run inside a step counted under another group:
                         // their time is in that group's total, not zero (e.g. ReLU6 fused into Conv2d)
};

struct EndToEnd {
  Summary host_ms;                // host wall time per run(): upload, every layer, download, sync
  std::optional<Summary> gpu_ms;  // event pair around the whole run on the stream (GPU backends)
  double images_per_s = 0;        // batch / median host time
};

struct LayerDiff {
  int layer = 0;
  bool compared = false;  // false where one side did not materialise the output (fused away)
  ErrorStats error;
};

struct DiffReport {
  std::string backend;    // the one under test
  std::string reference;  // usually cpu
  std::vector<LayerDiff> layers;
  ErrorStats logits;
  bool top5_agree = false;
  std::vector<int> top5, reference_top5;  // of the first image
  int first_divergent_layer = -1;         // first compared layer whose rel L2 exceeds the threshold
  double threshold = 1e-4;
  // "" where the backend's layer outputs come from the net that gave its logits; else which plan gave them
  // (PreparedNet::every_layer_config(): "cuda fusion none (every layer materialised); logits from fusion block").
  std::string outputs_plan;
};

// One iteration of the per-layer phase at its own timestamps, chosen as the iteration whose per-layer total
// (the sum of its step times) is closest to the median of all timed iterations' totals. Times are
// nanoseconds from the iteration's origin: host clock (steady clock from the start of the iteration),
// cudaEvent (GPU time from the run's first event), CUPTI (GPU timestamps from the iteration's first record).
struct Timeline {
  std::string clock;  // "host_clock", "cuda_event", "cupti_kernel": the source of the timestamps
  // Which iteration: its index among the timed iterations of the per-layer phase (0-based) and how it was
  // chosen ("median per-layer total"; "last iteration" in reports written before the choice existed).
  int iteration = -1;
  int iterations = 0;  // timed iterations the choice was made from
  std::string choice;
  double total_ns = 0;                // this iteration's per-layer total
  double median_total_ns = 0;         // the median of every timed iteration's per-layer total
  std::vector<StepSpan> steps;        // layer spans, in start order (CUPTI: first record start to last record end)
  std::vector<ThreadSpan> threads;    // host backends that report their worker threads
  std::vector<KernelRecord> records;  // CUPTI: every kernel, memcpy and memset of the iteration, in start order
};
// At most this many iterations are kept as candidates for the timeline (spread evenly over the phase); the
// median of the totals is always taken over every iteration.
inline constexpr int kMaxTimelineCandidates = 256;

// The name a step's spans carry in timelines and traces: its layers' structural names joined by "+"
// ("stem.conv", "block2.expand+block2.expand_relu6"); "step N" where the topology lacks a layer.
std::string step_span_name(const std::vector<Layer>& topology, const std::vector<int>& layers, int step);

// Where a run happened when it was not this machine (mnv2/remote.h): the target's name, the host the study ran on
// (a compute node under Slurm) and the Slurm job; empty for a local run (and absent from its report).
struct RunOrigin {
  std::string target, host, slurm_job;
};
// "on h200 (gpu-node-3, Slurm job 812)", "" for a local run: how every front end names where a run happened.
std::string origin_text(const RunOrigin& origin);

struct RunReport {
  int schema_version = 1;
  std::string run_id;
  std::string backend;
  std::string backend_description;
  std::string timer;                         // "cupti_kernel", "cuda_event", "host_clock"
  std::string execution = "layer by layer";  // of the per-layer phase: "layer by layer" or "graph replay"
  ProfileConfig config;                      // without the input tensor
  // Every per-run option's value and where it came from (flag, environment, saved setting, default); in a
  // report written before the options object, derived from its metadata with source "unknown".
  OptionValues options;
  // model_checksum: Model::checksum, "sha256:<64 hex>" of the .onnx file; "fnv1a64:<16 hex>" in older reports
  // (of the file followed by its external data). match_checksums() compares them.
  std::string model_source, model_checksum;
  std::vector<ExternalDataFile> model_data_files;  // the model's external data files; empty in older reports
  bool model_synthetic = false;
  std::string input_checksum;
  std::string device;  // GPU name or "CPU"
  std::string commit;
  std::string date;  // ISO 8601 UTC
  // Environment recorded at the start (and clocks at the end) of the run.
  std::string driver, cuda_runtime, cudnn;
  int sm_clock_mhz_start = -1, sm_clock_mhz_end = -1;
  GpuRecord gpu;  // the GPU backends' card and its settings (metadata.gpu); index -1 for a CPU run or an older report
  RunOrigin origin;  // metadata.target: a remote run's target, host and Slurm job
  MemoryReport memory;
  // Kernel launches per un-instrumented run (PreparedNet::kernels_per_run()); -1 where not counted, and in
  // reports written before the count existed.
  int64_t kernels_per_run = -1;
  // Options the backend resolved (cuda-fusion auto -> block, with the rule behind it); empty where none was
  // resolved and in older reports. `options` keeps the values asked.
  std::vector<ResolvedOption> resolved_options;

  EndToEnd end_to_end;
  std::vector<StepProfile> steps;
  std::vector<LayerProfile> layers;  // the model's layers, in order
  std::vector<Layer> topology;       // weights dropped: kind, name, attributes, block
  std::vector<LayerStats> layer_stats;
  std::vector<GroupTotal> per_kind, per_block;
  double sum_of_steps_ms = 0;  // sum of step medians (instrumented run)
  double gap_ms = 0;           // end-to-end median (gpu if measured, else host) minus sum_of_steps_ms
  // Timeline (item "a real timeline" of issue 15): one iteration at its own timestamps; absent in reports
  // written before it, except CUPTI ones, whose last iteration's records (the old "kernel_records") become one.
  std::optional<Timeline> timeline;
  std::vector<std::string> warnings;
  std::optional<DiffReport> diff;

  // ---- reliability (mnv2/reliability.h): the run's own spread and what else ran beside it -------------
  Reliability reliability;
};

// Progress: (phase, done, total); return false to cancel (profile() then throws Error "cancelled").
using ProfileProgress = std::function<bool(const std::string& phase, int done, int total)>;

RunReport profile(const Model& model, const ProfileConfig& config, const ProfileProgress& progress = {});

// Fills r.per_kind and r.per_block from r.topology and r.steps (profile() does this; exposed for reports
// assembled elsewhere, e.g. tests).
void compute_group_totals(RunReport& r);

// Runs `backend` and `reference` on the same input with every layer output kept and compares them.
DiffReport diff_backends(const Model& model, const std::string& backend, const std::string& reference,
                         const PrepareConfig& config, const Tensor& input);

}  // namespace mnv2
