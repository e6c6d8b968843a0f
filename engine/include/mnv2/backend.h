// The backend interface: cpu (oneDNN), cpu-ref (the float32 reference), cudnn (NVIDIA libraries), cuda (our
// kernels). A backend says whether it can run here and what it cannot run before it runs; prepare() builds a
// PreparedNet that owns every buffer for one (model, batch, input size, precision).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/image.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2 {

enum class Precision { fp32, tf32, fp16 };
const char* to_string(Precision p);
Precision parse_precision(const std::string& text);  // throws UsageError

// How the cuda backend runs a network: fields of the prepare configuration, chosen by the front ends (mnv2
// flags, the app's run settings); the engine reads no environment for them. Other backends ignore them.
struct CudaOptions {
  enum class Variant { fast, baseline };  // fast: tensor-core GEMMs, fused steps; baseline: the v1 kernels
  // automatic: the plan the rules table (mnv2/cuda_plan.h, cuda_fusion_rules()) measured fastest for this GPU,
  // its code, the precision and the batch; the per-layer plan (none) where the table has no measurement.
  // none: a step per layer (epilogues fused); expand_dw: expansion 1x1 + depthwise 3x3 in one kernel (fp32);
  // block: the stem + first block and each inverted-residual block (expand, depthwise, project, residual) in one
  // kernel (every precision; the kernels' own rules leave a block unfused where its GEMMs measured faster);
  // block_split: block, with each fused block whose shape and batch the architecture's measured table lists
  // (backends/cuda/block_split_rules.h; fp16) run with the tile and the split of its expanded channels over several
  // CTAs per tile that measured fastest (the blocks block leaves unfused stay unfused).
  enum class Fusion { automatic, none, expand_dw, block, block_split };
  enum class Graph { automatic, on, off };  // replay one CUDA graph: auto (unless steps are timed), always, never
  // Programmatic Dependent Launch between the kernels of the CUDA graph (sm_90 and code compiled for it): each
  // kernel may start while the previous one finishes and waits on the GPU for its output. auto: on where the
  // device and the code allow it; on: refused (Error) where they do not; off: plain stream order. Under PDL every
  // kernel loads its weights before it waits (they are constants); late_weights: on, with each kernel's weights
  // loaded after its wait as before issue 32 (what the early loads save is measured against it).
  enum class Pdl { automatic, on, off, late_weights };
  // How a split-K GEMM's partial sums are added: separate (a reduction kernel after the GEMM, the default: faster
  // on the H200, docs/PERFORMANCE.md run 9b), in_kernel (the last block of each output tile to finish adds them
  // and applies the epilogue: no extra launch, the same bits) or cluster (each tile's splits run as one thread-block
  // cluster and add their partials through distributed shared memory: no extra launch, no workspace, the same
  // bits; sm_90 and code compiled for it, at most 8 splits; the tensor-core GEMMs of fp16 and tf32 only).
  enum class SplitK { separate, in_kernel, cluster };
  Variant variant = Variant::fast;
  Fusion fusion = Fusion::automatic;
  Graph graph = Graph::automatic;
  std::string gemm_tile;  // "" = the planner's choice; "128x64" etc. forces one GEMM tile (tuning experiments)
  Pdl pdl = Pdl::automatic;
  SplitK splitk = SplitK::separate;
  bool operator==(const CudaOptions&) const = default;
};
const char* to_string(CudaOptions::Variant v);  // "fast", "baseline"
const char* to_string(CudaOptions::Fusion f);   // "auto", "none", "expand_dw", "block", "block_split"
const char* to_string(CudaOptions::Graph g);    // "auto", "on", "off"
const char* to_string(CudaOptions::Pdl p);      // "auto", "on", "off", "late_weights"
const char* to_string(CudaOptions::SplitK s);   // "separate", "in_kernel", "cluster"
// Parsers for flags and overrides; throw UsageError naming the accepted values.
CudaOptions::Variant parse_cuda_variant(const std::string& text);
CudaOptions::Fusion parse_cuda_fusion(const std::string& text);
CudaOptions::Graph parse_cuda_graph(const std::string& text);
CudaOptions::Pdl parse_cuda_pdl(const std::string& text);
CudaOptions::SplitK parse_cuda_splitk(const std::string& text);

