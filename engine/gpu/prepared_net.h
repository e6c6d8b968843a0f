// The prepared-network core both GPU backends build on (the cuda and cudnn backends): the device the net runs on
// (PrepareConfig::device), its stream, its device memory and the accounting of it (device_memory.h), the pinned
// input and logits, the run loop over the steps with the StepObserver, NVTX ranges and each step's error named,
// the CUDA graphs (one of the whole run with each node tied to its step, one of the steps alone for
// device-resident runs, copies instantiated under a CUPTI observer's watch) and the rules that say which of
// them a run gets. A backend is a plan and its lowering: it lowers its steps, then says how to enqueue each one,
// how the input gets in and the logits out (the hooks below).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/device_memory.h"
#include "gpu/runtime.h"
#include "mnv2/backend.h"
#include "mnv2/model.h"

namespace mnv2::gpu {

// Host memcpy over all cores (OpenMP), in chunks of 4 MiB: the input's way into pinned memory.
void parallel_copy(void* dst, const void* src, size_t bytes);

// CudaOptions::Graph and CudnnOptions::Graph: replay one CUDA graph unless steps are timed, always, never.
enum class GraphMode { automatic, on, off };
template <class BackendGraphOption>
GraphMode graph_mode_of(BackendGraphOption g) {
  return g == BackendGraphOption::on    ? GraphMode::on
         : g == BackendGraphOption::off ? GraphMode::off
                                        : GraphMode::automatic;
}

// How a backend's nets run, fixed at prepare().
struct NetSettings {
  std::string who;  // "cuda", "cudnn": the start of every message, and the graph option's name ("cuda graph")
  GraphMode graph = GraphMode::automatic;
  // Programmatic Dependent Launch: the executable graphs get programmatic edges into the kernels of the steps
  // that may_start_early() accepts (the captured graph CUPTI replays keeps plain edges, so no step's time
  // includes its wait for the one before).
  bool pdl = false;
  // Count the kernel nodes of the graph (or of a capture of one run without a graph): kernels_per_run().
  bool count_kernels = false;
};

class GpuPreparedNet : public PreparedNet {
 public:
  const PrepareConfig& config() const final { return config_; }
  const std::vector<ExecStep>& steps() const final { return steps_; }
  const std::vector<Tensor>& layer_outputs() const final { return layer_outputs_; }
  bool has_graph() const final { return static_cast<bool>(graph_exec_); }
  bool runs_device_resident() const final { return true; }
  int64_t kernels_per_run() const final { return kernels_per_run_; }
  MemoryReport memory() const final { return memory_.report(); }

  // The input through the pinned buffer, one graph replay (no observer, or one that brackets the run or sees
  // inside replays) or every step enqueued with the observer around it, the logits back; or, device-resident,
  // the steps alone on the input already there.
  Tensor run(const Tensor& input, const RunOptions& options) final;

 protected:
  // Makes config.device current and the net's stream; the device memory starts empty.
  GpuPreparedNet(const PrepareConfig& config, NetSettings settings);
  // Waits for the stream (logging a failure): a run that threw may have left work in flight. A backend's own
  // destructor calls wait_idle() first, for what it holds itself (handles, host buffers, scratch).
  ~GpuPreparedNet() override;
  GpuPreparedNet(const GpuPreparedNet&) = delete;
  GpuPreparedNet& operator=(const GpuPreparedNet&) = delete;

  // Once the backend has lowered every step: the steps as reports name them, the pinned input (poisoned, so the
  // warm-up reads NaN) and logits, one layer-by-layer pass (every module loaded, every call checked before any is
  // captured), then the graphs (or, without, the launch count). `model` names each step's first layer in errors.
  void finish_prepare(const Model& model, std::vector<ExecStep> steps, const Shape& output_shape);

  // ---- what the backend supplies -------------------------------------------------------------------------
  // The float32 NCHW input in pinned_input() into the network's input buffer (converting it where the net
  // stores another type or layout).
  virtual void enqueue_upload(cudaStream_t stream) = 0;
  // Step `step`'s work; throws Error (the loop adds the step's name and first layer).
  virtual void enqueue_step(int step, cudaStream_t stream) = 0;
  // After the last step, inside the compute graph too (the cuda backend's logits to NCHW).
  virtual void enqueue_tail(cudaStream_t /*stream*/) {}
  // The logits as float32 NCHW into pinned_logits().
  virtual void enqueue_download(cudaStream_t stream) = 0;
  // Every layer's output of the run just enqueued into `outputs` (one per topology layer, empty where fused
  // away), as float32 NCHW; the run synchronises after.
  virtual void enqueue_layer_outputs(cudaStream_t stream, std::vector<Tensor>& outputs) = 0;
  // With NetSettings::pdl: whether the kernels of `step` wait on the GPU for their predecessor (pdl_wait), so
  // they may start early.
  virtual bool may_start_early(int /*step*/) const { return false; }

  // ---- for the backend -----------------------------------------------------------------------------------
  const NetSettings& settings() const { return settings_; }
  int device() const { return config_.device; }
  cudaStream_t stream() const { return stream_.get(); }
  DeviceMemory& device_memory() { return memory_; }
  void* pinned_input() const { return pinned_input_.get(); }
  void* pinned_logits() const { return pinned_logits_.get(); }
  // The steps alone on `stream`: a replay of the compute graph where there is one, else every step enqueued.
  void enqueue_compute(cudaStream_t stream);
  // Waits for the stream, logging a failure (for destructors).
  void wait_idle() noexcept;

 private:
  Tensor run_device_resident(StepObserver* observer, bool times_steps);
  void enqueue_network(cudaStream_t stream, StepObserver* observer);
  void enqueue_steps(cudaStream_t stream, StepObserver* observer);
  void capture_graphs();
  void count_launches();
  void add_pdl_edges(cudaGraph_t graph, const GraphStepMap& map, cudaGraph_t original);
  void prepare_observed_graph(StepObserver& observer);
  void synchronise(cudaStream_t stream);

  PrepareConfig config_;
  NetSettings settings_;
  Shape input_shape_, output_shape_;
  std::vector<ExecStep> steps_;
  std::vector<std::string> labels_;  // each step's first layer, "layer 5 'block1.dw' (Conv2d)", for errors
  std::vector<Tensor> layer_outputs_;

  // Declared first among the GPU objects so it is destroyed last: the buffers may still be in use on it.
  Stream stream_;
  DeviceMemory memory_;
  PinnedBuffer pinned_input_, pinned_logits_;
  Graph graph_;                // the whole run: upload, steps, download
  GraphExec graph_exec_;       // for un-instrumented runs (with PDL edges where settings say)
  GraphStepMap graph_steps_;   // graph_'s nodes -> steps, recorded at capture
  GraphExec observed_exec_;    // for per-step observers of graph replays (CUPTI), made under their watch
  uint64_t observed_for_ = 0;  // the observer id observed_exec_ was made for
  Graph compute_graph_;        // the steps alone (no upload, no download): device-resident runs
  GraphExec compute_exec_;
  int64_t kernels_per_run_ = -1;
};

}  // namespace mnv2::gpu
