// The cudnn backend: every layer through NVIDIA's libraries (cuDNN convolutions, activations, adds and
// pooling; cuBLAS for the classifier), one stream per network. Two variants (PrepareConfig::cudnn):
//  - fused (default): each convolution with the bias, ReLU6/ReLU and residual add that follow it is one cuDNN
//    graph-API operation graph (graph_api.h) with virtual intermediates and the asymmetric pads as pre/post
//    paddings; its engine configuration is autotuned among what the heuristics (mode A, fallback) offer and kept
//    in a persistent plan cache (plan_cache.h). Where cuDNN offers no allowed engine for the whole group, fewer
//    ops are fused and the rest run as legacy calls (the step's variant says which and why). NHWC activations in
//    tf32 and fp16 (CudnnOptions::layout).
//  - naive: one legacy cuDNN call per topology layer, NCHW, bias as cudnnAddTensor, asymmetric pads by a copy.
// Un-instrumented runs replay one CUDA graph of the whole run (CudnnOptions::graph), with the same semantics as
// the cuda backend: per-step timing inside a replay only through an observer with a graph id (CUPTI).
// Precision: fp32 (default) is strict float32, FMA math only; tf32 lets convolutions and the classifier use
// tensor cores on float32 data (TF32 operands, float32 accumulation); fp16 stores weights and activations
// as half and accumulates in float32 on tensor cores. The host side stays float32 in every mode: the input
// is converted on the device after upload, the logits and kept layer outputs before download.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cudnn/conv_algorithm.h"
#include "backends/cudnn/descriptors.h"
#include "backends/cudnn/graph_api.h"
#include "backends/cudnn/plan_cache.h"
#include "backends/layer_checks.h"
#include "backends/nvtx_range.h"
#include "gpu/check.h"
#include "gpu/graph_capture.h"
#include "gpu/runtime.h"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"

