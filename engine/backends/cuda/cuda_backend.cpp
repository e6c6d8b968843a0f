// The cuda backend: the network on this project's own kernels (kernels/). Precision: fp32 is strict float32
// (FFMA, no TF32); the fast variant also runs tf32 (float32 storage, the GEMMs of the 1x1 convolutions and the
// Linear layer on tensor cores with TF32 operands) and fp16 (half NHWC activations and GEMM weights, float32
// bias and accumulation everywhere, tensor-core GEMMs; the Linear layer's logits stay float32). Depthwise and
// direct convolutions stay FFMA in float32 arithmetic in every mode (they are memory- and latency-bound).
// Two variants, chosen by PrepareConfig::cuda when a network is prepared:
//  - fast (default): NHWC activations; the stem reads the NCHW input itself; every convolution carries its
//    bias, its clip (ReLU6) and, for 1x1 projections, the residual add in its epilogue, so one step covers
//    several topology layers ("Conv2d 14 + ResidualAdd 15"); depthwise 3x3 has its own kernel.
//  - baseline: NCHW, one step per layer: im2col + the tiled GEMM for every convolution, separate clip, add,
//    pool and Linear kernels. The reference point of the optimisation story.
// prepare() is plan -> allocate -> lower -> capture: the planner (planner.cpp, mnv2/cuda_plan.h) decides the
// steps, kernels and tiles from the model, the options and this GPU's properties, as plain data; the lower_*.cpp
// files turn each step into weights on the device and kernel launches. Un-instrumented runs replay one CUDA
// graph of the whole network (CudaOptions::graph). The graph's nodes are tied to steps at capture time, so a
// CUPTI observer can time steps inside replays too (RunOptions::graph_replay); cudaEvent per-step timing is
// refused there.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cuda/lab_kernel.h"
#include "backends/cuda/lowering.h"
#include "backends/layer_checks.h"  // malformed_reason, layer_label: the checks every backend shares
#include "backends/nvtx_range.h"
#include "gpu/check.h"          // MNV2_CHECK_CUDA / MNV2_CHECK_LOG
#include "gpu/graph_capture.h"  // capture with nodes tied to steps, kernel count, PDL edges
#include "gpu/runtime.h"        // stream, device and pinned buffers, graphs
#include "kernels/common.cuh"
#include "kernels/input_u8.cuh"
#include "kernels/layout.cuh"
#include "mnv2/backend.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/lab.h"
#include "mnv2/model.h"

namespace mnv2 {
namespace cuda_backend {
namespace {

using gpu::DeviceBuffer;
using gpu::PinnedBuffer;
using CudaStream = gpu::Stream;
using CudaGraph = gpu::Graph;
using CudaGraphExec = gpu::GraphExec;

constexpr const char* kBackendName = "cuda";
// The pinned input starts filled with this byte (NaN floats): the warm-up pass at prepare() reads it.
constexpr int kPoisonByte = 0xFF;

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The planner's view of the current device: its attributes as the runtime reports them (device_caps reads the
// same ones, so the plan's cost models see exactly what the kernels' own choosers would).
GpuProperties device_properties(const GpuDevice& d) {
  auto attribute = [&d](cudaDeviceAttr a) {
    int v = 0;
    MNV2_CHECK_CUDA(cudaDeviceGetAttribute(&v, a, d.index));
    return v;
  };
  GpuProperties g;
  g.name = d.name;
  g.cc_major = d.cc_major;
  g.cc_minor = d.cc_minor;
  g.sm_count = attribute(cudaDevAttrMultiProcessorCount);
  g.smem_per_block_optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  g.smem_per_sm = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  g.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor);
  g.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  g.max_blocks_per_sm = attribute(cudaDevAttrMaxBlocksPerMultiprocessor);
  g.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate);
  g.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth);
  g.sm_clock_khz = attribute(cudaDevAttrClockRate);
  return g;
}

// What Backend::description() says (a prepared net adds its plan's launch chain).
std::string backend_text() {
  std::string text =
      "custom CUDA kernels (fast: NHWC, fused bias/ReLU6/residual epilogues; baseline on request: NCHW, im2col + "
      "tiled GEMM, separate passes; CUDA graph for whole runs), fp32 FFMA (no TF32) by default; tf32 and fp16 on "
      "request in the fast variant (tensor-core GEMMs, fp16 half NHWC storage)";
  const CudaEnvironment& env = cuda_environment();
  if (!env.devices.empty()) text += " on " + env.devices.front().name;
  return text;
}