// How the cudnn backend runs a network (PrepareConfig::cudnn); other backends ignore them.
struct CudnnOptions {
  // fused: one cuDNN graph-API operation graph per convolution group (conv + bias + ReLU6/ReLU + residual add),
  // autotuned engine configurations, a persistent plan cache; naive: one legacy cuDNN call per layer (NCHW).
  enum class Variant { fused, naive };
  enum class Graph { automatic, on, off };  // replay one CUDA graph: auto (unless steps are timed), always, never
  // Activation layout of the fused variant: auto (NHWC in tf32 and fp16, NCHW in fp32), or forced. The naive
  // variant is NCHW always.
  enum class Layout { automatic, nchw, nhwc };
  Variant variant = Variant::fused;
  Graph graph = Graph::automatic;
  Layout layout = Layout::automatic;
  bool operator==(const CudnnOptions&) const = default;
};
const char* to_string(CudnnOptions::Variant v);  // "fused", "naive"
const char* to_string(CudnnOptions::Graph g);    // "auto", "on", "off"
const char* to_string(CudnnOptions::Layout l);   // "auto", "nchw", "nhwc"
// Parsers for flags; throw UsageError naming the accepted values.
CudnnOptions::Variant parse_cudnn_variant(const std::string& text);
CudnnOptions::Graph parse_cudnn_graph(const std::string& text);
CudnnOptions::Layout parse_cudnn_layout(const std::string& text);

struct PrepareConfig {
  int batch = 1;
  int height = 224;
  int width = 224;
  Precision precision = Precision::fp32;
  CudaOptions cuda;
  // Host threads of the cpu backends (cpu, cpu-ref): 0 = the default (env MNV2_CPU_THREADS, else OpenMP's
  // count); 1..4096 pins it (benchmarks). prepare() resolves 0, and PreparedNet::config() carries the count the
  // net runs with. GPU backends ignore it.
  int cpu_threads = 0;
  CudnnOptions cudnn;  // last, so the positional initialisers above stay valid
  // The GPU backends' device: the CUDA ordinal among the visible GPUs (CUDA_VISIBLE_DEVICES applies). The cpu
  // backends ignore it.
  int device = 0;
};

struct Availability {
  bool available = false;
  std::string reason;  // why not, when not available
};

// One unit of work of a prepared network. A fused step covers several topology layers; time and
// diffs are attributed to all of them, never to a single one silently.
struct ExecStep {
  std::string name;         // e.g. "Conv2d 0", or "Conv2d 5 + ReLU6 6" when fused
  std::vector<int> layers;  // topology layer indices covered, ascending
  std::string variant;      // implementation detail shown in reports (algorithm, kernel variant)
};

// The nodes of a captured CUDA graph and the step that enqueued each, recorded at capture time, so that
// GPU work seen inside a replay of that graph (CUPTI records carry a graph node id) can be attributed to
// steps. Handles are the CUDA runtime's cudaGraphNode_t, opaque here (the engine API has no CUDA types).
struct GraphStepMap {
  std::vector<std::pair<void*, int>> nodes;  // node -> step index; nodes outside steps (upload, download) absent
  // The step of every node in capture order (-1 outside steps). A graph captured from one stream is a chain
  // and replays its nodes in this order: the fallback where the profiler cannot tell the nodes by id.
  std::vector<int> sequence;
};