namespace mnv2 {
namespace cudnn_backend {
namespace {

using gpu::CublasHandle;
using gpu::DeviceBuffer;
using gpu::make_cublas_handle;
using gpu::make_stream;
using gpu::PinnedBuffer;
using CudaStream = gpu::Stream;

constexpr const char* kBackendName = "cudnn";
// Every sub-buffer starts on this many bytes, cudaMalloc's own alignment, so cuDNN's vectorised kernels
// see the same alignment as with separate allocations.
constexpr size_t kAlignment = 256;
// Find measures with at most this much workspace (bytes), and at most half the free device memory.
constexpr size_t kMaxFindWorkspace = size_t{1} << 30;
// Activation buffers are filled with this byte before Find measures: every float reads 0.0115, a non-zero,
// finite value, so no algorithm is timed on zeros or on leftover NaNs.
constexpr int kFindFillByte = 0x3C;
// cuBLAS's workspace (the Linear layer's GEMM), set explicitly so graph capture allocates nothing.
constexpr size_t kCublasWorkspace = size_t{4} << 20;

const float kOne = 1.0f;
const float kZero = 0.0f;

// 91900 -> "9.19.0"
std::string cudnn_version_string(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

std::string cublas_version_string() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return "?";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// Whether this machine can run the backend at all: a CUDA device, and cuDNN and cuBLAS that initialise.
// Asked once per process, on first use (creating a cuDNN handle takes a moment).
struct LibraryProbe {
  bool ok = false;
  std::string reason;
};

const LibraryProbe& library_probe() {
  static const LibraryProbe probe = [] {
    LibraryProbe p;
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) {
      p.reason = env.why_none.empty() ? std::string("no CUDA device") : env.why_none;
      return p;
    }
    const size_t loaded = cudnnGetVersion();
    if (loaded / 10000 != CUDNN_MAJOR) {
      p.reason = "cuDNN " + cudnn_version_string(loaded) + " is loaded, this build needs cuDNN " +
                 std::to_string(CUDNN_MAJOR) + ".x";
      return p;
    }
    cudnnHandle_t cudnn = nullptr;
    if (cudnnStatus_t s = cudnnCreate(&cudnn); s != CUDNN_STATUS_SUCCESS) {
      p.reason = "cuDNN could not be initialised: " + gpu::StatusTraits<decltype(s)>::describe(s);
      return p;
    }
    MNV2_CHECK_LOG(cudnnDestroy(cudnn));
    cublasHandle_t cublas = nullptr;
    if (cublasStatus_t s = cublasCreate(&cublas); s != CUBLAS_STATUS_SUCCESS) {
      p.reason = "cuBLAS could not be initialised: " + gpu::StatusTraits<decltype(s)>::describe(s);
      return p;
    }
    MNV2_CHECK_LOG(cublasDestroy(cublas));
    p.ok = true;
    return p;
  }();
  return probe;
}

// cuDNN restrictions beyond the structural checks every backend makes (layer_checks.h).
std::optional<std::string> conv_unsupported_reason(const Layer& layer) {
  const ConvParams& c = layer.conv;
  if (c.dilation_h != 1 || c.dilation_w != 1)
    return "dilation " + std::to_string(c.dilation_h) + "x" + std::to_string(c.dilation_w) +
           " is not supported by the cudnn backend (dilation 1 only)";
  return std::nullopt;
}

// cuDNN's clipped ReLU is min(max(x, 0), coef): a lower bound other than 0 has no cuDNN activation.
std::optional<std::string> clip_unsupported_reason(const Layer& layer) {
  if (layer.clip_min != 0.0f || !(layer.clip_max > 0.0f))
    return "clip bounds (" + format_number(layer.clip_min) + ", " + format_number(layer.clip_max) +
           ") are not supported by the cudnn backend (lower bound 0 and a positive upper bound only)";
  return std::nullopt;
}

int to_int(int64_t value, const std::string& what) {
  if (value < 0 || value > INT_MAX)
    throw Error("cudnn: " + what + " (" + std::to_string(value) + ") exceeds cuDNN's int range");
  return static_cast<int>(value);
}

TensorDescriptor packed_descriptor(const Shape& s, cudnnDataType_t type, bool nhwc = false) {
  TensorDescriptor d = make_tensor_descriptor();
  MNV2_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d.get(), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, type,
                                              to_int(s.n, "batch"), to_int(s.c, "channels"), to_int(s.h, "height"),
                                              to_int(s.w, "width")));
  return d;
}

// How a precision mode stores tensors and which math cuDNN and cuBLAS may use.
struct Arithmetic {
  Precision precision = Precision::fp32;
  cudnnDataType_t data = CUDNN_DATA_FLOAT;  // storage of weights and activations on the device
  size_t element_bytes = sizeof(float);
  cudnnMathType_t conv_math = CUDNN_FMA_MATH;
  cublasMath_t blas_math = CUBLAS_PEDANTIC_MATH;
};

Arithmetic arithmetic_for(Precision p) {
  switch (p) {
    case Precision::fp32:
      // FMA math: plain float32 multiply-adds, no tensor cores, so no TF32 rounding of the operands;
      // pedantic cuBLAS: the prescribed float32 arithmetic whatever the environment says.
      return {};
    case Precision::tf32:
      return {p, CUDNN_DATA_FLOAT, sizeof(float), CUDNN_TENSOR_OP_MATH, CUBLAS_TF32_TENSOR_OP_MATH};
    case Precision::fp16:
      return {p, CUDNN_DATA_HALF, 2, CUDNN_TENSOR_OP_MATH, CUBLAS_DEFAULT_MATH};
  }
  return {};
}

// Sub-buffers of one allocation: offsets planned first, one cudaMalloc after.
class ArenaPlan {
 public:
  size_t add(int64_t elements, size_t element_bytes) {
    const size_t offset = bytes_;
    bytes_ += (static_cast<size_t>(elements) * element_bytes + kAlignment - 1) / kAlignment * kAlignment;
    return offset;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

void* at_offset(const DeviceBuffer& buffer, size_t offset) { return static_cast<char*>(buffer.get()) + offset; }

// One execution step: one topology layer, its operands and cuDNN descriptors.
struct Step {
  LayerKind kind = LayerKind::Conv2d;
  int layer = 0;
  std::string label;  // "layer 5 'block1.dw' (Conv2d)", for errors
  Shape in_shape;     // the first input's
  Shape out_shape;
  int in_layer = kNetworkInput;   // producing layer of the first input
  int in_layer2 = kNetworkInput;  // ResidualAdd's second input
  bool has_bias = false;

  // Device operands (float or half, as the precision stores them), set once the arenas exist.
  const void* x = nullptr;
  const void* x2 = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;

  TensorDescriptor x_desc;  // Conv2d: the padded map when pad_copy
  TensorDescriptor y_desc;
  TensorDescriptor bias_desc;  // [1, channels, 1, 1], broadcast over batch and map

  // Conv2d. cuDNN pads symmetrically: it pads min(top, bottom) rows and min(left, right) columns itself,
  // and the rest (extra_*) is a zero border of a separate buffer the input is copied into.
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;
  ConvAlgorithmChoice algo;
  int sym_pad_h = 0, sym_pad_w = 0;
  int extra_top = 0, extra_left = 0, extra_bottom = 0, extra_right = 0;
  bool pad_copy = false;
  Shape padded_shape;
  void* padded = nullptr;  // the zero-bordered buffer the convolution reads
  void* padded_interior = nullptr;

  ActivationDescriptor activation;        // ReLU6 / ReLU
  PoolingDescriptor pooling;              // GlobalAveragePool
  OpTensorDescriptor add;                 // ResidualAdd
  int in_features = 0, out_features = 0;  // Linear

  bool needs_algo = true;    // Conv2d run by the legacy call (every one in the naive variant)
  bool materialised = true;  // false: fused away inside an operation graph (a virtual tensor)
};

// A convolution group as one cuDNN operation graph with its chosen plan.
struct FusedGraph {
  ConvGraphSpec spec;
  OperationGraph graph;
  EngineChoice choice;
  ExecutionPlan plan;
  std::vector<int64_t> uids;
  std::vector<void*> pointers;  // in uids' order
  BackendDescriptor pack;       // made once the workspace exists
  int last_layer = 0;           // the layer whose buffer the graph writes
  std::string how;              // "tuned 0.0123 ms, best of 5" / "cached"
};

// One execution step: a fused group (an operation graph, then any layer left to a legacy call) or, in the naive
// variant and for the layers outside groups, one layer's legacy call.
struct Unit {
  int conv = -1, act = -1, add = -1;  // a convolution group's layers (-1: none)
  std::vector<int> layers;            // topology layers covered, ascending
  std::unique_ptr<FusedGraph> fused;  // null: legacy calls only
  bool bias_after = false;            // the graph has no bias: cudnnAddTensor on its output
  std::vector<int> legacy;            // layers run by their legacy call, in order
  std::string variant;
};

// Autotuning: at most this many candidates are timed per problem, and a prepare() spends at most this long
// timing (candidates' plan finalization, which compiles runtime-fusion kernels, included); past it, each
// remaining problem takes the first candidate that finalizes, in the heuristics' order.
constexpr int kMaxTuneCandidates = 8;
constexpr double kTuneBudgetSeconds = 10.0;
constexpr int kTuneRepeats = 3;
// Tuning measures candidates with at most this much workspace.
constexpr size_t kMaxTuneWorkspace = size_t{256} << 20;

class CudnnPreparedNet final : public PreparedNet {
 public:
  CudnnPreparedNet(const Model& model, const PrepareConfig& config)
      : config_(config),
        arith_(arithmetic_for(config.precision)),
        fused_(config.cudnn.variant == CudnnOptions::Variant::fused),
        nhwc_(fused_ &&
              (config.cudnn.layout == CudnnOptions::Layout::nhwc ||
               (config.cudnn.layout == CudnnOptions::Layout::automatic && config.precision != Precision::fp32))),
        graph_mode_(config.cudnn.graph) {
    build(model);
  }

  ~CudnnPreparedNet() override {
    // A run that threw may have left work in flight on buffers about to be freed.
    if (stream_) MNV2_CHECK_LOG(cudaStreamSynchronize(stream_.get()));
  }

  CudnnPreparedNet(const CudnnPreparedNet&) = delete;
  CudnnPreparedNet& operator=(const CudnnPreparedNet&) = delete;

  const PrepareConfig& config() const override { return config_; }
  const std::vector<ExecStep>& steps() const override { return exec_steps_; }
  const std::vector<Tensor>& layer_outputs() const override { return layer_outputs_; }
  bool has_graph() const override { return static_cast<bool>(graph_exec_); }
  bool runs_device_resident() const override { return true; }
  std::string description() const override { return description_; }
  // The fused variant keeps a group's intermediate tensors virtual: diffs take every layer from the naive one.
  std::optional<PrepareConfig> every_layer_config() const override {
    if (!fused_) return std::nullopt;
    PrepareConfig naive = config_;
    naive.cudnn.variant = CudnnOptions::Variant::naive;
    return naive;
  }

  MemoryReport memory() const override {
    MemoryReport m;
    m.weight_bytes = static_cast<int64_t>(weights_.bytes());
    m.activation_bytes = static_cast<int64_t>(activations_.bytes());
    m.workspace_bytes = static_cast<int64_t>(workspace_.bytes());
    return m;
  }

  Tensor run(const Tensor& input, const RunOptions& options) override {
    if (!(input.shape == input_shape_) || static_cast<int64_t>(input.data.size()) != input_shape_.numel())
      throw UsageError(std::string("cudnn: input shape ") + input.shape.str() + " (" +
                       std::to_string(input.data.size()) + " values) does not match the prepared " +
                       input_shape_.str());
    StepObserver* observer = options.observer;
    // The cuda backend's rules: a run timer only brackets the run; an observer that times steps gets a graph
    // replay only where it can see inside one (CUPTI, by graph node id).
    const bool times_steps = observer != nullptr && observer->times_steps();
    const bool replay_for_steps = times_steps && (options.graph_replay || graph_mode_ == CudnnOptions::Graph::on);
    if (replay_for_steps && !graph_exec_)
      throw UsageError(
          "cudnn: a graph replay was asked for, but the cudnn graph option \"off\" prepared no CUDA graph");
    if (replay_for_steps && observer->graph_observer_id() == 0)
      throw UsageError(
          "cudnn: per-step cudaEvent timing cannot work inside a CUDA graph replay (events recorded at capture time "
          "do not time each step of each replay); profile the graph with CUPTI (--timing cupti), or layer by "
          "layer (--exec layers, and cudnn graph mode auto)");
    if (options.device_resident) return run_device_resident(observer, times_steps);
    if (replay_for_steps) prepare_observed_graph(*observer);
    cudaGraphExec_t exec = !times_steps ? graph_exec_.get() : replay_for_steps ? observed_exec_.get() : nullptr;

    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    cudaStream_t stream = stream_.get();
    std::memcpy(pinned_input_.get(), input.data.data(), input.data.size() * sizeof(float));

    if (observer) observer->run_begin(stream);
    if (exec != nullptr) {
      MNV2_CHECK_CUDA(cudaGraphLaunch(exec, stream));
    } else {
      enqueue_network(stream, observer);
    }
    if (observer) observer->run_end(stream);

    if (options.keep_layer_outputs) {
      layer_outputs_.resize(steps_.size());
      for (size_t i = 0; i < steps_.size(); ++i) {
        Tensor& out = layer_outputs_[i];
        if (!steps_[i].materialised) {
          out = Tensor{};  // fused away: a virtual tensor of an operation graph
          continue;
        }
        if (!(out.shape == steps_[i].out_shape) || out.empty()) out = Tensor(steps_[i].out_shape);
        // Same stream: each conversion into the readback buffer waits for the previous download.
        MNV2_CHECK_CUDA(cudaMemcpyAsync(out.data.data(), as_float(steps_[i]), out.data.size() * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream));
      }
    }
    try {
      MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
    } catch (const Error& e) {
      throw Error(std::string("cudnn: the network failed while running on the GPU: ") + e.what());
    }

    const Step& last = steps_.back();
    Tensor logits(Shape{config_.batch, last.out_shape.per_image(), 1, 1});
    std::memcpy(logits.data.data(), pinned_logits_.get(), logits.data.size() * sizeof(float));
    return logits;
  }

 private:
  bool half() const { return arith_.data == CUDNN_DATA_HALF; }

  // Whether the float32 NCHW host side goes through a conversion (half storage or NHWC activations).
  bool converted() const { return half() || nhwc_; }

  // A step's output as float32 NCHW on the device: itself, or converted (half, NHWC) into the readback buffer,
  // which holds one layer output at a time.
  const void* as_float(const Step& s) {
    if (!converted()) return s.y;
    const TensorDescriptor from = descriptor(s.out_shape);
    const TensorDescriptor to = packed_descriptor(s.out_shape, CUDNN_DATA_FLOAT);
    MNV2_CHECK_CUDNN(cudnnTransformTensor(cudnn_.get(), &kOne, from.get(), s.y, &kZero, to.get(), readback_));
    return readback_;
  }

  TensorDescriptor descriptor(const Shape& shape) const { return packed_descriptor(shape, arith_.data, nhwc_); }

  // ---- running -------------------------------------------------------------------------------------------

  // The network on the input already on the device (the last run's upload), nothing downloaded.
  Tensor run_device_resident(StepObserver* observer, bool times_steps) {
    if (times_steps)
      throw UsageError(
          "cudnn: a device-resident run is for whole-run timing only; per-step observers run the usual way");
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
      throw Error(std::string("cudnn: the network failed while running on the GPU: ") + e.what());
    }
    return Tensor{};
  }

  // Upload (and conversion), every step, the logits to the pinned buffer: the whole run, layer by layer.
  void enqueue_network(cudaStream_t stream, StepObserver* observer) {
    const size_t input_bytes = static_cast<size_t>(input_shape_.numel()) * sizeof(float);
    if (converted()) {
      MNV2_CHECK_CUDA(
          cudaMemcpyAsync(input_staging_, pinned_input_.get(), input_bytes, cudaMemcpyHostToDevice, stream));
      MNV2_CHECK_CUDNN(cudnnTransformTensor(cudnn_.get(), &kOne, input_float_desc_.get(), input_staging_, &kZero,
                                            input_desc_.get(), input_device_));
    } else {
      MNV2_CHECK_CUDA(cudaMemcpyAsync(input_device_, pinned_input_.get(), input_bytes, cudaMemcpyHostToDevice, stream));
    }
    enqueue_steps(stream, observer);
    const Step& last = steps_.back();
    const size_t logits_bytes = static_cast<size_t>(last.out_shape.numel()) * sizeof(float);
    MNV2_CHECK_CUDA(
        cudaMemcpyAsync(pinned_logits_.get(), as_float(last), logits_bytes, cudaMemcpyDeviceToHost, stream));
  }

  void enqueue_steps(cudaStream_t stream, StepObserver* observer) {
    for (size_t i = 0; i < units_.size(); ++i) {
      const int index = static_cast<int>(i);
      const ExecStep& exec = exec_steps_[i];
      NvtxRange range(exec.name.c_str());
      if (observer) observer->step_begin(index, stream);
      try {
        execute_unit(units_[i]);
        MNV2_CHECK_CUDA(cudaGetLastError());
      } catch (const Error& e) {
        throw Error("cudnn: step '" + exec.name + "' (" + steps_[units_[i].layers.front()].label + "): " + e.what());
      }
      if (observer) observer->step_end(index, stream);
    }
  }

  void execute_unit(const Unit& u) {
    if (u.fused) {
      MNV2_CHECK_CUDNN(cudnnBackendExecute(cudnn_.get(), u.fused->plan.plan.get(), u.fused->pack.get()));
      if (u.bias_after) {
        const Step& conv = steps_[u.layers.front()];
        MNV2_CHECK_CUDNN(
            cudnnAddTensor(cudnn_.get(), &kOne, conv.bias_desc.get(), conv.bias, &kOne, conv.y_desc.get(), conv.y));
      }
    }
    for (int layer : u.legacy) execute(steps_[layer]);
  }

  // Records enqueue_network() once as a CUDA graph, each node tied to its step, and the steps alone as a second
  // graph for device-resident runs.
  void capture_graphs() {
    cudaStream_t stream = stream_.get();
    gpu::CaptureRecorder recorder("cudnn");
    graph_ = gpu::capture_graph(stream, [&](cudaStream_t st) { enqueue_network(st, &recorder); });
    recorder.finish(graph_.get());
    graph_steps_ = std::move(recorder.map);
    graph_exec_ = gpu::instantiate_graph(graph_.get(), stream);
    compute_graph_ = gpu::capture_graph(stream, [&](cudaStream_t st) { enqueue_steps(st, nullptr); });
    compute_exec_ = gpu::instantiate_graph(compute_graph_.get(), stream);
  }

  // An executable copy of the captured graph made while `observer` watches (once per observer id).
  void prepare_observed_graph(StepObserver& observer) {
    const uint64_t id = observer.graph_observer_id();
    if (observed_exec_ && observed_for_ == id) return;
    observed_exec_ = gpu::GraphExec();
    observer.instantiate_graph(graph_steps_,
                               [&] { observed_exec_ = gpu::instantiate_graph(graph_.get(), stream_.get()); });
    if (!observed_exec_) throw Error("cudnn: the observer did not let the graph be instantiated");
    observed_for_ = id;
  }

  void build(const Model& model) {
    const size_t n = model.layers.size();
    if (n == 0) throw Error("cudnn: the model has no layers");
    const std::vector<LayerStats> stats = analyse(model, config_.batch, config_.height, config_.width);
    if (stats.size() != n)
      throw Error("cudnn: analyse() returned a shape for " + std::to_string(stats.size()) + " of " + std::to_string(n) +
                  " layers");
    input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
    layers_.clear();
    for (const Layer& l : model.layers) layers_.push_back(&l);

    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    stream_ = make_stream();
    cudnn_ = make_cudnn_handle();
    cublas_ = make_cublas_handle();
    MNV2_CHECK_CUDNN(cudnnSetStream(cudnn_.get(), stream_.get()));
    MNV2_CHECK_CUBLAS(cublasSetStream(cublas_.get(), stream_.get()));
    MNV2_CHECK_CUBLAS(cublasSetMathMode(cublas_.get(), arith_.blas_math));

    // Plan: every layer output keeps its own buffer, so keep_layer_outputs can download all of them after
    // the run; padded copies get their own too.
    ArenaPlan weight_plan, activation_plan;
    const size_t e = arith_.element_bytes;
    const size_t input_offset = activation_plan.add(input_shape_.numel(), e);
    // fp16: the float32 input lands in a staging buffer and is converted; outputs are converted back into
    // the readback buffer (the largest layer output) before download.
    int64_t largest_output = 0;
    for (const LayerStats& st : stats) largest_output = std::max(largest_output, st.output.numel());
    const size_t staging_offset = converted() ? activation_plan.add(input_shape_.numel(), sizeof(float)) : 0;
    const size_t readback_offset = converted() ? activation_plan.add(largest_output, sizeof(float)) : 0;
    // fp16: weights are uploaded as float32 one layer at a time into this buffer, then converted.
    int64_t largest_weight = 0;
    std::vector<size_t> out_offset(n), pad_offset(n), w_offset(n), b_offset(n);
    steps_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const Layer& layer = model.layers[i];
      Step& step = steps_[i];
      step.kind = layer.kind;
      step.layer = static_cast<int>(i);
      step.label = layer_label(layer);
      step.out_shape = stats[i].output;
      for (int j : layer.inputs)
        if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
          throw Error("cudnn: " + step.label + " reads layer " + std::to_string(j) + ", which does not come before it");
      step.in_layer = layer.inputs.at(0);
      step.in_shape = step.in_layer == kNetworkInput ? input_shape_ : stats[step.in_layer].output;
      if (layer.kind == LayerKind::ResidualAdd) step.in_layer2 = layer.inputs.at(1);
      out_offset[i] = activation_plan.add(step.out_shape.numel(), e);
      step.has_bias = !layer.bias.empty();
      if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
        w_offset[i] = weight_plan.add(static_cast<int64_t>(layer.weight.size()), e);
        if (step.has_bias) b_offset[i] = weight_plan.add(static_cast<int64_t>(layer.bias.size()), e);
        largest_weight = std::max(largest_weight, static_cast<int64_t>(layer.weight.size()));
      }
      if (layer.kind == LayerKind::Conv2d) {
        const ConvParams& c = layer.conv;
        step.sym_pad_h = std::min(c.pad_top, c.pad_bottom);
        step.sym_pad_w = std::min(c.pad_left, c.pad_right);
        step.extra_top = c.pad_top - step.sym_pad_h;
        step.extra_bottom = c.pad_bottom - step.sym_pad_h;
        step.extra_left = c.pad_left - step.sym_pad_w;
        step.extra_right = c.pad_right - step.sym_pad_w;
        step.pad_copy = step.extra_top + step.extra_bottom + step.extra_left + step.extra_right > 0;
        if (step.pad_copy) {
          step.padded_shape = step.in_shape;
          step.padded_shape.h += step.extra_top + step.extra_bottom;
          step.padded_shape.w += step.extra_left + step.extra_right;
          pad_offset[i] = activation_plan.add(step.padded_shape.numel(), e);
        }
      }
    }