// Whether this machine can run the backend: a CUDA device, code in this binary it runs (machine code, or PTX
// the driver compiles), and which architecture's features that code was compiled with.
struct Probe {
  bool ok = false;
  std::string reason;
  GpuProperties gpu;         // what the planner reads of the device, the code architecture included
  std::string tf32_why_not;  // "" when the TF32 tensor-core GEMM can run
};

const Probe& probe() {
  static const Probe result = [] {
    Probe p;
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) {
      p.reason = env.why_none.empty() ? std::string("no CUDA device") : env.why_none;
      return p;
    }
    const GpuDevice& d = env.devices.front();
    const std::string gpu =
        d.name + " (compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ")";
    k::KernelImage image;
    if (const cudaError_t e = k::probe_kernel_image(&image); e != cudaSuccess) {
      p.reason = "the kernels cannot run on " + gpu + ": " +
                 (d.cannot_run.empty() ? std::string(cudaGetErrorString(e)) : d.cannot_run);
      return p;
    }
    try {
      p.gpu = device_properties(d);
    } catch (const Error& e) {
      p.reason = e.what();
      return p;
    }
    p.ok = true;
    p.gpu.code_arch = image.ptx_version;
    // TF32 tensor cores (wmma precision::tf32) exist from Ampere on, and only in code compiled for compute_80
    // or newer: a compute_75 build running on a Hopper GPU has the instructions in hardware but not in its code.
    if (d.cc_major < 8)
      p.tf32_why_not = "tf32 needs TF32 tensor cores (compute capability 8.0, Ampere, or newer); " + gpu + " has none";
    else if (p.gpu.code_arch < 80)
      p.tf32_why_not = "tf32 needs kernels compiled for compute_80 or newer; on " + gpu + " this build runs compute_" +
                       std::to_string(p.gpu.code_arch) + " code (" + d.code + ")";
    return p;
  }();
  return result;
}

// Device-to-host copy of a float32 value's images into a dense host array (a 2-D copy when rows are padded).
void copy_to_host(float* dst, const Value& v, const void* src, cudaStream_t stream) {
  const size_t row = static_cast<size_t>(v.shape.per_image()) * sizeof(float);
  if (v.stride() == v.shape.per_image()) {
    MNV2_CHECK_CUDA(cudaMemcpyAsync(dst, src, row * static_cast<size_t>(v.shape.n), cudaMemcpyDeviceToHost, stream));
  } else {
    MNV2_CHECK_CUDA(cudaMemcpy2DAsync(dst, row, src, static_cast<size_t>(v.stride()) * sizeof(float), row,
                                      static_cast<size_t>(v.shape.n), cudaMemcpyDeviceToHost, stream));
  }
}

// Host memcpy over all cores: the batch's trip from the caller's (pageable) memory into a pinned upload buffer
// was 20 ms of the 32.6 ms host time at batch 256 with one thread (run 1, H200 machine).
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

// One execution step: the kernels that compute one or several (fused) topology layers.
struct Step {
  ExecStep exec;
  std::string label;             // "layer 5 'block1.dw' (Conv2d)", the first covered layer, for errors
  std::vector<Launch> launches;  // in order, all on the network's stream
};

class CudaPreparedNet final : public PreparedNet {
 public:
  CudaPreparedNet(const Model& model, const PrepareConfig& config, CudaPlan plan,
                  std::shared_ptr<const LabKernel> lab = nullptr)
      : config_(config), graph_mode_(config.cuda.graph), plan_(std::move(plan)), lab_(std::move(lab)) {
    build(model);
  }

  ~CudaPreparedNet() override {
    // A run that threw may have left work in flight on buffers about to be freed.
    if (stream_) MNV2_CHECK_LOG(cudaStreamSynchronize(stream_.get()));
  }

  CudaPreparedNet(const CudaPreparedNet&) = delete;
  CudaPreparedNet& operator=(const CudaPreparedNet&) = delete;

  const PrepareConfig& config() const override { return config_; }
  const std::vector<ExecStep>& steps() const override { return exec_steps_; }
  const std::vector<Tensor>& layer_outputs() const override { return layer_outputs_; }
  bool has_graph() const override { return static_cast<bool>(graph_exec_); }
  bool runs_device_resident() const override { return true; }
  int64_t kernels_per_run() const override { return kernels_per_run_; }
  // The backend's description and this plan's launch chain (kernels per run, PDL, split-K reduction).
  std::string description() const override { return backend_text() + "; " + describe_chain(plan_); }