// Called around each step's work, and around the whole run (input upload to logits download).
// `stream` is the backend's cudaStream_t, nullptr for host backends.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void run_begin(void* /*stream*/) {}
  virtual void run_end(void* /*stream*/) {}
  virtual void step_begin(int step, void* stream) = 0;
  virtual void step_end(int step, void* stream) = 0;
  // False for an observer that only brackets the whole run (a run timer): a backend may then replay its CUDA
  // graph, since nothing is asked of it per step. True for every observer that times steps.
  virtual bool times_steps() const { return true; }

  // Per-step timing of a graph replay, where step_begin/step_end are never called: only an observer that
  // can see inside a replay (CUPTI, by graph node id) returns a non-zero id, unique in the process. cudaEvents
  // recorded around steps at capture time would not measure anything per replay, so they return 0 and a
  // backend refuses to replay a graph for them.
  virtual uint64_t graph_observer_id() const { return 0; }
  // A backend makes an executable graph for each graph observer it meets, inside this call: `instantiate`
  // does it, while the observer watches how the captured nodes of `map` are copied into the executable one.
  virtual void instantiate_graph(const GraphStepMap& /*map*/, const std::function<void()>& instantiate) {
    instantiate();
  }

  // Worker threads of a host backend that splits a step over a team (the cpu-ref kernels' OpenMP regions): an
  // observer that wants their spans says so, and the backend then reports, between step_begin and step_end of
  // `step`, each thread's first start and last end of work in the step, as steady-clock nanoseconds
  // (std::chrono::steady_clock::now().time_since_epoch()). Backends skip the bookkeeping for other observers.
  virtual bool wants_thread_spans() const { return false; }
  virtual void thread_span(int /*step*/, int /*thread*/, int64_t /*begin_ns*/, int64_t /*end_ns*/) {}
};

struct RunOptions {
  bool keep_layer_outputs = false;  // copy every layer output to the host (for diffs); slow
  StepObserver* observer = nullptr;
  // With an observer that times steps: replay the backend's CUDA graph (true; the observer must have a
  // graph_observer_id(), else UsageError) or run layer by layer (false). Backends without a graph refuse
  // true (PreparedNet::has_graph()). Observers that only bracket the run (RunTimer) always get the graph.
  bool graph_replay = false;
  // The network alone, for device-resident throughput: the input already on the device (the last upload
  // stays there), no upload, no logits download; run() returns an empty Tensor. Only where
  // PreparedNet::runs_device_resident(); only with no observer or one that brackets the run (RunTimer).
  bool device_resident = false;
};

// Bytes a prepared network holds (device memory for GPU backends, host memory for cpu), as the backend
// accounts them; for GPU backends also what the driver saw (see mnv2/memory.h).
struct MemoryReport {
  int64_t weight_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t workspace_bytes = 0;
  int tensors = 0;  // buffers held (weights, activations, workspace); 0 where the backend does not count them
  // Device memory in use on the whole GPU (cudaMemGetInfo: every process, this one's CUDA context
  // included) before prepare(), and the highest reading after prepare() and after the runs; -1: not measured.
  int64_t device_used_before_bytes = -1;
  int64_t device_used_peak_bytes = -1;
  int64_t device_total_bytes = -1;
  int64_t total() const { return weight_bytes + activation_bytes + workspace_bytes; }
  // What the driver saw the network take (buffers, library handles and workspaces, allocator rounding);
  // -1 where not measured.
  int64_t driver_held_bytes() const {
    return device_used_before_bytes < 0 || device_used_peak_bytes < 0
               ? -1
               : device_used_peak_bytes - device_used_before_bytes;
  }
};

// An option whose value asks the backend to choose ("auto"), as this net resolved it: the option's name
// ("cuda-fusion"), the value asked, the value that runs and why (the rule and its measurement).
struct ResolvedOption {
  std::string option, requested, resolved, why;
  bool operator==(const ResolvedOption&) const = default;
};

class PreparedNet {
 public:
  virtual ~PreparedNet() = default;
  virtual const PrepareConfig& config() const = 0;
  // The backend's description as this net was prepared (the cpu backends name the thread count it runs
  // with); empty where Backend::description() says it all.
  virtual std::string description() const { return {}; }
  virtual const std::vector<ExecStep>& steps() const = 0;
  // input: [batch, channels, height, width] as prepared; returns the logits [batch, classes, 1, 1].
  // Throws UsageError on a shape mismatch, Error on a failure (naming the layer).
  virtual Tensor run(const Tensor& input, const RunOptions& options = {}) = 0;
  // Every topology layer's output of the last run made with keep_layer_outputs; an empty Tensor for a
  // layer the backend does not materialise (fused away).
  virtual const std::vector<Tensor>& layer_outputs() const = 0;
  virtual MemoryReport memory() const = 0;
  // True where run() can replay one CUDA graph of the whole network with per-step attribution
  // (RunOptions::graph_replay).
  virtual bool has_graph() const { return false; }
  // True where run() takes RunOptions::device_resident.
  virtual bool runs_device_resident() const { return false; }