    // An absurd batch or input size is refused from the plan, with the figures, before anything is allocated.
    // If an allocation fails anyway, everything allocated so far is freed by its owner as the exception
    // leaves the constructor, and the context stays usable: a smaller run can follow in the same process.
    check_device_memory(
        weight_plan.bytes() + activation_plan.bytes(),
        "the weights (" + gib(weight_plan.bytes()) + ") and activations (" + gib(activation_plan.bytes()) + ")");
    weights_ = allocate(weight_plan.bytes(), "the weights");
    activations_ = allocate(activation_plan.bytes(), "the activations");
    cudaStream_t stream = stream_.get();
    MNV2_CHECK_CUDA(cudaMemsetAsync(activations_.get(), kFindFillByte, activations_.bytes(), stream));
    input_device_ = at_offset(activations_, input_offset);
    input_desc_ = descriptor(input_shape_);
    if (converted()) {
      input_staging_ = at_offset(activations_, staging_offset);
      readback_ = at_offset(activations_, readback_offset);
      input_float_desc_ = packed_descriptor(input_shape_, CUDNN_DATA_FLOAT);
    }
    // Pageable sources: each call returns once the bytes are staged; fp16 converts each on the device
    // through one float32 buffer (same stream, so each conversion finishes before the next upload).
    DeviceBuffer weight_staging =
        half() ? allocate(static_cast<size_t>(largest_weight) * sizeof(float), "the weight conversion")
               : DeviceBuffer();
    auto upload = [&](void* to, const std::vector<float>& from_layer) {
      const std::vector<float>& from = from_layer;
      const size_t bytes = from.size() * sizeof(float);
      if (!half()) {
        MNV2_CHECK_CUDA(cudaMemcpyAsync(to, from.data(), bytes, cudaMemcpyHostToDevice, stream));
        return;
      }
      MNV2_CHECK_CUDA(cudaMemcpyAsync(weight_staging.get(), from.data(), bytes, cudaMemcpyHostToDevice, stream));
      const Shape flat{1, static_cast<int64_t>(from.size()), 1, 1};
      MNV2_CHECK_CUDNN(cudnnTransformTensor(cudnn_.get(), &kOne, packed_descriptor(flat, CUDNN_DATA_FLOAT).get(),
                                            weight_staging.get(), &kZero,
                                            packed_descriptor(flat, CUDNN_DATA_HALF).get(), to));
    };
    for (size_t i = 0; i < n; ++i) {
      const Layer& layer = model.layers[i];
      Step& step = steps_[i];
      step.y = at_offset(activations_, out_offset[i]);
      if (step.pad_copy) step.padded = at_offset(activations_, pad_offset[i]);
      if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
        void* w = at_offset(weights_, w_offset[i]);
        // NHWC: filters [K, C/g, R, S] become channels-last [K, R, S, C/g] (the same order for 1x1 and
        // depthwise filters).
        if (nhwc_ && layer.kind == LayerKind::Conv2d)
          upload(w, channels_last_filter(layer));
        else
          upload(w, layer.weight);
        step.weight = w;
        if (step.has_bias) {
          void* b = at_offset(weights_, b_offset[i]);
          upload(b, layer.bias);
          step.bias = b;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Step& step = steps_[i];
      step.x = step.in_layer == kNetworkInput ? input_device_ : steps_[step.in_layer].y;
      if (step.kind == LayerKind::ResidualAdd)
        step.x2 = step.in_layer2 == kNetworkInput ? input_device_ : steps_[step.in_layer2].y;
      try {
        configure(step, model.layers[i]);
      } catch (const Error& e) {
        throw Error("cudnn: " + step.label + ": " + e.what());
      }
    }

    size_t fused_workspace = 0;
    if (fused_) {
      form_units(model);
      fused_workspace = tune_units();
    } else {
      for (size_t i = 0; i < n; ++i) {
        Unit u;
        u.layers = {static_cast<int>(i)};
        u.legacy = {static_cast<int>(i)};
        units_.push_back(std::move(u));
      }
    }
    choose_conv_algorithms(fused_workspace);
    for (Unit& u : units_)
      if (u.fused) u.fused->pack = make_variant_pack(u.fused->uids, u.fused->pointers, workspace_.get());
    // cuBLAS gets its own workspace, so nothing is allocated while a run is captured into a CUDA graph.
    cublas_workspace_ = allocate(kCublasWorkspace, "cuBLAS's workspace");
    MNV2_CHECK_CUBLAS(cublasSetWorkspace(cublas_.get(), cublas_workspace_.get(), kCublasWorkspace));

    // The border of a padded buffer is zero for good; runs only ever write its interior.
    for (const Step& step : steps_)
      if (step.pad_copy)
        MNV2_CHECK_CUDA(cudaMemsetAsync(step.padded, 0,
                                        static_cast<size_t>(step.padded_shape.numel()) * arith_.element_bytes, stream));
    pinned_input_ = allocate_pinned(static_cast<size_t>(input_shape_.numel()) * sizeof(float), "the input");
    pinned_logits_ =
        allocate_pinned(static_cast<size_t>(steps_.back().out_shape.numel()) * sizeof(float), "the logits");
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));