  MemoryReport memory() const override {
    MemoryReport m;
    m.weight_bytes = lw_->weight_bytes;
    m.activation_bytes = lw_->activation_bytes;
    m.workspace_bytes = lw_->workspace_bytes + static_cast<int64_t>(download_scratch_.bytes()) +
                        static_cast<int64_t>(u8_table_.bytes());
    for (const U8Slot& slot : u8_slots_) m.workspace_bytes += static_cast<int64_t>(slot.device.bytes());
    return m;
  }

  Tensor run(const Tensor& input, const RunOptions& options) override {
    if (!(input.shape == input_shape_) || static_cast<int64_t>(input.data.size()) != input_shape_.numel())
      throw UsageError(std::string("cuda: input shape ") + input.shape.str() + " (" +
                       std::to_string(input.data.size()) + " values) does not match the prepared " +
                       input_shape_.str());
    StepObserver* observer = options.observer;
    // A run timer only brackets the whole run; any other observer times steps, which in a graph replay only an
    // observer that sees inside it (CUPTI, by graph node) can do: events around steps are not replayed per step.
    const bool times_steps = observer != nullptr && observer->times_steps();
    const bool replay_for_steps = times_steps && (options.graph_replay || graph_mode_ == CudaOptions::Graph::on);
    if (replay_for_steps && !graph_exec_)
      throw UsageError("cuda: a graph replay was asked for, but the cuda graph option \"off\" prepared no CUDA graph");
    if (replay_for_steps && observer->graph_observer_id() == 0)
      throw UsageError(
          "cuda: per-step cudaEvent timing cannot work inside a CUDA graph replay (events recorded at capture time "
          "do not time each step of each replay); profile the graph with CUPTI (--timing cupti), or layer by "
          "layer (--exec layers, and cuda graph mode auto)");
    if (options.device_resident) return run_device_resident(observer, times_steps);
    if (replay_for_steps) prepare_observed_graph(*observer);
    cudaGraphExec_t exec = !times_steps ? graph_exec_.get() : replay_for_steps ? observed_exec_.get() : nullptr;

    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    cudaStream_t stream = stream_.get();
    parallel_copy(pinned_input_.get(), input.data.data(), input.data.size() * sizeof(float));

    if (observer) observer->run_begin(stream);
    if (exec != nullptr) {
      MNV2_CHECK_CUDA(cudaGraphLaunch(exec, stream));
    } else {
      enqueue_network(stream, observer);
    }
    if (observer) observer->run_end(stream);

    if (options.keep_layer_outputs) download_layer_outputs(stream);
    try {
      MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
    } catch (const Error& e) {
      throw Error(std::string("cuda: the network failed while running on the GPU: ") + e.what());
    }
    Tensor logits(Shape{config_.batch, output_shape_.per_image(), 1, 1});
    std::memcpy(logits.data.data(), pinned_logits_.get(), logits.data.size() * sizeof(float));
    return logits;
  }

  // A fusion of whole ops (expand_dw, block) leaves intermediate maps on chip: diffs take their layer outputs
  // from the per-op plan. (The epilogue fusions of the plain fast plan, bias/ReLU6/residual, stay as they are:
  // no plan of this backend materialises a convolution's output before its clip.)
  std::optional<PrepareConfig> every_layer_config() const override {
    bool op_fusion = false;
    for (const CudaStep& step : plan_.steps)
      op_fusion = op_fusion || step.kernel == CudaKernel::expand_depthwise || step.kernel == CudaKernel::fused_block ||
                  step.kernel == CudaKernel::fused_stem;
    if (!op_fusion) return std::nullopt;
    PrepareConfig unfused = config_;
    unfused.cuda.fusion = CudaOptions::Fusion::none;
    return unfused;
  }

  std::string u8_path() const override {
    return "gpu: two pinned staging buffers, each sub-batch uploaded on a copy stream while the previous one "
           "computes, converted and normalised on the GPU";
  }