  // Where this net's plan fuses layers away (their layer_outputs() are empty: the cuda backend's block or
  // expand_dw fusion), the configuration of a plan of the same backend that materialises every layer; nullopt
  // where every layer's output exists already. A run that needs every layer's output (diffs) prepares that
  // plan, and its report says which plan produced the times and logits and which the layer outputs.
  virtual std::optional<PrepareConfig> every_layer_config() const { return std::nullopt; }

  // The end-to-end input path from 8-bit pixels: `images` network-size RGB images, interleaved (HWC; what
  // resize_crop() makes, height x width as prepared), back to back, a whole multiple of the prepared batch. They
  // run as images / batch sub-batches, each converted and normalised by `n` exactly as preprocess() does, and
  // the logits [images, classes, 1, 1] come back. The default normalises on the host and calls run() per
  // sub-batch; a backend that can (u8_path()) uploads the bytes through pinned staging buffers, converts them on
  // the GPU and overlaps each sub-batch's upload with the previous sub-batch's compute.
  // Throws UsageError on a count or shape mismatch, Error on a failure.
  virtual Tensor run_u8(const uint8_t* hwc, int64_t images, const InputNormaliser& n);
  // How run_u8() works here, for reports: "host" (the default above) or what the backend does instead.
  virtual std::string u8_path() const { return "host: normalised on the host, then run()"; }

  // Kernel launches one un-instrumented run makes on the GPU: the kernel nodes of the net's CUDA graph, or the
  // kernels it launches one by one where it has none; memory copies are not kernels. -1 where not counted (the
  // host backends, cudnn).
  virtual int64_t kernels_per_run() const { return -1; }

  // The options this net resolved (the cuda backend: cuda-fusion); reports keep them beside the options asked,
  // and a command that repeats the run's plan elsewhere (Nsight Compute's) passes the resolved values.
  virtual std::vector<ResolvedOption> resolved_options() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu", "cpu-ref", "cudnn", "cuda"
  virtual std::string description() const = 0;  // "CPU, fp32: oneDNN 2.6.3, jit avx512_core_bf16 (...), 2 threads"
  virtual Availability availability() const = 0;
  // nullopt if the backend can run this layer, otherwise the reason it cannot.
  virtual std::optional<std::string> unsupported_reason(const Layer& layer) const = 0;
  // The arithmetic modes prepare() accepts; every backend runs fp32.
  virtual bool supports(Precision p) const { return p == Precision::fp32; }
  // Throws Error if unavailable or a layer is unsupported (naming it), UsageError on a bad config.
  virtual std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const = 0;
};

std::vector<std::string> backend_names();  // every backend this build knows, available or not
// True for the backends that run on the host (cpu, cpu-ref): host clock, host memory, no GPU ceilings.
bool is_host_backend(const std::string& name);
std::unique_ptr<Backend> make_backend(const std::string& name);  // throws UsageError for unknown names

// What a reference backend runs when `wanted` is asked for: `wanted` if it supports it, else fp32 (the cpu
// reference stays fp32 when a GPU backend is compared in tf32 or fp16).
Precision reference_precision(const std::string& backend, Precision wanted);

// The stated error bounds of the precision modes, kept here only: the relative L2 error of the logits
// against the float64 golden logits or the fp32 cpu reference (fp32 1e-5: only the summation order differs;
// tf32 1e-2; fp16 2e-2). The GPU tests of every backend check it.
double precision_logits_bound(Precision p);
// The per-layer rel L2 past which a diff calls a layer divergent (DiffReport::threshold): 1e-4 in fp32
// (summation order stays far below it), and in the reduced modes the logits bound itself, so a run within
// its stated bound never has its logits flagged.
double precision_layer_threshold(Precision p);

// Bytes per stored activation or weight element in a mode: 2 in fp16 (both GPU backends keep half tensors),
// else 4. The traffic models (the profiler's GB/s, the roofline's bytes) scale the float32 counts of
// analyse() by it; what stays float32 in an fp16 run (the network input, the cuda backend's depthwise and
// stem weights, the logits) is under 2% of the bytes and counted at 2 too.
int storage_bytes(Precision p);

}  // namespace mnv2