    exec_steps_.clear();
    for (Unit& u : units_) {
      ExecStep e;
      for (int layer : u.layers)
        e.name +=
            (e.name.empty() ? "" : " + ") + std::string(to_string(steps_[layer].kind)) + " " + std::to_string(layer);
      e.layers = u.layers;
      if (!u.fused) {
        for (int layer : u.legacy)
          e.variant += (e.variant.empty() ? "" : "; ") + variant_name(steps_[layer], model.layers[layer]);
        if (!u.variant.empty()) e.variant = u.variant + "; " + e.variant;
      } else {
        e.variant = u.variant;
      }
      exec_steps_.push_back(std::move(e));
    }
    layer_outputs_.assign(n, Tensor{});
    int graphs = 0;
    for (const Unit& u : units_) graphs += u.fused ? 1 : 0;
    const CudaEnvironment& env = cuda_environment();
    description_ = "NVIDIA cuDNN " + cudnn_version_string(cudnnGetVersion()) + " + cuBLAS " + cublas_version_string() +
                   ", " + to_string(config_.cudnn.variant) +
                   (fused_ ? " (" + std::to_string(graphs) + " operation graphs)" : std::string(" (legacy calls)")) +
                   (nhwc_ ? ", NHWC" : ", NCHW") + ", " + to_string(arith_.precision) + ", CUDA graph " +
                   to_string(graph_mode_) + (env.devices.empty() ? std::string() : " on " + env.devices.front().name) +
                   (cache_warning_.empty() ? std::string() : "; plan cache " + cache_warning_);

