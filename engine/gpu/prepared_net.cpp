// The prepared-network core of the GPU backends (prepared_net.h): the run loop, the graphs and the rules for runs.
#include "gpu/prepared_net.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "backends/layer_checks.h"  // layer_label
#include "gpu/check.h"
#include "gpu/graph_capture.h"  // capture with nodes tied to steps, kernel count, PDL edges
#include "gpu/nvtx_range.h"
#include "mnv2/error.h"

namespace mnv2::gpu {
namespace {

// The pinned input starts filled with this byte (NaN floats): the warm-up pass at prepare() reads it.
constexpr int kPoisonByte = 0xFF;

}  // namespace

// The batch's trip from the caller's (pageable) memory into a pinned upload buffer was 20 ms of the 32.6 ms host
// time at batch 256 with one thread (run 1, H200 machine).
void parallel_copy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kChunk = size_t{4} << 20;  // bytes per task
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (bytes <= kChunk) {
    std::memcpy(d, s, bytes);
    return;
  }
  const auto chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunk;
    std::memcpy(d + begin, s + begin, std::min(kChunk, bytes - begin));
  }
}

GpuPreparedNet::GpuPreparedNet(const PrepareConfig& config, NetSettings settings)
    : config_(config), settings_(std::move(settings)), memory_(settings_.who, config) {
  MNV2_CHECK_CUDA(cudaSetDevice(config_.device));
  stream_ = make_stream();
}

GpuPreparedNet::~GpuPreparedNet() { wait_idle(); }

void GpuPreparedNet::wait_idle() noexcept {
  if (stream_) MNV2_CHECK_LOG(cudaStreamSynchronize(stream_.get()));
}

void GpuPreparedNet::finish_prepare(const Model& model, std::vector<ExecStep> steps, const Shape& output_shape) {
  steps_ = std::move(steps);
  labels_.clear();
  for (const ExecStep& s : steps_) labels_.push_back(layer_label(model.layers.at(static_cast<size_t>(s.layers.at(0)))));
  input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
  output_shape_ = output_shape;
  layer_outputs_.assign(model.layers.size(), Tensor{});

  pinned_input_ = memory_.allocate_pinned(static_cast<size_t>(input_shape_.numel()) * sizeof(float), "the input");
  std::memset(pinned_input_.get(), kPoisonByte, pinned_input_.bytes());  // the warm-up pass below reads it
  pinned_logits_ = memory_.allocate_pinned(static_cast<size_t>(output_shape_.numel()) * sizeof(float), "the logits");
  cudaStream_t stream = stream_.get();
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));

  // One layer-by-layer pass on the poisoned (NaN) input: every kernel gets loaded (lazy module loading) and every
  // launch is checked before any of them is captured. Outputs stay NaN, so still poisoned.
  enqueue_network(stream, nullptr);
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (settings_.graph != GraphMode::off) {
    capture_graphs();
  } else if (settings_.count_kernels) {
    count_launches();
  }
}

// ---- running -------------------------------------------------------------------------------------------------

Tensor GpuPreparedNet::run(const Tensor& input, const RunOptions& options) {
  const std::string& who = settings_.who;
  if (!(input.shape == input_shape_) || static_cast<int64_t>(input.data.size()) != input_shape_.numel())
    throw UsageError(who + ": input shape " + input.shape.str() + " (" + std::to_string(input.data.size()) +
                     " values) does not match the prepared " + input_shape_.str());
  StepObserver* observer = options.observer;
  // A run timer only brackets the whole run; any other observer times steps, which in a graph replay only an
  // observer that sees inside it (CUPTI, by graph node) can do: events around steps are not replayed per step.
  const bool times_steps = observer != nullptr && observer->times_steps();
  const bool replay_for_steps = times_steps && (options.graph_replay || settings_.graph == GraphMode::on);
  if (replay_for_steps && !graph_exec_)
    throw UsageError(who + ": a graph replay was asked for, but the " + who +
                     " graph option \"off\" prepared no CUDA graph");
  if (replay_for_steps && observer->graph_observer_id() == 0)
    throw UsageError(who +
                     ": per-step cudaEvent timing cannot work inside a CUDA graph replay (events recorded at capture "
                     "time do not time each step of each replay); profile the graph with CUPTI (--timing cupti), or "
                     "layer by layer (--exec layers, and " +
                     who + " graph mode auto)");
  if (options.device_resident) return run_device_resident(observer, times_steps);
  if (replay_for_steps) prepare_observed_graph(*observer);
  cudaGraphExec_t exec = !times_steps ? graph_exec_.get() : replay_for_steps ? observed_exec_.get() : nullptr;

  MNV2_CHECK_CUDA(cudaSetDevice(config_.device));
  cudaStream_t stream = stream_.get();
  parallel_copy(pinned_input_.get(), input.data.data(), input.data.size() * sizeof(float));

  if (observer) observer->run_begin(stream);
  if (exec != nullptr) {
    MNV2_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  } else {
    enqueue_network(stream, observer);
  }
  if (observer) observer->run_end(stream);

  if (options.keep_layer_outputs) enqueue_layer_outputs(stream, layer_outputs_);
  synchronise(stream);
  Tensor logits(Shape{config_.batch, output_shape_.per_image(), 1, 1});
  std::memcpy(logits.data.data(), pinned_logits_.get(), logits.data.size() * sizeof(float));
  return logits;
}