  // The 8-bit input path (PreparedNet::run_u8): sub-batch k's bytes go host -> pinned slot k % 2 (all cores) ->
  // device slot on the copy stream, while the compute stream still runs sub-batch k - 1; the compute stream waits
  // for the upload, converts the bytes into the network input (a table lookup, bit for bit the host's
  // normalisation), runs the steps (the device-resident graph) and downloads the logits into the slot. Before a
  // slot is reused (k + 2) its download is waited for, which orders every use of both of its buffers.
  Tensor run_u8(const uint8_t* hwc, int64_t images, const InputNormaliser& n) override {
    const int64_t batch = config_.batch;
    if (hwc == nullptr || images < 1 || images % batch != 0)
      throw UsageError("cuda: " + std::to_string(images) + " images are not a whole number of sub-batches of " +
                       std::to_string(batch) + " (the prepared batch)");
    if (input_shape_.c != 3)
      throw UsageError("cuda: the 8-bit input path takes RGB images; this model's input has " +
                       std::to_string(input_shape_.c) + " channels");
    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    prepare_u8_path(n);
    const size_t bytes = static_cast<size_t>(input_shape_.numel());  // one byte per input value
    const int64_t per_sub = output_shape_.numel();                   // logits of one sub-batch
    Tensor out(Shape{images, output_shape_.c, output_shape_.h, output_shape_.w});
    cudaStream_t compute = stream_.get(), copy = u8_copy_stream_.get();
    auto finish = [&](int64_t k) {  // sub-batch k's logits, once its download is done, into `out`
      U8Slot& slot = u8_slots_[static_cast<size_t>(k % 2)];
      MNV2_CHECK_CUDA(cudaEventSynchronize(slot.downloaded.get()));
      std::memcpy(out.data.data() + k * per_sub, slot.logits.get(), static_cast<size_t>(per_sub) * sizeof(float));
    };
    const int64_t subs = images / batch;
    try {
      for (int64_t k = 0; k < subs; ++k) {
        U8Slot& slot = u8_slots_[static_cast<size_t>(k % 2)];
        if (k >= 2) finish(k - 2);  // the slot's upload, conversion and download of sub-batch k - 2 are done
        parallel_copy(slot.host.get(), hwc + static_cast<size_t>(k) * bytes, bytes);
        MNV2_CHECK_CUDA(cudaMemcpyAsync(slot.device.get(), slot.host.get(), bytes, cudaMemcpyHostToDevice, copy));
        MNV2_CHECK_CUDA(cudaEventRecord(slot.uploaded.get(), copy));
        MNV2_CHECK_CUDA(cudaStreamWaitEvent(compute, slot.uploaded.get(), 0));
        k::NormaliseU8Params p;
        p.images = batch;
        p.pixels = input_shape_.h * input_shape_.w;
        p.input = static_cast<const uint8_t*>(slot.device.get());
        p.table = static_cast<const float*>(u8_table_.get());
        for (size_t c = 0; c < 3; ++c) p.source[c] = u8_normaliser_.source[c];
        p.output = lw_->input.f32();
        k::launch_normalise_u8(p, compute);
        if (compute_exec_) {
          MNV2_CHECK_CUDA(cudaGraphLaunch(compute_exec_.get(), compute));
        } else {
          enqueue_steps(compute, nullptr);
        }
        copy_to_host(static_cast<float*>(slot.logits.get()), logits_, logits_.data, compute);
        MNV2_CHECK_CUDA(cudaEventRecord(slot.downloaded.get(), compute));
      }
      for (int64_t k = std::max<int64_t>(0, subs - 2); k < subs; ++k) finish(k);
    } catch (const Error& e) {
      throw Error(std::string("cuda: the 8-bit input path failed: ") + e.what());
    }
    return out;
  }