    // One layer-by-layer pass (every module loaded, every call checked) before anything is captured.
    enqueue_network(stream, nullptr);
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
    if (graph_mode_ != CudnnOptions::Graph::off) capture_graphs();
  }

  // ---- the fused variant ---------------------------------------------------------------------------------

  // Groups: each convolution with the ReLU6/ReLU that reads it, and the residual add that reads that, where
  // each intermediate has no other reader (consecutive in topology order, as MobileNetV2's are).
  void form_units(const Model& model) {
    const int n = static_cast<int>(steps_.size());
    std::vector<int> readers(static_cast<size_t>(n), 0);
    for (const Layer& l : model.layers)
      for (int j : l.inputs)
        if (j >= 0 && j < n) ++readers[static_cast<size_t>(j)];
    ++readers[static_cast<size_t>(n - 1)];  // the network's output
    for (int i = 0; i < n;) {
      Unit u;
      if (steps_[i].kind != LayerKind::Conv2d) {
        u.layers = u.legacy = {i};
        units_.push_back(std::move(u));
        ++i;
        continue;
      }
      u.conv = i;
      int end = i;
      auto sole_reader = [&](int next) { return next < n && readers[static_cast<size_t>(end)] == 1; };
      if (sole_reader(end + 1) &&
          (steps_[end + 1].kind == LayerKind::ReLU6 || steps_[end + 1].kind == LayerKind::ReLU) &&
          steps_[end + 1].in_layer == end && model.layers[end + 1].clip_min == 0.0f) {
        u.act = ++end;
      }
      if (sole_reader(end + 1) && steps_[end + 1].kind == LayerKind::ResidualAdd) {
        const Step& a = steps_[end + 1];
        if ((a.in_layer == end) != (a.in_layer2 == end)) u.add = ++end;
      }
      for (int j = i; j <= end; ++j) u.layers.push_back(j);
      units_.push_back(std::move(u));
      i = end + 1;
    }
  }

  ConvGraphSpec graph_spec(const Unit& u, bool bias, bool act, bool add) const {
    const Step& s = steps_[u.conv];
    const Layer& l = *layers_[u.conv];
    const ConvParams& c = l.conv;
    ConvGraphSpec g;
    g.io_type = arith_.data;
    g.nhwc = nhwc_;
    g.n = s.in_shape.n;
    g.c = s.in_shape.c;
    g.h = s.in_shape.h;
    g.w = s.in_shape.w;
    g.k = c.out_channels;
    g.r = c.kernel_h;
    g.s = c.kernel_w;
    g.groups = c.groups;
    g.out_h = s.out_shape.h;
    g.out_w = s.out_shape.w;
    g.pad_top = c.pad_top;
    g.pad_left = c.pad_left;
    g.pad_bottom = c.pad_bottom;
    g.pad_right = c.pad_right;
    g.stride_h = c.stride_h;
    g.stride_w = c.stride_w;
    g.bias = bias && s.has_bias;
    if (act && u.act >= 0) {
      const Layer& a = *layers_[u.act];
      g.act = std::isinf(a.clip_max) ? ConvGraphSpec::Act::relu : ConvGraphSpec::Act::clip;
      g.clip_max = std::isinf(a.clip_max) ? 0.0f : a.clip_max;
    }
    g.residual = add && u.add >= 0;
    return g;
  }

  std::string cache_key(const ConvGraphSpec& spec) const {
    const CudaEnvironment& env = cuda_environment();
    std::string gpu = "?";
    if (!env.devices.empty()) {
      const GpuDevice& d = env.devices.front();
      gpu = d.name + " cc" + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    }
    return "cudnn " + cudnn_version_string(cudnnGetVersion()) + " | " + gpu + " | " + to_string(arith_.precision) +
           " | " + spec.key();
  }

  // Mean time of `repeats` calls of `work` on the stream, in ms. <0: it failed.
  float time_on_stream(const std::function<bool()>& work, int repeats) {
    cudaStream_t stream = stream_.get();
    MNV2_CHECK_CUDA(cudaEventRecord(tune_start_.get(), stream));
    for (int r = 0; r < repeats; ++r)
      if (!work()) return -1.0f;
    MNV2_CHECK_CUDA(cudaEventRecord(tune_end_.get(), stream));
    MNV2_CHECK_CUDA(cudaEventSynchronize(tune_end_.get()));
    float ms = 0.0f;
    MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, tune_start_.get(), tune_end_.get()));
    return ms / static_cast<float>(repeats);
  }

  // Time one plan on the real buffers: one untimed execution, one timed; where that is not more than 3 times
  // the best so far (`best_ms`, <0: none yet), the mean of kTuneRepeats more. <0: it failed.
  float time_plan(const ExecutionPlan& plan, const BackendDescriptor& pack, float best_ms) {
    auto once = [&] { return cudnnBackendExecute(cudnn_.get(), plan.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS; };
    if (!once()) return -1.0f;
    const float first = time_on_stream(once, 1);
    if (first < 0 || (best_ms >= 0 && first > 3 * best_ms)) return first;
    return time_on_stream(once, kTuneRepeats);
  }

  // The plan for one graph: the cached choice where it still finalizes and is allowed, else the fastest allowed
  // candidate (or, past the tuning budget, the first that finalizes). Null, with *why, where none can run.
  std::unique_ptr<FusedGraph> choose_plan(const Unit& u, const ConvGraphSpec& spec, void* tune_ws, size_t tune_bytes,
                                          std::string* why) {
    const bool strict = arith_.precision == Precision::fp32;
    auto f = std::make_unique<FusedGraph>();
    f->spec = spec;
    try {
      f->graph = build_conv_graph(cudnn_.get(), spec);
    } catch (const Error& e) {
      *why = std::string("cuDNN refuses the graph: ") + e.what();
      return nullptr;
    }
    const Step& conv = steps_[u.conv];
    f->last_layer = spec.residual ? u.add : (spec.act != ConvGraphSpec::Act::none ? u.act : u.conv);
    f->uids = {kUidX, kUidW};
    f->pointers = {const_cast<void*>(conv.x), const_cast<void*>(conv.weight)};
    if (spec.bias) {
      f->uids.push_back(kUidBias);
      f->pointers.push_back(const_cast<void*>(conv.bias));
    }
    if (spec.residual) {
      const Step& a = steps_[u.add];
      f->uids.push_back(kUidResidual);
      f->pointers.push_back(const_cast<void*>(a.in_layer == f->last_layer - 1 ? a.x2 : a.x));
    }
    f->uids.push_back(kUidY);
    f->pointers.push_back(steps_[f->last_layer].y);

    const std::string key = cache_key(spec);
    std::optional<CachedPlan> cached = find_process_plan(key);
    const char* cached_how = "cached (this process)";
    if (!cached) {
      if (const CachedPlan* c = plan_cache_.find(key)) cached = *c;
      cached_how = "cached (plan cache file)";
    }
    std::string retune;
    if (cached) {
      f->choice = rebuild_choice(f->graph, cached->engine, cached->knobs);
      std::string plan_why;
      if (f->choice.config && disallowed_reason(f->choice, strict).empty())
        f->plan = make_plan(cudnn_.get(), f->choice, &plan_why);
      if (f->plan && static_cast<size_t>(f->plan.workspace_bytes) <= tune_bytes) {
        f->how = cached_how;
        return f;
      }
      retune = ", re-tuned: the cached engine " + std::to_string(cached->engine) + " no longer finalizes";
      f->plan = ExecutionPlan{};
    }

    std::vector<EngineChoice> offered = engine_choices(f->graph);
    std::string excluded;
    std::vector<EngineChoice> allowed;
    for (EngineChoice& c : offered) {
      const std::string reason = disallowed_reason(c, strict);
      if (reason.empty())
        allowed.push_back(std::move(c));
      else
        excluded += (excluded.empty() ? "" : ", ") + std::to_string(c.engine) + " (" + reason + ")";
    }
    if (allowed.empty()) {
      *why = "no allowed engine: " + std::to_string(offered.size()) + " offered" +
             (excluded.empty() ? std::string() : ", excluded " + excluded);
      return nullptr;
    }
    const auto spent = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_begin_).count() > kTuneBudgetSeconds;
    };
    float best_ms = -1.0f;
    int timed = 0;
    std::string failures;
    for (size_t i = 0; i < allowed.size() && static_cast<int>(i) < kMaxTuneCandidates; ++i) {
      std::string plan_why;
      ExecutionPlan plan = make_plan(cudnn_.get(), allowed[i], &plan_why);
      if (!plan || static_cast<size_t>(plan.workspace_bytes) > tune_bytes) {
        failures += (failures.empty() ? "" : ", ") + std::to_string(allowed[i].engine);
        continue;
      }
      if (spent() && !f->plan) {  // budget spent: the first that finalizes
        f->choice = std::move(allowed[i]);
        f->plan = std::move(plan);
        f->how = "heuristic order (tuning budget of " + format_number(kTuneBudgetSeconds) + " s spent)";
        break;
      }
      const BackendDescriptor pack = make_variant_pack(f->uids, f->pointers, tune_ws);
      const float ms = time_plan(plan, pack, best_ms);
      if (ms < 0) continue;
      ++timed;
      if (best_ms < 0 || ms < best_ms) {
        best_ms = ms;
        f->choice = std::move(allowed[i]);
        f->plan = std::move(plan);
      }
      if (spent()) break;
    }
    if (!f->plan) {
      *why = "none of the " + std::to_string(allowed.size()) + " allowed engines finalizes or runs" +
             (failures.empty() ? std::string() : " (" + failures + ")");
      return nullptr;
    }
    if (best_ms >= 0) {
      char text[96];
      std::snprintf(text, sizeof text, "tuned %.4f ms, best of %d", static_cast<double>(best_ms), timed);
      f->how = text;
    }
    f->how += retune;
    if (best_ms >= 0) {  // only measured choices are kept
      const CachedPlan chosen{f->choice.engine, f->choice.knobs, f->plan.workspace_bytes, best_ms};
      put_process_plan(key, chosen);
      plan_cache_.put(key, chosen);
      plan_cache_dirty_ = true;
    }
    return f;
  }

  // Each group's graph: all its ops where cuDNN offers an allowed engine, else fewer (the rest as legacy calls),
  // else the legacy convolution. Returns the workspace the chosen plans need.
  size_t tune_units() {
    size_t free_bytes = 0, total_bytes = 0;
    MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const size_t tune_bytes = std::min(kMaxTuneWorkspace, free_bytes / 4);
    const DeviceBuffer tune_ws = allocate(tune_bytes, "the tuning workspace");
    const std::string path = plan_cache_file();
    plan_cache_ = PlanCache::load(path, &cache_warning_);
    if (!cache_warning_.empty()) std::fprintf(stderr, "mnv2: warning: %s\n", cache_warning_.c_str());
    tune_start_ = gpu::make_event();
    tune_end_ = gpu::make_event();
    tune_begin_ = std::chrono::steady_clock::now();
    size_t need = 0;
    for (Unit& u : units_) {
      if (u.conv < 0) continue;
      struct Level {
        bool bias, act, add;
      };
      const Level levels[] = {{true, true, true}, {true, true, false}, {true, false, false}, {false, false, false}};
      // Every fusion depth cuDNN has an allowed engine for is timed as the whole step (the graph, then what is
      // left to legacy calls): the deepest fusion is not always the fastest (a depthwise conv + bias + ReLU6
      // graph may only have cuDNN's generic engine 0, twenty times slower than the bare convolution's best).
      // The depth chosen is cached too (as the "engine" of a "depth |" entry), so a second prepare runs the very
      // same kernels.
      const std::string depth_key = "depth | " + cache_key(graph_spec(u, true, true, true));
      std::optional<CachedPlan> depth = find_process_plan(depth_key);
      if (!depth)
        if (const CachedPlan* c = plan_cache_.find(depth_key)) depth = *c;
      std::string fell_back, levels_timed;
      std::string last_spec;
      float best_unit_ms = -1.0f;
      int best_level = -1;
      for (int li = 0; li < 4; ++li) {
        const Level& level = levels[li];
        if (depth && depth->engine != li && depth->engine >= 0 && depth->engine < 4) continue;
        const ConvGraphSpec spec = graph_spec(u, level.bias, level.act, level.add);
        if (spec.ops() == last_spec) continue;  // the group has no such op: the same graph
        last_spec = spec.ops();
        std::string why;
        std::unique_ptr<FusedGraph> f = choose_plan(u, spec, tune_ws.get(), tune_bytes, &why);
        if (!f) {
          fell_back += (fell_back.empty() ? "" : "; ") + spec.ops() + ": " + why;
          continue;
        }
        Unit trial;
        trial.layers = u.layers;
        trial.bias_after = steps_[u.conv].has_bias && !f->spec.bias;
        for (int layer : u.layers)
          if (layer > f->last_layer) trial.legacy.push_back(layer);
        f->pack = make_variant_pack(f->uids, f->pointers, tune_ws.get());
        trial.fused = std::move(f);
        const auto run_unit = [&] {
          execute_unit(trial);
          return true;
        };
        run_unit();
        const float ms = time_on_stream(run_unit, kTuneRepeats);
        char t[64];
        std::snprintf(t, sizeof t, " %.4f ms", static_cast<double>(ms));
        levels_timed += (levels_timed.empty() ? "" : ", ") + spec.ops() + t;
        if (best_unit_ms < 0 || (ms >= 0 && ms < best_unit_ms)) {
          best_unit_ms = ms;
          best_level = li;
          u.fused = std::move(trial.fused);
          u.bias_after = trial.bias_after;
          u.legacy = trial.legacy;
        }
      }
      if (u.fused && !depth && best_level >= 0) {
        const CachedPlan chosen{best_level, {}, 0, best_unit_ms};
        put_process_plan(depth_key, chosen);
        plan_cache_.put(depth_key, chosen);
        plan_cache_dirty_ = true;
      }
      std::string variant;
      if (u.fused) {
        const FusedGraph& f = *u.fused;
        need = std::max(need, static_cast<size_t>(f.plan.workspace_bytes));
        for (int layer : u.layers)
          if (layer < f.last_layer) steps_[layer].materialised = false;
        steps_[u.conv].needs_algo = false;
        variant = "graph " + f.spec.ops() + " " + to_string(arith_.precision) + ": " + f.choice.describe() + ", " +
                  (nhwc_ ? "NHWC" : "NCHW") + ", ws=" + std::to_string(f.plan.workspace_bytes) + "B, " + f.how;
        if (u.bias_after) variant += "; bias: cudnnAddTensor";
        for (int layer : u.legacy)
          variant += "; " + std::string(to_string(steps_[layer].kind)) + " " + std::to_string(layer) + ": " +
                     variant_name(steps_[layer], *layers_[layer]) + " separate";
      } else {
        u.legacy = u.layers;
        variant = std::string("legacy calls ") + to_string(arith_.precision);
      }
      if (!levels_timed.empty() && levels_timed.find(',') != std::string::npos)
        variant += " (fusion depth by step time: " + levels_timed + ")";
      else if (depth)
        variant += " (fusion depth cached)";
      if (!fell_back.empty()) variant += " (no graph for " + fell_back + ")";
      u.variant = variant;
    }
    if (plan_cache_dirty_ && !path.empty()) {
      try {
        plan_cache_.save(path);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mnv2: warning: the cudnn plan cache could not be written: %s\n", e.what());
      }
    }
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
    return need;
  }

  static std::vector<float> channels_last_filter(const Layer& layer) {
    const ConvParams& c = layer.conv;
    const int64_t k = c.out_channels, cg = c.in_channels / c.groups, r = c.kernel_h, sz = c.kernel_w;
    std::vector<float> out(layer.weight.size());
    for (int64_t ko = 0; ko < k; ++ko)
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t y = 0; y < r; ++y)
          for (int64_t x = 0; x < sz; ++x)
            out[static_cast<size_t>(((ko * r + y) * sz + x) * cg + ci)] =
                layer.weight[static_cast<size_t>(((ko * cg + ci) * r + y) * sz + x)];
    return out;
  }

  void configure(Step& step, const Layer& layer) {
    switch (layer.kind) {
      case LayerKind::Conv2d: {
        const ConvParams& c = layer.conv;
        if (step.in_shape.c != c.in_channels)
          throw Error("input has " + std::to_string(step.in_shape.c) + " channels, expected " +
                      std::to_string(c.in_channels));
        const Shape& conv_in = step.pad_copy ? step.padded_shape : step.in_shape;
        step.x_desc = descriptor(conv_in);
        if (step.pad_copy) {
          const int64_t pixel = nhwc_ ? step.padded_shape.c : 1;  // elements per pixel in a row
          step.padded_interior =
              static_cast<char*>(step.padded) +
              (step.extra_top * step.padded_shape.w + step.extra_left) * pixel * arith_.element_bytes;
        }
        step.w_desc = make_filter_descriptor();
        MNV2_CHECK_CUDNN(cudnnSetFilter4dDescriptor(step.w_desc.get(), arith_.data,
                                                    nhwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, c.out_channels,
                                                    c.in_channels / c.groups, c.kernel_h, c.kernel_w));
        step.conv_desc = make_convolution_descriptor();
        // ONNX Conv is cross-correlation (the kernel is not flipped). Accumulation is float32 in every mode
        // (for fp16 storage that is cuDNN's "pseudo half" configuration).
        MNV2_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(step.conv_desc.get(), step.sym_pad_h, step.sym_pad_w,
                                                         c.stride_h, c.stride_w, 1, 1, CUDNN_CROSS_CORRELATION,
                                                         CUDNN_DATA_FLOAT));
        MNV2_CHECK_CUDNN(cudnnSetConvolutionGroupCount(step.conv_desc.get(), c.groups));
        MNV2_CHECK_CUDNN(cudnnSetConvolutionMathType(step.conv_desc.get(), arith_.conv_math));
        int on = 0, oc = 0, oh = 0, ow = 0;
        MNV2_CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(step.conv_desc.get(), step.x_desc.get(),
                                                               step.w_desc.get(), &on, &oc, &oh, &ow));
        if (!(Shape{on, oc, oh, ow} == step.out_shape))
          throw Error("cuDNN's output " + Shape{on, oc, oh, ow}.str() + " differs from the model's " +
                      step.out_shape.str());
        step.y_desc = descriptor(step.out_shape);
        if (step.has_bias) step.bias_desc = descriptor(Shape{1, c.out_channels, 1, 1});
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU: {
        if (!(step.out_shape == step.in_shape))
          throw Error("output " + step.out_shape.str() + " differs from input " + step.in_shape.str());
        step.x_desc = descriptor(step.in_shape);
        step.y_desc = descriptor(step.out_shape);
        step.activation = make_activation_descriptor();
        const bool unbounded = std::isinf(layer.clip_max);
        // NaN propagates: a profiler should show a broken input, not clip it into a plausible number.
        MNV2_CHECK_CUDNN(cudnnSetActivationDescriptor(
            step.activation.get(), unbounded ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_CLIPPED_RELU,
            CUDNN_PROPAGATE_NAN, unbounded ? 0.0 : static_cast<double>(layer.clip_max)));
        break;
      }
      case LayerKind::ResidualAdd: {
        const Shape second = step.in_layer2 == kNetworkInput ? input_shape_ : steps_[step.in_layer2].out_shape;
        if (!(step.in_shape == second) || !(step.out_shape == step.in_shape))
          throw Error("adds " + step.in_shape.str() + " and " + second.str() + " into " + step.out_shape.str());
        step.y_desc = descriptor(step.out_shape);
        step.add = make_op_tensor_descriptor();
        MNV2_CHECK_CUDNN(
            cudnnSetOpTensorDescriptor(step.add.get(), CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
        break;
      }
      case LayerKind::GlobalAveragePool: {
        const Shape& in = step.in_shape;
        if (!(step.out_shape == Shape{in.n, in.c, 1, 1}))
          throw Error("pools " + in.str() + " into " + step.out_shape.str());
        step.x_desc = descriptor(in);
        step.y_desc = descriptor(step.out_shape);
        step.pooling = make_pooling_descriptor();
        // One window over the whole map, no padding: "include padding" then divides by exactly H*W.
        const int h = to_int(in.h, "height"), w = to_int(in.w, "width");
        MNV2_CHECK_CUDNN(cudnnSetPooling2dDescriptor(step.pooling.get(), CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                                     CUDNN_PROPAGATE_NAN, h, w, 0, 0, h, w));
        break;
      }
      case LayerKind::Linear: {
        if (step.in_shape.per_image() != layer.in_features)
          throw Error("input " + step.in_shape.str() + " does not hold " + std::to_string(layer.in_features) +
                      " features");
        if (!(step.out_shape == Shape{config_.batch, layer.out_features, 1, 1}))
          throw Error("output " + step.out_shape.str() + " is not " + std::to_string(layer.out_features) + " features");
        step.in_features = layer.in_features;
        step.out_features = layer.out_features;
        step.y_desc = descriptor(step.out_shape);
        if (step.has_bias) step.bias_desc = descriptor(Shape{1, layer.out_features, 1, 1});
        break;
      }
    }
  }

  static std::string problem_key(const Step& s, int device, Precision precision) {
    int n = 0, c = 0, h = 0, w = 0, k = 0, cg = 0, kh = 0, kw = 0, ph = 0, pw = 0, sh = 0, sw = 0, dh = 0, dw = 0;
    int groups = 0;
    cudnnDataType_t type{};
    cudnnTensorFormat_t format{};
    cudnnConvolutionMode_t mode{};
    int ns = 0, cs = 0, hs = 0, ws = 0;
    MNV2_CHECK_CUDNN(cudnnGetTensor4dDescriptor(s.x_desc.get(), &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws));
    MNV2_CHECK_CUDNN(cudnnGetFilter4dDescriptor(s.w_desc.get(), &type, &format, &k, &cg, &kh, &kw));
    MNV2_CHECK_CUDNN(cudnnGetConvolution2dDescriptor(s.conv_desc.get(), &ph, &pw, &sh, &sw, &dh, &dw, &mode, &type));
    MNV2_CHECK_CUDNN(cudnnGetConvolutionGroupCount(s.conv_desc.get(), &groups));
    char key[256];
    std::snprintf(key, sizeof key, "gpu%d %s x=%dx%dx%dx%d%s w=%dx%dx%dx%d pad=%d,%d stride=%d,%d groups=%d", device,
                  to_string(precision), n, c, h, w, cs == 1 ? " nhwc" : "", k, cg, kh, kw, ph, pw, sh, sw, groups);
    return key;
  }

  // Legacy algorithms for the convolutions run by the legacy call; then the one workspace every step shares.
  void choose_conv_algorithms(size_t fused_workspace) {
    std::vector<ConvProblem> problems(steps_.size());
    size_t find_bytes = 0;
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step& s = steps_[i];
      if (s.kind != LayerKind::Conv2d || !s.needs_algo) continue;
      ConvProblem& p = problems[i];
      p.handle = cudnn_.get();
      p.x_desc = s.x_desc.get();
      p.x = s.pad_copy ? s.padded : s.x;
      p.w_desc = s.w_desc.get();
      p.w = s.weight;
      p.conv_desc = s.conv_desc.get();
      p.y_desc = s.y_desc.get();
      p.y = s.y;
      p.key = problem_key(s, device_, arith_.precision);
      p.tensor_ops = arith_.conv_math == CUDNN_TENSOR_OP_MATH;
      find_bytes = std::max(find_bytes, max_allowed_workspace(p));
    }
    size_t free_bytes = 0, total_bytes = 0;
    MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    find_bytes = std::min({find_bytes, kMaxFindWorkspace, free_bytes / 2});

    size_t workspace_bytes = fused_workspace;
    if (find_bytes > 0 || std::any_of(steps_.begin(), steps_.end(),
                                      [](const Step& s) { return s.kind == LayerKind::Conv2d && s.needs_algo; })) {
      DeviceBuffer find_workspace = allocate(find_bytes, "the algorithm search's workspace");
      for (size_t i = 0; i < steps_.size(); ++i) {
        Step& s = steps_[i];
        if (s.kind != LayerKind::Conv2d || !s.needs_algo) continue;
        try {
          s.algo = choose_algorithm(problems[i], find_workspace.get(), find_bytes);
        } catch (const Error& e) {
          throw Error("cudnn: " + s.label + ": " + e.what());
        }
        workspace_bytes = std::max(workspace_bytes, s.algo.workspace_bytes);
      }
    }
    workspace_ = allocate(workspace_bytes, "the convolution workspace");
  }

  // "out of device memory for batch 4096 at 1024x1024: <what> need 5123.45 GiB; 139.20 GiB of 139.72 GiB are
  // free on NVIDIA H200".
  Error out_of_device_memory(const std::string& what_needs, size_t free_bytes, size_t total_bytes) const {
    const CudaEnvironment& env = cuda_environment();
    return Error("cudnn: out of device memory for batch " + std::to_string(config_.batch) + " at " +
                 std::to_string(config_.height) + "x" + std::to_string(config_.width) + ": " + what_needs + "; " +
                 gib(free_bytes) + " of " + gib(total_bytes) + " are free" +
                 (env.devices.empty() ? std::string() : " on " + env.devices.front().name));
  }

  void check_device_memory(size_t bytes, const std::string& what) const {
    size_t free_bytes = 0, total_bytes = 0;
    MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (bytes > free_bytes) throw out_of_device_memory(what + " need " + gib(bytes), free_bytes, total_bytes);
  }

  DeviceBuffer allocate(size_t bytes, const std::string& what) const {
    check_device_memory(bytes, what);
    try {
      return DeviceBuffer(bytes);
    } catch (const Error& e) {
      // Free memory can still be too fragmented, or taken by another process since the check.
      if (std::string(e.what()).find(cudaGetErrorName(cudaErrorMemoryAllocation)) == std::string::npos) throw;
      size_t free_bytes = 0, total_bytes = 0;
      MNV2_CHECK_LOG(cudaMemGetInfo(&free_bytes, &total_bytes));
      throw out_of_device_memory(what + " need " + gib(bytes) + " (cudaMalloc failed)", free_bytes, total_bytes);
    }
  }

  PinnedBuffer allocate_pinned(size_t bytes, const std::string& what) const {
    try {
      return PinnedBuffer(bytes);
    } catch (const Error& e) {
      throw Error("cudnn: out of pinned host memory for " + what + " of batch " + std::to_string(config_.batch) + " (" +
                  gib(bytes) + "): " + e.what());
    }
  }

  std::string variant_name(const Step& s, const Layer& layer) const {
    switch (s.kind) {
      case LayerKind::Conv2d: {
        std::string v =
            std::string(algorithm_name(s.algo.algo)) + " ws=" + std::to_string(s.algo.workspace_bytes) + "B";
        if (arith_.precision != Precision::fp32)
          v += std::string(" ") + to_string(arith_.precision) +
               (s.algo.math == CUDNN_TENSOR_OP_MATH ? " tensor-op" : " fma");
        if (s.has_bias) v += " +bias";
        if (s.pad_copy) {
          const ConvParams& c = layer.conv;
          v += " +padcopy[" + std::to_string(c.pad_top) + "," + std::to_string(c.pad_left) + "," +
               std::to_string(c.pad_bottom) + "," + std::to_string(c.pad_right) + "]";
        }
        return v;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        return std::isinf(layer.clip_max) ? std::string("RELU") : "CLIPPED_RELU(" + format_number(layer.clip_max) + ")";
      case LayerKind::ResidualAdd:
        return "OpTensor ADD";
      case LayerKind::GlobalAveragePool:
        return "Pooling AVG " + std::to_string(s.in_shape.h) + "x" + std::to_string(s.in_shape.w);
      case LayerKind::Linear: {
        const char* gemm = arith_.precision == Precision::fp32   ? "cublasSgemm (pedantic fp32)"
                           : arith_.precision == Precision::tf32 ? "cublasSgemm (TF32 tensor ops)"
                                                                 : "cublasGemmEx (fp16, fp32 accumulate)";
        return s.has_bias ? std::string(gemm) + " +bias" : std::string(gemm);
      }
    }
    return "?";
  }

  void execute(const Step& s) {
    cudnnHandle_t h = cudnn_.get();
    switch (s.kind) {
      case LayerKind::Conv2d: {
        const void* x = s.x;
        if (s.pad_copy) {
          // A pitched 3-D copy into the interior (the zero border was written at prepare()). A copy engine
          // moves it at device bandwidth; cudnnTransformTensor did the same work with a transpose kernel
          // that the profiler measured at 4.5 ms of 15 ms for block2.dw at batch 64 on the H200.
          const Shape& in = s.in_shape;
          const Shape& pad = s.padded_shape;
          cudaMemcpy3DParms copy{};
          // cudaPitchedPtr{ptr, pitch bytes, row width, rows per slice}: the slice stride is pitch * rows.
          // NHWC: a row is w pixels of c channels, and a slice is one image.
          const size_t e = arith_.element_bytes * static_cast<size_t>(nhwc_ ? in.c : 1);
          const size_t slices = static_cast<size_t>(nhwc_ ? in.n : in.n * in.c);
          copy.srcPtr = cudaPitchedPtr{const_cast<void*>(s.x), static_cast<size_t>(in.w) * e, static_cast<size_t>(in.w),
                                       static_cast<size_t>(in.h)};
          copy.dstPtr = cudaPitchedPtr{s.padded_interior, static_cast<size_t>(pad.w) * e, static_cast<size_t>(in.w),
                                       static_cast<size_t>(pad.h)};
          copy.extent = cudaExtent{static_cast<size_t>(in.w) * e, static_cast<size_t>(in.h), slices};
          copy.kind = cudaMemcpyDeviceToDevice;
          MNV2_CHECK_CUDA(cudaMemcpy3DAsync(&copy, stream_.get()));
          x = s.padded;
        }
        MNV2_CHECK_CUDNN(cudnnConvolutionForward(h, &kOne, s.x_desc.get(), x, s.w_desc.get(), s.weight,
                                                 s.conv_desc.get(), s.algo.algo, workspace_.get(),
                                                 s.algo.workspace_bytes, &kZero, s.y_desc.get(), s.y));
        if (s.has_bias)
          MNV2_CHECK_CUDNN(cudnnAddTensor(h, &kOne, s.bias_desc.get(), s.bias, &kOne, s.y_desc.get(), s.y));
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        MNV2_CHECK_CUDNN(
            cudnnActivationForward(h, s.activation.get(), &kOne, s.x_desc.get(), s.x, &kZero, s.y_desc.get(), s.y));
        break;
      case LayerKind::ResidualAdd:
        MNV2_CHECK_CUDNN(cudnnOpTensor(h, s.add.get(), &kOne, s.y_desc.get(), s.x, &kOne, s.y_desc.get(), s.x2, &kZero,
                                       s.y_desc.get(), s.y));
        break;
      case LayerKind::GlobalAveragePool:
        MNV2_CHECK_CUDNN(
            cudnnPoolingForward(h, s.pooling.get(), &kOne, s.x_desc.get(), s.x, &kZero, s.y_desc.get(), s.y));
        break;
      case LayerKind::Linear: {
        // cuBLAS is column-major: the row-major logits [batch, out] are the column-major [out, batch] matrix
        // W x^T, with W [out, in] row-major read as its transpose and x [batch, in] as x^T.
        const int batch = config_.batch;
        if (half())
          MNV2_CHECK_CUBLAS(cublasGemmEx(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, s.out_features, batch, s.in_features,
                                         &kOne, s.weight, CUDA_R_16F, s.in_features, s.x, CUDA_R_16F, s.in_features,
                                         &kZero, s.y, CUDA_R_16F, s.out_features, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT));
        else
          MNV2_CHECK_CUBLAS(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, s.out_features, batch, s.in_features,
                                        &kOne, static_cast<const float*>(s.weight), s.in_features,
                                        static_cast<const float*>(s.x), s.in_features, &kZero, static_cast<float*>(s.y),
                                        s.out_features));
        if (s.has_bias)
          MNV2_CHECK_CUDNN(cudnnAddTensor(h, &kOne, s.bias_desc.get(), s.bias, &kOne, s.y_desc.get(), s.y));
        break;
      }
    }
  }

  PrepareConfig config_;
  Arithmetic arith_;
  bool fused_ = true;  // the fused variant
  bool nhwc_ = false;  // channels-last activations and filters (fused variant only)
  CudnnOptions::Graph graph_mode_ = CudnnOptions::Graph::automatic;
  int device_ = 0;  // the first visible CUDA device
  Shape input_shape_;
  // Declared first so it is destroyed last: the handles and buffers below may still reference it.
  CudaStream stream_;
  CudnnHandle cudnn_;
  CublasHandle cublas_;
  DeviceBuffer weights_;      // every weight and bias
  DeviceBuffer activations_;  // the network input, every layer output, padded copies
  DeviceBuffer workspace_;    // shared by all convolutions: the largest any chosen algorithm needs
  PinnedBuffer pinned_input_;
  PinnedBuffer pinned_logits_;
  void* input_device_ = nullptr;
  TensorDescriptor input_desc_;        // the network input as stored on the device
  void* input_staging_ = nullptr;      // fp16: the float32 input before conversion
  TensorDescriptor input_float_desc_;  // fp16: its descriptor
  void* readback_ = nullptr;           // fp16: one layer output converted to float32 for download
  DeviceBuffer cublas_workspace_;
  std::vector<Step> steps_;
  std::vector<Unit> units_;  // the execution steps
  std::vector<ExecStep> exec_steps_;
  std::vector<Tensor> layer_outputs_;
  std::string description_;
  std::string cache_warning_;
  std::vector<const Layer*> layers_;  // the model's layers, during build() only
  PlanCache plan_cache_;
  bool plan_cache_dirty_ = false;
  gpu::Event tune_start_, tune_end_;
  std::chrono::steady_clock::time_point tune_begin_;
  gpu::Graph graph_;
  gpu::GraphExec graph_exec_;     // for un-instrumented runs
  GraphStepMap graph_steps_;      // graph_'s nodes -> steps, recorded at capture
  gpu::GraphExec observed_exec_;  // for per-step observers of graph replays (CUPTI), made under their watch
  uint64_t observed_for_ = 0;
  gpu::Graph compute_graph_;  // the steps alone (no upload, no download): device-resident runs
  gpu::GraphExec compute_exec_;
};