// The network on the input already on the device (the last run's upload), nothing downloaded: what a
// device-resident throughput figure times. One graph replay, or layer by layer without a graph.
Tensor GpuPreparedNet::run_device_resident(StepObserver* observer, bool times_steps) {
  if (times_steps)
    throw UsageError(settings_.who +
                     ": a device-resident run is for whole-run timing only; per-step observers run the usual way");
  MNV2_CHECK_CUDA(cudaSetDevice(config_.device));
  cudaStream_t stream = stream_.get();
  if (observer) observer->run_begin(stream);
  enqueue_compute(stream);
  if (observer) observer->run_end(stream);
  synchronise(stream);
  return Tensor{};
}

void GpuPreparedNet::synchronise(cudaStream_t stream) {
  try {
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  } catch (const Error& e) {
    throw Error(settings_.who + ": the network failed while running on the GPU: " + e.what());
  }
}

void GpuPreparedNet::enqueue_compute(cudaStream_t stream) {
  if (compute_exec_) {
    MNV2_CHECK_CUDA(cudaGraphLaunch(compute_exec_.get(), stream));
  } else {
    enqueue_steps(stream, nullptr);
  }
}

// Upload, every step, logits download: the whole run on `stream`, layer by layer.
void GpuPreparedNet::enqueue_network(cudaStream_t stream, StepObserver* observer) {
  enqueue_upload(stream);
  enqueue_steps(stream, observer);
  enqueue_download(stream);
}

// Every step and the tail, no copies to or from the host.
void GpuPreparedNet::enqueue_steps(cudaStream_t stream, StepObserver* observer) {
  for (size_t i = 0; i < steps_.size(); ++i) {
    const int index = static_cast<int>(i);
    const ExecStep& step = steps_[i];
    NvtxRange range(step.name.c_str());
    if (observer) observer->step_begin(index, stream);
    try {
      enqueue_step(index, stream);
      MNV2_CHECK_CUDA(cudaGetLastError());
    } catch (const Error& e) {
      throw Error(settings_.who + ": step '" + step.name + "' (" + labels_[i] + "): " + e.what());
    }
    if (observer) observer->step_end(index, stream);
  }
  enqueue_tail(stream);
}

// ---- graphs --------------------------------------------------------------------------------------------------

// Records enqueue_network() once as a CUDA graph, each node tied to its step; each un-instrumented run then costs
// one launch. A second graph holds the steps alone (no copies) for device-resident runs. With PDL both executable
// graphs get programmatic edges between the steps' kernels; graph_ itself, which CUPTI observers replay step by
// step, keeps plain edges.
void GpuPreparedNet::capture_graphs() {
  cudaStream_t stream = stream_.get();
  CaptureRecorder recorder(settings_.who);
  graph_ = capture_graph(stream, [&](cudaStream_t s) { enqueue_network(s, &recorder); });
  recorder.finish(graph_.get());
  graph_steps_ = std::move(recorder.map);
  if (settings_.count_kernels) kernels_per_run_ = count_kernel_nodes(graph_.get());
  if (settings_.pdl) {
    Graph chained = clone_graph(graph_.get());
    add_pdl_edges(chained.get(), graph_steps_, graph_.get());
    graph_exec_ = instantiate_graph(chained.get(), stream);
  } else {
    graph_exec_ = instantiate_graph(graph_.get(), stream);
  }
  // The compute graph's nodes are only tied to steps where PDL needs to know them.
  CaptureRecorder compute_recorder(settings_.who);
  StepObserver* compute_observer = settings_.pdl ? &compute_recorder : nullptr;
  compute_graph_ = capture_graph(stream, [&](cudaStream_t s) { enqueue_steps(s, compute_observer); });
  if (settings_.pdl) {
    compute_recorder.finish(compute_graph_.get());
    add_pdl_edges(compute_graph_.get(), compute_recorder.map, nullptr);
  }
  compute_exec_ = instantiate_graph(compute_graph_.get(), stream);
}

// Without a graph, the launches of one run counted the same way: a capture that is never instantiated.
void GpuPreparedNet::count_launches() {
  Graph counted = capture_graph(stream_.get(), [&](cudaStream_t s) { enqueue_network(s, nullptr); });
  kernels_per_run_ = count_kernel_nodes(counted.get());
}

// Programmatic edges into the kernels of steps whose kernels wait for their predecessor (may_start_early); `map`
// names the nodes of `original`, of which `graph` is a clone (nullptr: `graph` itself).
void GpuPreparedNet::add_pdl_edges(cudaGraph_t graph, const GraphStepMap& map, cudaGraph_t original) {
  std::unordered_map<cudaGraphNode_t, int> step_of;
  for (const auto& [node, step] : map.nodes) {
    auto n = static_cast<cudaGraphNode_t>(node);
    if (original != nullptr) MNV2_CHECK_CUDA(cudaGraphNodeFindInClone(&n, n, graph));
    step_of.emplace(n, step);
  }
  make_programmatic_edges(graph, [&](cudaGraphNode_t node) {
    const auto it = step_of.find(node);
    return it != step_of.end() && may_start_early(it->second);
  });
}

// An executable copy of the captured graph made while `observer` watches, so it knows which of the copy's nodes
// belongs to which step; made once per observer (its id), replayed for every run it times.
void GpuPreparedNet::prepare_observed_graph(StepObserver& observer) {
  const uint64_t id = observer.graph_observer_id();
  if (observed_exec_ && observed_for_ == id) return;
  observed_exec_ = GraphExec();
  observer.instantiate_graph(graph_steps_, [&] { observed_exec_ = instantiate_graph(graph_.get(), stream_.get()); });
  if (!observed_exec_) throw Error(settings_.who + ": the observer did not let the graph be instantiated");
  observed_for_ = id;
}

}  // namespace mnv2::gpu