 private:
  // The 8-bit path's buffers and copy stream on first use; the normaliser's table uploaded when it changes.
  void prepare_u8_path(const InputNormaliser& n) {
    const size_t bytes = static_cast<size_t>(input_shape_.numel());
    if (!u8_copy_stream_) {
      u8_copy_stream_ = gpu::make_stream();
      u8_table_ = DeviceBuffer(3 * 256 * sizeof(float));
      for (U8Slot& slot : u8_slots_) {
        slot.host = PinnedBuffer(bytes);
        slot.device = DeviceBuffer(bytes);
        slot.logits = PinnedBuffer(static_cast<size_t>(output_shape_.numel()) * sizeof(float));
        slot.uploaded = gpu::make_event(cudaEventDisableTiming);
        slot.downloaded = gpu::make_event(cudaEventDisableTiming);
      }
      u8_table_valid_ = false;
    }
    if (!u8_table_valid_ || !(n == u8_normaliser_)) {
      MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));  // no conversion may still read the old table
      MNV2_CHECK_CUDA(cudaMemcpy(u8_table_.get(), n.value.data(), u8_table_.bytes(), cudaMemcpyHostToDevice));
      u8_normaliser_ = n;
      u8_table_valid_ = true;
    }
  }

  // Plan (made by the backend) -> allocate and lower every step -> the logits' tail -> warm-up -> capture.
  void build(const Model& model) {
    const size_t n = model.layers.size();
    std::vector<LayerStats> stats = analyse(model, config_.batch, config_.height, config_.width);
    input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
    output_shape_ = stats.back().output;

    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    stream_ = gpu::make_stream();
    lw_ = std::make_unique<Lowering>(model, plan_, std::move(stats), stream_.get());
    lw_->lab = lab_;
    for (const CudaStep& planned : plan_.steps) {
      Step step;
      step.label = layer_label(model.layers[static_cast<size_t>(planned.layers.front())]);
      step.exec = ExecStep{planned.name, planned.layers, planned.variant};
      // The kernel lab's user kernel: its steps say so in reports (the variant that actually ran).
      if (lab_runs(*lw_, planned)) step.exec.variant = "lab:" + lab_->spec().name + " (" + lab_->kernel_name() + ")";
      try {
        lower_step(*lw_, planned, step.launches);
      } catch (const Error& e) {
        throw Error("cuda: " + step.label + ": " + e.what());
      }
      steps_.push_back(std::move(step));
    }
    if (plan_.input_nhwc_copy) {  // the first step transposes the NCHW input for the layers that read it NHWC
      const Shape& s = input_shape_;
      const k::TransposeParams t{s.n, s.c, s.h * s.w, lw_->input.data, lw_->input_nhwc, k::DType::f32, lw_->act};
      std::vector<Launch>& first = steps_.front().launches;
      first.insert(first.begin(), [t](cudaStream_t st) { k::launch_transpose(t, st); });
    }

    // The logits leave in NCHW order: an NHWC map with more than one pixel is transposed first.
    const Value& last = lw_->values.back();
    if (last.data == nullptr) throw Error("cuda: the last layer's output is not materialised");
    logits_ = last;
    if (last.nhwc && last.shape.h * last.shape.w > 1 && last.shape.c > 1) {
      float* nchw = lw_->allocate(last.shape.numel(), &lw_->workspace_bytes);
      k::TransposeParams t{last.shape.n, last.shape.h * last.shape.w, last.shape.c, last.data, nchw};
      t.in_type = last.dtype;
      tail_.push_back([t](cudaStream_t s) { k::launch_transpose(t, s); });
      logits_ = Value{nchw, last.shape, false};
    } else if (last.dtype != k::DType::f32) {  // a half output that needs no transpose (fp16, 1x1 maps)
      float* converted = lw_->allocate(last.shape.numel(), &lw_->workspace_bytes);
      const k::ConvertParams c{last.shape.numel(), last.data, converted, last.dtype, k::DType::f32};
      tail_.push_back([c](cudaStream_t s) { k::launch_convert(c, s); });
      logits_ = Value{converted, last.shape, last.nhwc};
    }
    pinned_input_ = PinnedBuffer(static_cast<size_t>(input_shape_.numel()) * sizeof(float));
    std::memset(pinned_input_.get(), kPoisonByte, pinned_input_.bytes());  // the warm-up pass below reads it
    pinned_logits_ = PinnedBuffer(static_cast<size_t>(output_shape_.numel()) * sizeof(float));
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));

    exec_steps_.clear();
    for (const Step& s : steps_) exec_steps_.push_back(s.exec);
    layer_outputs_.assign(n, Tensor{});

    // One layer-by-layer pass on the poisoned (NaN) input: every kernel gets loaded (lazy module loading)
    // and every launch is checked before any of them is captured. Outputs stay NaN, so still poisoned.
    enqueue_network(stream_.get(), nullptr);
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
    if (graph_mode_ != CudaOptions::Graph::off) {
      capture_graph();
    } else {
      count_launches();
    }
  }

  // ---- running -------------------------------------------------------------------------------------------

  // The network on the input already on the device (the last run's upload), nothing downloaded: what a
  // device-resident throughput figure times. One graph replay, or layer by layer without a graph.
  Tensor run_device_resident(StepObserver* observer, bool times_steps) {
    if (times_steps)
      throw UsageError(
          "cuda: a device-resident run is for whole-run timing only; per-step observers run the usual way");
    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    cudaStream_t stream = stream_.get();
    if (observer) observer->run_begin(stream);
    if (compute_exec_) {
      MNV2_CHECK_CUDA(cudaGraphLaunch(compute_exec_.get(), stream));
    } else {
      enqueue_steps(stream, nullptr);
    }
    if (observer) observer->run_end(stream);
    try {
      MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
    } catch (const Error& e) {
      throw Error(std::string("cuda: the network failed while running on the GPU: ") + e.what());
    }
    return Tensor{};
  }

  // Upload, every step, logits download: the whole run on `stream`, layer by layer.
  void enqueue_network(cudaStream_t stream, StepObserver* observer) {
    MNV2_CHECK_CUDA(cudaMemcpyAsync(lw_->input.data, pinned_input_.get(),
                                    static_cast<size_t>(input_shape_.numel()) * sizeof(float), cudaMemcpyHostToDevice,
                                    stream));
    enqueue_steps(stream, observer);
    copy_to_host(static_cast<float*>(pinned_logits_.get()), logits_, logits_.data, stream);  // float32 always
  }

  // Every step and the tail (logits to NCHW), no copies to or from the host.
  void enqueue_steps(cudaStream_t stream, StepObserver* observer) {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& step = steps_[i];
      const int index = static_cast<int>(i);
      NvtxRange range(step.exec.name.c_str());
      if (observer) observer->step_begin(index, stream);
      try {
        for (const Launch& launch : step.launches) launch(stream);
        MNV2_CHECK_CUDA(cudaGetLastError());
      } catch (const Error& e) {
        throw Error("cuda: step '" + step.exec.name + "' (" + step.label + "): " + e.what());
      }
      if (observer) observer->step_end(index, stream);
    }
    for (const Launch& launch : tail_) launch(stream);
  }

  // Records enqueue_network() once as a CUDA graph, each node tied to its step; each un-instrumented run
  // then costs one launch. A second graph holds the steps alone (no copies) for device-resident runs. With PDL
  // (CudaPlan::pdl) both executable graphs get programmatic edges between the steps' kernels; graph_ itself,
  // which CUPTI observers replay step by step, keeps plain edges so no step's time includes its wait for the one
  // before.
  void capture_graph() {
    gpu::CaptureRecorder recorder(kBackendName);
    graph_ = gpu::capture_graph(stream_.get(), [&](cudaStream_t stream) { enqueue_network(stream, &recorder); });
    recorder.finish(graph_.get());
    graph_steps_ = std::move(recorder.map);
    kernels_per_run_ = gpu::count_kernel_nodes(graph_.get());
    if (plan_.pdl) {
      CudaGraph chained = gpu::clone_graph(graph_.get());
      add_pdl_edges(chained.get(), graph_steps_, graph_.get());
      graph_exec_ = instantiate(chained.get());
    } else {
      graph_exec_ = instantiate(graph_.get());
    }
    gpu::CaptureRecorder compute_recorder(kBackendName);
    compute_graph_ =
        gpu::capture_graph(stream_.get(), [&](cudaStream_t stream) { enqueue_steps(stream, &compute_recorder); });
    compute_recorder.finish(compute_graph_.get());
    if (plan_.pdl) add_pdl_edges(compute_graph_.get(), compute_recorder.map, nullptr);
    compute_exec_ = instantiate(compute_graph_.get());
  }

  // Without a graph, the launches of one run counted the same way: a capture that is never instantiated.
  void count_launches() {
    CudaGraph counted =
        gpu::capture_graph(stream_.get(), [&](cudaStream_t stream) { enqueue_network(stream, nullptr); });
    kernels_per_run_ = gpu::count_kernel_nodes(counted.get());
  }

  // Programmatic edges into the kernels of steps whose kernels wait for their predecessor (pdl_ready); `map`
  // names the nodes of `original`, of which `graph` is a clone (nullptr: `graph` itself).
  void add_pdl_edges(cudaGraph_t graph, const GraphStepMap& map, cudaGraph_t original) {
    std::unordered_map<cudaGraphNode_t, int> step_of;
    for (const auto& [node, step] : map.nodes) {
      cudaGraphNode_t n = static_cast<cudaGraphNode_t>(node);
      if (original != nullptr) MNV2_CHECK_CUDA(cudaGraphNodeFindInClone(&n, n, graph));
      step_of.emplace(n, step);
    }
    gpu::make_programmatic_edges(graph, [&](cudaGraphNode_t node) {
      const auto it = step_of.find(node);
      if (it == step_of.end()) return false;
      const CudaStep& step = plan_.steps[static_cast<size_t>(it->second)];
      // A kernel lab user's kernel does not call pdl_wait(): started early it would read its input before the
      // kernel that writes it has finished. Its step keeps a plain edge.
      return pdl_ready(step.kernel) && !(lw_ && lab_runs(*lw_, step));
    });
  }

  // The kernel families whose kernels call pdl_wait() before touching activations (kernels/common.cuh); a step
  // of any other kernel keeps a plain edge and so waits for the kernel before it to finish.
  static bool pdl_ready(CudaKernel kernel) {
    switch (kernel) {
      case CudaKernel::direct_conv:
      case CudaKernel::depthwise_conv:
      case CudaKernel::pointwise_gemm:
      case CudaKernel::pointwise_tc:
      case CudaKernel::expand_depthwise:
      case CudaKernel::fused_stem:
      case CudaKernel::im2col_gemm:
      case CudaKernel::clip:
      case CudaKernel::add:
      case CudaKernel::avg_pool:
      case CudaKernel::linear_gemm:
      case CudaKernel::linear_tc:
        return true;
      default:
        return false;
    }
  }

  CudaGraphExec instantiate(cudaGraph_t graph) { return gpu::instantiate_graph(graph, stream_.get()); }

  // An executable copy of the captured graph made while `observer` watches, so it knows which of the copy's
  // nodes belongs to which step; made once per observer (its id), replayed for every run it times.
  void prepare_observed_graph(StepObserver& observer) {
    const uint64_t id = observer.graph_observer_id();
    if (observed_exec_ && observed_for_ == id) return;
    observed_exec_ = CudaGraphExec();
    observer.instantiate_graph(graph_steps_, [&] { observed_exec_ = instantiate(graph_.get()); });
    if (!observed_exec_) throw Error("cuda: the observer did not let the graph be instantiated");
    observed_for_ = id;
  }

  // Every materialised layer to the host in NCHW float32 (NHWC maps transposed and half maps converted on the
  // device first, into the scratch buffer).
  void download_layer_outputs(cudaStream_t stream) {
    int64_t scratch_floats = 0;
    for (const Value& v : lw_->values)
      if (v.data != nullptr && (v.nhwc || v.dtype != k::DType::f32))
        scratch_floats = std::max(scratch_floats, v.shape.numel());
    if (static_cast<int64_t>(download_scratch_.bytes()) < scratch_floats * static_cast<int64_t>(sizeof(float)))
      download_scratch_ = DeviceBuffer(static_cast<size_t>(scratch_floats) * sizeof(float));
    for (size_t i = 0; i < lw_->values.size(); ++i) {
      const Value& v = lw_->values[i];
      Tensor& out = layer_outputs_[i];
      if (v.data == nullptr) {
        out = Tensor{};  // fused away: not materialised
        continue;
      }
      if (!(out.shape == v.shape) || out.empty()) out = Tensor(v.shape);
      const void* source = v.data;
      Value dense = v;  // what the copy reads: the value itself, or its float32 NCHW copy in the scratch
      auto* scratch = static_cast<float*>(download_scratch_.get());
      if (v.nhwc && v.shape.h * v.shape.w > 1 && v.shape.c > 1) {
        k::TransposeParams t{v.shape.n, v.shape.h * v.shape.w, v.shape.c, v.data, scratch};
        t.in_type = v.dtype;
        k::launch_transpose(t, stream);
        source = scratch;
      } else if (v.dtype != k::DType::f32) {
        k::launch_convert(k::ConvertParams{v.shape.numel(), v.data, scratch, v.dtype, k::DType::f32}, stream);
        source = scratch;
      }
      if (source == scratch) dense.image_stride = 0;
      // Pageable destination: returns once the copy is done, so the scratch buffer is free for the next one.
      copy_to_host(out.data.data(), dense, source, stream);
    }
  }

  PrepareConfig config_;
  CudaOptions::Graph graph_mode_;
  std::shared_ptr<const LabKernel> lab_;  // the kernel lab's user kernel, or null
  CudaPlan plan_;
  int device_ = 0;  // the first visible CUDA device
  Shape input_shape_, output_shape_;

  // Declared first among the GPU objects so it is destroyed last: the buffers may still be in use on it.
  CudaStream stream_;
  std::unique_ptr<Lowering> lw_;  // every weight, activation and workspace allocation; the values
  std::vector<Step> steps_;
  std::vector<Launch> tail_;  // after the last step: logits to NCHW
  Value logits_;              // what the run downloads: the last layer's output, NCHW
  PinnedBuffer pinned_input_, pinned_logits_;
  CudaGraph graph_;
  CudaGraphExec graph_exec_;     // for un-instrumented runs
  GraphStepMap graph_steps_;     // graph_'s nodes -> steps, recorded at capture
  CudaGraphExec observed_exec_;  // for per-step observers of graph replays (CUPTI), made under their watch
  uint64_t observed_for_ = 0;    // the observer id observed_exec_ was made for
  CudaGraph compute_graph_;      // the steps alone (no upload, no download): device-resident runs
  CudaGraphExec compute_exec_;
  int64_t kernels_per_run_ = -1;   // kernel nodes of graph_ (or of a capture of one run, without a graph)
  DeviceBuffer download_scratch_;  // keep_layer_outputs: NHWC -> NCHW and half -> float32, allocated on first use
  std::vector<ExecStep> exec_steps_;
  std::vector<Tensor> layer_outputs_;

  // The 8-bit input path (run_u8), allocated on first use: two slots of staging buffers, a copy stream.
  struct U8Slot {
    PinnedBuffer host, logits;
    DeviceBuffer device;
    gpu::Event uploaded, downloaded;
  };
  gpu::Stream u8_copy_stream_;
  std::array<U8Slot, 2> u8_slots_;
  DeviceBuffer u8_table_;
  InputNormaliser u8_normaliser_;
  bool u8_table_valid_ = false;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() = default;
  // "cuda+lab:NAME": the fast variant's unfused plan with the user's kernel in its slot (mnv2/lab.h).
  explicit CudaBackend(LabKernelSpec lab) : lab_(std::move(lab)) {}

  std::string name() const override { return lab_ ? "cuda+lab:" + lab_->name : kBackendName; }

  // Both variants: the backend object has no options of its own, they come with each prepare().
  std::string description() const override { return backend_text(); }

  Availability availability() const override {
    const Probe& p = probe();
    return {p.ok, p.reason};
  }

  std::optional<std::string> unsupported_reason(const Layer& layer) const override {
    if (auto r = malformed_reason(layer)) return r;
    // The clip kernels take any interval (a lower bound other than 0 too); only a non-interval is refused.
    if ((layer.kind == LayerKind::ReLU6 || layer.kind == LayerKind::ReLU) &&
        (std::isnan(layer.clip_min) || std::isnan(layer.clip_max) || layer.clip_min > layer.clip_max))
      return "clip bounds (" + format_number(layer.clip_min) + ", " + format_number(layer.clip_max) +
             ") are not an interval";
    return std::nullopt;
  }

  // Every mode (the fast variant, the default; the baseline refuses reduced precisions at prepare()); tf32 only
  // where the GPU and the code that runs on it have TF32 tensor cores (probe()).
  bool supports(Precision p) const override {
    if (p != Precision::tf32) return true;
    return !probe().ok || probe().tf32_why_not.empty();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    if (config.precision != Precision::fp32 && config.cuda.variant == CudaOptions::Variant::baseline)
      throw UsageError(std::string("cuda: precision ") + to_string(config.precision) +
                       " needs the fast variant; the baseline variant runs strict fp32 only (FFMA, no TF32)");
    if (config.batch < 1 || config.height < 1 || config.width < 1)
      throw UsageError("cuda: batch, height and width must be positive (got batch " + std::to_string(config.batch) +
                       ", " + std::to_string(config.height) + "x" + std::to_string(config.width) + ")");
    if (Availability a = availability(); !a.available) throw Error("cuda: not available: " + a.reason);
    if (config.precision == Precision::tf32 && !probe().tf32_why_not.empty())
      throw Error("cuda: " + probe().tf32_why_not + " (fp32 and fp16 run here)");
    for (const Layer& layer : model.layers)
      if (auto reason = unsupported_reason(layer)) throw Error("cuda: " + layer_label(layer) + ": " + *reason);
    std::shared_ptr<const LabKernel> lab;
    if (lab_) {
      if (config.cuda.variant != CudaOptions::Variant::fast || config.cuda.fusion != CudaOptions::Fusion::none)
        throw UsageError(name() +
                         ": the kernel lab runs the fast variant's unfused plan (--cuda-variant fast, "
                         "--cuda-fusion none)");
      MNV2_CHECK_CUDA(cudaSetDevice(0));
      lab = std::make_shared<const LabKernel>(*lab_);
    }
    CudaPlan plan = plan_cuda_network(model, config, probe().gpu);
    return std::make_unique<CudaPreparedNet>(model, config, std::move(plan), std::move(lab));
  }

 private:
  std::optional<LabKernelSpec> lab_;
};

}  // namespace
}  // namespace cuda_backend

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda_backend::CudaBackend>(); }
std::unique_ptr<Backend> make_cuda_lab_backend(const LabKernelSpec& spec) {
  return std::make_unique<cuda_backend::CudaBackend>(spec);
}

}  // namespace mnv2