class CudnnBackend final : public Backend {
  static std::string tf32_why_not() {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty() || env.devices.front().cc_major >= 8) return {};
    const GpuDevice& d = env.devices.front();
    return "tf32 needs TF32 tensor cores (compute capability 8.0, Ampere, or newer); " + d.name +
           " is compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
  }

 public:
  std::string name() const override { return kBackendName; }

  std::string description() const override {
    std::string text =
        "NVIDIA cuDNN " + cudnn_version_string(cudnnGetVersion()) + " + cuBLAS " + cublas_version_string() +
        ", fused by default (graph-API conv + bias + ReLU6 + residual, autotuned, plan cache, CUDA graph; "
        "naive on request: one legacy call per layer), fp32 (FMA math, no TF32) by default; tf32 and "
        "fp16 on request";
    const CudaEnvironment& env = cuda_environment();
    if (!env.devices.empty()) text += " on " + env.devices.front().name;
    return text;
  }

  Availability availability() const override {
    const LibraryProbe& probe = library_probe();
    return {probe.ok, probe.reason};
  }

  std::optional<std::string> unsupported_reason(const Layer& layer) const override {
    if (auto r = malformed_reason(layer)) return r;
    if (layer.kind == LayerKind::Conv2d) return conv_unsupported_reason(layer);
    if (layer.kind == LayerKind::ReLU6 || layer.kind == LayerKind::ReLU) return clip_unsupported_reason(layer);
    return std::nullopt;
  }

  // tf32 needs TF32 tensor cores (Ampere, compute capability 8.0, and newer): before that cuDNN would silently
  // compute in fp32 and the run would be mislabelled.
  bool supports(Precision p) const override { return p != Precision::tf32 || tf32_why_not().empty(); }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    if (config.batch < 1 || config.height < 1 || config.width < 1)
      throw UsageError("cudnn: batch, height and width must be positive (got batch " + std::to_string(config.batch) +
                       ", " + std::to_string(config.height) + "x" + std::to_string(config.width) + ")");
    if (Availability a = availability(); !a.available) throw Error("cudnn: not available: " + a.reason);
    if (config.precision == Precision::tf32 && !tf32_why_not().empty())
      throw Error("cudnn: " + tf32_why_not() + " (fp32 and fp16 run here)");
    for (const Layer& layer : model.layers)
      if (auto reason = unsupported_reason(layer)) throw Error("cudnn: " + layer_label(layer) + ": " + *reason);
    return std::make_unique<CudnnPreparedNet>(model, config);
  }
};

}  // namespace
}  // namespace cudnn_backend

std::unique_ptr<Backend> make_cudnn_backend() { return std::make_unique<cudnn_backend::CudnnBackend>(); }

}  // namespace mnv2
