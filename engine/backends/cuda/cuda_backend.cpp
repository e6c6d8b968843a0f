// The cuda backend: the network on this project's own kernels (kernels/). Precision: fp32 is strict float32
// (FFMA, no TF32); the fast variant also runs tf32 (float32 storage, the GEMMs of the 1x1 convolutions and the
// Linear layer on tensor cores with TF32 operands) and fp16 (half NHWC activations and GEMM weights, float32
// bias and accumulation everywhere, tensor-core GEMMs; the Linear layer's logits stay float32). Depthwise and
// direct convolutions stay FFMA in float32 arithmetic in every mode (they are memory- and latency-bound).
// Two variants, chosen by PrepareConfig::cuda.variant when a network is prepared:
//  - fast (default): NHWC activations; the stem reads the NCHW input itself; every convolution carries its
//    bias, its clip (ReLU6) and, for 1x1 projections, the residual add in its epilogue, so one step covers
//    several topology layers ("Conv2d 14 + ResidualAdd 15"); depthwise 3x3 has its own kernel.
//  - baseline: NCHW, one step per layer: im2col + the tiled GEMM for every convolution, separate clip, add,
//    pool and Linear kernels. The reference point of the optimisation story.
// Un-instrumented runs replay one CUDA graph of the whole network (PrepareConfig::cuda.graph: auto|on|off). The
// graph's nodes are tied to steps at capture time, so a CUPTI observer can time steps inside replays too
// (RunOptions::graph_replay); cudaEvent per-step timing is refused there.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "backends/layer_checks.h"  // malformed_reason, layer_label: the checks every backend shares
#include "backends/nvtx_range.h"
#include "gpu/check.h"    // MNV2_CHECK_CUDA / MNV2_CHECK_LOG
#include "gpu/runtime.h"  // stream, device and pinned buffers, graphs
#include "kernels/common.cuh"
#include "kernels/depthwise_conv.cuh"
#include "kernels/direct_conv.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/expand_depthwise.cuh"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tc.cuh"
#include "kernels/global_avg_pool.cuh"
#include "kernels/im2col.cuh"
#include "kernels/layout.cuh"
#include "kernels/pointwise_conv.cuh"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"

namespace mnv2 {
namespace cuda_backend {
namespace {

using gpu::DeviceBuffer;
using gpu::PinnedBuffer;
using CudaStream = gpu::Stream;
using CudaGraph = gpu::Graph;
using CudaGraphExec = gpu::GraphExec;
namespace k = kernels;

constexpr const char* kBackendName = "cuda";
// The baseline's im2col columns for one launch stay under this many floats (1 GiB); larger batches are
// unfolded a chunk of images at a time.
constexpr int64_t kMaxColumnFloats = int64_t{1} << 28;
// Activation buffers start filled with this byte: every float reads NaN, so an element no kernel wrote
// shows up at once in a diff instead of passing as a stale or zero value.
constexpr int kPoisonByte = 0xFF;
// The GEMM's grid.z limit: the baseline's image chunks times groups stay within it.
constexpr int kMaxGemmBatch = 65535;

using Variant = CudaOptions::Variant;
using GraphMode = CudaOptions::Graph;
using FuseMode = CudaOptions::Fusion;

// Below this many input channels the expansion does too little arithmetic per byte to hide its expanded
// map's round trip through device memory (block1..6 of MobileNetV2: 16..32 channels); below this many
// pixels (batch x map) the two steps are launch- and latency-bound (14x14 and 7x7 maps at small batches).
constexpr int kFuseMaxMemoryBoundChannels = 32;
constexpr int64_t kFuseMaxLatencyBoundPixels = 1024;

bool worth_fusing_expand_dw(int in_channels, int64_t pixels) {
  return in_channels <= kFuseMaxMemoryBoundChannels || pixels <= kFuseMaxLatencyBoundPixels;
}

// CudaOptions::gemm_tile forces one GEMM tile ("128x64", ...) for tuning experiments; empty: the cost model.
// The FFMA GEMM (fp32) and the tensor-core GEMM (tf32, fp16) have their own tile sets: a name neither knows is
// a usage error, one only the other knows leaves this GEMM to the cost model.
std::optional<k::GemmTile> forced_gemm_tile(const std::string& v) {
  if (v.empty()) return std::nullopt;
  k::GemmTile tile{};
  if (k::parse_gemm_tile(v, &tile)) return tile;
  k::TcTile tc{};
  if (k::parse_tc_tile(v, &tc)) return std::nullopt;
  throw UsageError("cuda: GEMM tile must be one of 128x128, 128x64, 64x64, 128x32, 32x32, got '" + v + "'");
}

std::optional<k::TcTile> forced_tc_tile(const std::string& v) {
  k::TcTile tile{};
  if (k::parse_tc_tile(v, &tile)) return tile;
  return std::nullopt;
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

bool is_clip(const Layer& l) { return l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU; }

k::Clip clip_of(const Layer& l) { return k::Clip{true, l.clip_min, l.clip_max}; }

std::string describe_clip(const k::Clip& c) {
  return c.enabled ? " +clip[" + format_number(c.lo) + "," + format_number(c.hi) + "]" : std::string();
}

// Whether this machine can run the backend: a CUDA device, code in this binary it runs (machine code, or PTX
// the driver compiles), and which architecture's features that code was compiled with.
struct Probe {
  bool ok = false;
  std::string reason;
  int sms = 0;
  k::DeviceCaps caps;        // shared memory, occupancy and bandwidth figures the tile choosers use
  int code_arch = 0;         // e.g. 75 for compute_75 PTX JIT-compiled on an H200 (cudaFuncAttributes::ptxVersion)
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
      p.caps = k::device_caps(d.index);
    } catch (const Error& e) {
      p.reason = e.what();
      return p;
    }
    p.ok = true;
    p.sms = d.multiprocessors;
    p.code_arch = image.ptx_version;
    // TF32 tensor cores (wmma precision::tf32) exist from Ampere on, and only in code compiled for compute_80
    // or newer: a compute_75 build running on a Hopper GPU has the instructions in hardware but not in its code.
    if (d.cc_major < 8)
      p.tf32_why_not = "tf32 needs TF32 tensor cores (compute capability 8.0, Ampere, or newer); " + gpu + " has none";
    else if (p.code_arch < 80)
      p.tf32_why_not = "tf32 needs kernels compiled for compute_80 or newer; on " + gpu + " this build runs compute_" +
                       std::to_string(p.code_arch) + " code (" + d.code + ")";
    return p;
  }();
  return result;
}

int checked_int(int64_t v, const std::string& what) {
  if (v < 0 || v > 0x7fffffff) throw Error(what + " (" + std::to_string(v) + ") exceeds the kernels' 32-bit range");
  return static_cast<int>(v);
}

// A layer's output on the device (or the network input). Fused-away layers have none (data == nullptr).
struct Value {
  void* data = nullptr;
  Shape shape;                     // logical NCHW shape
  bool nhwc = false;               // storage order: [n, h, w, c] instead of [n, c, h, w]
  int64_t image_stride = 0;        // elements between images; 0: shape.per_image() (dense). Only a padded Linear
                                   // output (its features rounded up for 16-byte accesses) differs.
  k::DType dtype = k::DType::f32;  // element type: f16 for fp16 activations
  int64_t stride() const { return image_stride > 0 ? image_stride : shape.per_image(); }
  float* f32() const { return static_cast<float*>(data); }
};

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

// Host memcpy over all cores: the batch's trip from the caller's (pageable) tensor into the pinned upload
// buffer was 20 ms of the 32.6 ms host time at batch 256 with one thread (run 1, H200 machine).
void parallel_copy(float* dst, const float* src, size_t count) {
  constexpr size_t kChunk = size_t{1} << 20;  // floats per task (4 MiB)
  if (count <= kChunk) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  const auto chunks = static_cast<int64_t>((count + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunk;
    std::memcpy(dst + begin, src + begin, std::min(kChunk, count - begin) * sizeof(float));
  }
}

using Launch = std::function<void(cudaStream_t)>;

// Ties the nodes of a graph under capture to the step that enqueued them: at each step's end, the nodes the
// capture gained since the last look are that step's (the upload before the first step and the download
// after the last belong to none).
class CaptureRecorder final : public StepObserver {
 public:
  void step_begin(int, void* stream) override {
    map.sequence.resize(map.sequence.size() + new_nodes(stream).size(), -1);
  }
  void step_end(int step, void* stream) override {
    for (cudaGraphNode_t node : new_nodes(stream)) {
      map.nodes.emplace_back(static_cast<void*>(node), step);
      map.sequence.push_back(step);
    }
  }
  // After the capture: the nodes added after the last step (the logits download).
  void finish(cudaGraph_t graph) { map.sequence.resize(map.sequence.size() + new_nodes(graph).size(), -1); }
  GraphStepMap map;

 private:
  std::vector<cudaGraphNode_t> new_nodes(void* stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    MNV2_CHECK_CUDA(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr, &graph));
    if (status != cudaStreamCaptureStatusActive || graph == nullptr)
      throw Error("cuda: the stream is not capturing while the graph's steps are recorded");
    return new_nodes(graph);
  }
  // Nodes appear in the graph in capture order; those not seen before are the latest.
  std::vector<cudaGraphNode_t> new_nodes(cudaGraph_t graph) {
    size_t count = 0;
    MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> all(count);
    if (count > 0) MNV2_CHECK_CUDA(cudaGraphGetNodes(graph, all.data(), &count));
    all.resize(count);
    std::vector<cudaGraphNode_t> fresh;
    for (cudaGraphNode_t node : all)
      if (seen_.insert(node).second) fresh.push_back(node);
    return fresh;
  }
  std::unordered_set<cudaGraphNode_t> seen_;
};

// One execution step: the kernels that compute one or several (fused) topology layers.
struct Step {
  ExecStep exec;
  std::string label;             // "layer 5 'block1.dw' (Conv2d)", the first covered layer, for errors
  std::vector<Launch> launches;  // in order, all on the network's stream
};

class CudaPreparedNet final : public PreparedNet {
 public:
  CudaPreparedNet(const Model& model, const PrepareConfig& config, int sms)
      : config_(config),
        act_(config.precision == Precision::fp16 ? k::DType::f16 : k::DType::f32),
        variant_(config.cuda.variant),
        graph_mode_(config.cuda.graph),
        fuse_mode_(config.cuda.fusion),
        sms_(sms),
        forced_tile_(forced_gemm_tile(config.cuda.gemm_tile)),
        forced_tc_tile_(forced_tc_tile(config.cuda.gemm_tile)) {
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

  MemoryReport memory() const override {
    MemoryReport m;
    m.weight_bytes = weight_bytes_;
    m.activation_bytes = activation_bytes_;
    m.workspace_bytes = workspace_bytes_ + static_cast<int64_t>(download_scratch_.bytes());
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
    const bool replay_for_steps = times_steps && (options.graph_replay || graph_mode_ == GraphMode::on);
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
    parallel_copy(static_cast<float*>(pinned_input_.get()), input.data.data(), input.data.size());

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

 private:
  // ---- building ------------------------------------------------------------------------------------------

  void* allocate_bytes(int64_t bytes, int64_t* counter) {
    DeviceBuffer buffer(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    *counter += static_cast<int64_t>(buffer.bytes());
    void* p = buffer.get();
    buffers_.push_back(std::move(buffer));
    return p;
  }
  float* allocate(int64_t floats, int64_t* counter) {
    return static_cast<float*>(allocate_bytes(floats * static_cast<int64_t>(sizeof(float)), counter));
  }

  // An activation of the mode's storage type (half in fp16), or of `dtype`; poisoned (NaN in both types).
  void* new_activation(const Shape& shape, k::DType dtype) {
    const int64_t bytes = shape.numel() * k::dtype_bytes(dtype);
    void* p = allocate_bytes(bytes, &activation_bytes_);
    MNV2_CHECK_CUDA(cudaMemsetAsync(p, kPoisonByte, static_cast<size_t>(bytes), stream_.get()));
    return p;
  }
  void* new_activation(const Shape& shape) { return new_activation(shape, act_); }

  const float* upload(const std::vector<float>& host) {
    float* p = allocate(static_cast<int64_t>(host.size()), &weight_bytes_);
    // Pageable source: the call returns once the bytes are staged; prepare() synchronises before returning.
    MNV2_CHECK_CUDA(
        cudaMemcpyAsync(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_.get()));
    return p;
  }

  // GEMM weights in the mode's operand type: half in fp16 (rounded to nearest on the host), else float32.
  const void* upload_gemm_weights(const std::vector<float>& host) {
    if (act_ != k::DType::f16) return upload(host);
    const std::vector<uint16_t> bits = k::to_half_bits(host);
    void* p = allocate_bytes(static_cast<int64_t>(bits.size() * sizeof(uint16_t)), &weight_bytes_);
    // A pageable source is staged before the call returns, so the temporary may go.
    MNV2_CHECK_CUDA(
        cudaMemcpyAsync(p, bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice, stream_.get()));
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
    return p;
  }

  bool reduced() const { return config_.precision != Precision::fp32; }

  // The tensor-core GEMM of the reduced modes: tile and split by the cost model (the tile forced where
  // CudaOptions::gemm_tile names one of its tiles); split GEMMs share the split-K workspace, sized for the largest.
  k::TcGemmVariant gemm_tc_variant(const k::TcGemmParams& p) {
    const k::TcGemmVariant v =
        k::choose_gemm_tc_variant(p, probe().caps, forced_tc_tile_ ? &*forced_tc_tile_ : nullptr, /*allow_split=*/true);
    gemm_workspace_floats_ = std::max(gemm_workspace_floats_, k::gemm_tc_workspace_floats(p, v));
    return v;
  }

  // What a convolution step that stays on FFMA says in a reduced mode.
  std::string ffma_note() const { return reduced() ? " (fp32 FFMA)" : std::string(); }

  // Tile and split for one GEMM; split-K for single GEMMs, which then share one workspace (the steps run
  // one after another on one stream), sized here for the largest.
  k::GemmVariant gemm_variant(const k::GemmParams& p) {
    const k::GemmVariant v = k::choose_gemm_variant(p, sms_, p.batch == 1, forced_tile_ ? &*forced_tile_ : nullptr);
    gemm_workspace_floats_ = std::max(gemm_workspace_floats_, k::gemm_workspace_floats(p, v));
    return v;
  }

  void build(const Model& model) {
    const size_t n = model.layers.size();
    if (n == 0) throw Error("cuda: the model has no layers");
    stats_ = analyse(model, config_.batch, config_.height, config_.width);
    if (stats_.size() != n)
      throw Error("cuda: analyse() returned a shape for " + std::to_string(stats_.size()) + " of " + std::to_string(n) +
                  " layers");
    input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
    output_shape_ = stats_.back().output;
    for (size_t i = 0; i < n; ++i)
      for (int j : model.layers[i].inputs)
        if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
          throw Error("cuda: " + layer_label(model.layers[i]) + " reads layer " + std::to_string(j) +
                      ", which does not come before it");

    MNV2_CHECK_CUDA(cudaSetDevice(device_));
    stream_ = gpu::make_stream();
    input_ = Value{new_activation(input_shape_, k::DType::f32), input_shape_, false};
    values_.assign(n, Value{});
    readers_.assign(n, 0);
    for (const Layer& l : model.layers)
      for (int j : l.inputs)
        if (j >= 0) ++readers_[static_cast<size_t>(j)];

    if (variant_ == Variant::fast) {
      build_fast(model);
    } else {
      build_baseline(model);
    }
    if (workspace_floats_ > 0) workspace_ = allocate(workspace_floats_, &workspace_bytes_);
    if (gemm_workspace_floats_ > 0) gemm_workspace_ = allocate(gemm_workspace_floats_, &workspace_bytes_);
    // Launch lambdas read workspace_ and gemm_workspace_ through `this` when they run: allocated last.

    // The logits leave in NCHW order: an NHWC map with more than one pixel is transposed first.
    const Value& last = values_.back();
    if (last.data == nullptr) throw Error("cuda: the last layer's output is not materialised");
    logits_ = last;
    if (last.nhwc && last.shape.h * last.shape.w > 1 && last.shape.c > 1) {
      float* nchw = allocate(last.shape.numel(), &workspace_bytes_);
      k::TransposeParams t{last.shape.n, last.shape.h * last.shape.w, last.shape.c, last.data, nchw};
      t.in_type = last.dtype;
      tail_.push_back([t](cudaStream_t s) { k::launch_transpose(t, s); });
      logits_ = Value{nchw, last.shape, false};
    } else if (last.dtype != k::DType::f32) {  // a half output that needs no transpose (fp16, 1x1 maps)
      float* converted = allocate(last.shape.numel(), &workspace_bytes_);
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
    if (graph_mode_ != GraphMode::off) capture_graph();
  }

  // Fast path: NHWC everywhere except the network input, fused epilogues.
  void build_fast(const Model& model) {
    const int n = static_cast<int>(model.layers.size());
    // Clip and add layers read NHWC; if one reads the network input itself, the first step transposes it
    // (into the activation type). In fp16 the pool and the Linear layer read that half copy too: their GEMM
    // and kernels take the activation type only.
    bool input_nhwc_needed = false;
    for (const Layer& l : model.layers) {
      const bool reads_input = std::find(l.inputs.begin(), l.inputs.end(), kNetworkInput) != l.inputs.end();
      const bool typed_reader =
          act_ != k::DType::f32 && (l.kind == LayerKind::GlobalAveragePool || l.kind == LayerKind::Linear);
      if (reads_input && (is_clip(l) || l.kind == LayerKind::ResidualAdd || typed_reader)) input_nhwc_needed = true;
    }
    std::string input_note;
    if (input_nhwc_needed) {
      input_nhwc_ = new_activation(input_shape_);
      input_note = act_ == k::DType::f16 ? "input nchw->nhwc half transpose; " : "input nchw->nhwc transpose; ";
    }

    for (int i = 0; i < n;) {
      const Layer& layer = model.layers[static_cast<size_t>(i)];
      Step step;
      step.label = layer_label(layer);
      int last = i;
      try {
        switch (layer.kind) {
          case LayerKind::Conv2d:
            // The fused expansion + depthwise kernel is float32 FFMA only: the reduced modes keep two steps.
            last = fuse_mode_ == FuseMode::expand_dw && !reduced() ? plan_expand_depthwise(model, i, step) : -1;
            if (last < 0) last = plan_fast_conv(model, i, step);
            if (fuse_mode_ == FuseMode::expand_dw && reduced() && step.exec.variant.rfind("gemm", 0) == 0)
              step.exec.variant +=
                  std::string(" (fusion expand_dw: fp32 only, not fused in ") + to_string(config_.precision) + ")";
            break;
          case LayerKind::ReLU6:
          case LayerKind::ReLU:
            plan_clip(layer, i, step, true);
            break;
          case LayerKind::ResidualAdd:
            plan_add(layer, i, step, true);
            break;
          case LayerKind::GlobalAveragePool:
            plan_pool(layer, i, step, true);
            break;
          case LayerKind::Linear:
            plan_linear(layer, i, step, true);
            break;
        }
      } catch (const Error& e) {
        throw Error("cuda: " + step.label + ": " + e.what());
      }
      for (int l = i; l <= last; ++l) {
        step.exec.layers.push_back(l);
        const Layer& covered = model.layers[static_cast<size_t>(l)];
        step.exec.name += (l == i ? "" : " + ") + std::string(to_string(covered.kind)) + " " + std::to_string(l);
      }
      step.exec.variant = "fast: " + step.exec.variant;
      steps_.push_back(std::move(step));
      i = last + 1;
    }
    if (input_nhwc_needed) {
      const k::TransposeParams t{input_shape_.n,
                                 input_shape_.c,
                                 input_shape_.h * input_shape_.w,
                                 input_.data,
                                 input_nhwc_,
                                 k::DType::f32,
                                 act_};
      Step& first = steps_.front();
      first.launches.insert(first.launches.begin(), [t](cudaStream_t s) { k::launch_transpose(t, s); });
      first.exec.variant = "fast: " + input_note + first.exec.variant.substr(6);
    }
  }

  // The value a fast-path kernel reads for input j in NHWC, of the activation type (the transposed copy for
  // the network input).
  const void* nhwc_input(int j) const {
    if (j == kNetworkInput) return input_nhwc_;
    return values_[static_cast<size_t>(j)].data;
  }

  const Shape& shape_of(int j) const {
    return j == kNetworkInput ? input_shape_ : stats_[static_cast<size_t>(j)].output;
  }

  // Plans expansion 1x1 (i) + clip + depthwise 3x3 + clip as one kernel when the pattern is there, each
  // intermediate has no other reader and fusing pays (worth_fusing_expand_dw); returns the last covered
  // layer, or -1 (nothing planned) otherwise.
  int plan_expand_depthwise(const Model& model, int i, Step& step) {
    const int n = static_cast<int>(model.layers.size());
    auto at = [&](int j) -> const Layer& { return model.layers[static_cast<size_t>(j)]; };
    auto only_reader = [&](int j, int of) {
      return at(j).inputs == std::vector<int>{of} && readers_[static_cast<size_t>(of)] == 1;
    };
    if (i + 2 >= n) return -1;
    const Layer& expand = at(i);
    const ConvParams& ec = expand.conv;
    const int in = expand.inputs.at(0);
    if (in == kNetworkInput || !ec.pointwise() || ec.stride_h != 1 || ec.stride_w != 1 || ec.pad_top != 0 ||
        ec.pad_left != 0 || ec.pad_bottom != 0 || ec.pad_right != 0)
      return -1;
    if (!is_clip(at(i + 1)) || !only_reader(i + 1, i)) return -1;
    const Layer& dw = at(i + 2);
    const ConvParams& dc = dw.conv;
    if (dw.kind != LayerKind::Conv2d || !only_reader(i + 2, i + 1) || !dc.depthwise() || dc.kernel_h != 3 ||
        dc.kernel_w != 3 || dc.dilation_h != 1 || dc.dilation_w != 1 || dc.in_channels != ec.out_channels)
      return -1;
    const bool dw_clip = i + 3 < n && is_clip(at(i + 3)) && only_reader(i + 3, i + 2);
    const int last = dw_clip ? i + 3 : i + 2;
    const Shape& xs = shape_of(in);
    const Shape& ys = stats_[static_cast<size_t>(i + 2)].output;
    if (xs.c != ec.in_channels) return -1;

    k::ExpandDepthwiseParams p;
    p.batch = config_.batch;
    p.in_channels = ec.in_channels;
    p.expanded = ec.out_channels;
    p.in_h = checked_int(xs.h, "input height");
    p.in_w = checked_int(xs.w, "input width");
    p.out_h = checked_int(ys.h, "output height");
    p.out_w = checked_int(ys.w, "output width");
    p.stride_h = dc.stride_h;
    p.stride_w = dc.stride_w;
    p.pad_top = dc.pad_top;
    p.pad_left = dc.pad_left;
    std::string why_not;
    const k::ExpandDepthwiseVariant v =
        k::choose_expand_depthwise_variant(p, &why_not, probe().caps.smem_per_block_optin);
    if (!why_not.empty() || !worth_fusing_expand_dw(p.in_channels, xs.n * xs.h * xs.w)) return -1;

    std::vector<float> we(expand.weight.size());  // [k][expanded]
    for (int o = 0; o < ec.out_channels; ++o)
      for (int ci = 0; ci < ec.in_channels; ++ci)
        we[static_cast<size_t>(ci) * ec.out_channels + o] = expand.weight[static_cast<size_t>(o) * ec.in_channels + ci];
    std::vector<float> wd(static_cast<size_t>(dc.in_channels) * 9);  // [3][3][expanded]
    for (int ch = 0; ch < dc.in_channels; ++ch)
      for (int t = 0; t < 9; ++t) wd[static_cast<size_t>(t) * dc.in_channels + ch] = dw.weight[ch * 9 + t];
    auto* y = static_cast<float*>(new_activation(ys));
    values_[static_cast<size_t>(last)] = Value{y, ys, true};
    p.input = static_cast<const float*>(nhwc_input(in));
    p.expand_weight = upload(we);
    p.expand_bias = expand.bias.empty() ? nullptr : upload(expand.bias);
    p.expand_clip = clip_of(at(i + 1));
    p.dw_weight = upload(wd);
    p.dw_bias = dw.bias.empty() ? nullptr : upload(dw.bias);
    if (dw_clip) p.dw_clip = clip_of(at(i + 3));
    p.output = y;
    step.launches.push_back([p, v](cudaStream_t s) { k::launch_expand_depthwise(p, v, s); });
    char recompute[64];
    std::snprintf(recompute, sizeof recompute, "; expansion x%.2f for tile halos",
                  k::expand_depthwise_recompute_factor(p, v));
    step.exec.variant = k::to_string(v) + " (expanded map in shared memory only" + recompute + ")" +
                        (p.expand_bias ? " +bias" : "") + describe_clip(p.expand_clip) + (p.dw_bias ? " +bias" : "") +
                        describe_clip(p.dw_clip);
    return last;
  }

  // Plans convolution i and the layers fused into it; returns the last covered layer.
  int plan_fast_conv(const Model& model, int i, Step& step) {
    const int n = static_cast<int>(model.layers.size());
    const Layer& layer = model.layers[static_cast<size_t>(i)];
    const ConvParams& c = layer.conv;
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    if (xs.c != c.in_channels)
      throw Error("input has " + std::to_string(xs.c) + " channels, expected " + std::to_string(c.in_channels));

    enum class Kind { direct_nchw, direct_nhwc, depthwise, pointwise } kind;
    if (in == kNetworkInput) {
      kind = Kind::direct_nchw;  // reads the NCHW network input itself: no separate layout pass
    } else if (c.depthwise() && c.kernel_h == 3 && c.kernel_w == 3 && c.dilation_h == 1 && c.dilation_w == 1) {
      kind = Kind::depthwise;
    } else if (c.pointwise() && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 && c.pad_left == 0 &&
               c.pad_bottom == 0 && c.pad_right == 0) {
      kind = Kind::pointwise;
    } else {
      kind = Kind::direct_nhwc;
    }

    // Epilogue fusion: the clip right after, when it is the convolution's only reader; then, for the GEMM,
    // the residual add right after, when it is the only reader and its other operand is already computed.
    int last = i;
    k::Clip clip;
    if (i + 1 < n && is_clip(model.layers[static_cast<size_t>(i + 1)]) &&
        model.layers[static_cast<size_t>(i + 1)].inputs == std::vector<int>{i} &&
        readers_[static_cast<size_t>(i)] == 1) {
      clip = clip_of(model.layers[static_cast<size_t>(i + 1)]);
      last = i + 1;
    }
    const void* residual = nullptr;
    if (kind == Kind::pointwise && last + 1 < n && readers_[static_cast<size_t>(last)] == 1) {
      const Layer& add = model.layers[static_cast<size_t>(last + 1)];
      if (add.kind == LayerKind::ResidualAdd && add.inputs.size() == 2 &&
          (add.inputs[0] == last) != (add.inputs[1] == last)) {
        const int other = add.inputs[0] == last ? add.inputs[1] : add.inputs[0];
        const Value& r = other >= 0 ? values_[static_cast<size_t>(other)] : input_;
        if (other >= 0 && r.data != nullptr && r.nhwc && r.dtype == act_ && r.stride() == ys.per_image() &&
            shape_of(other) == ys) {
          residual = values_[static_cast<size_t>(other)].data;
          last = last + 1;
        }
      }
    }

    void* y = new_activation(ys);
    values_[static_cast<size_t>(last)] = Value{y, ys, true, 0, act_};
    const float* bias = layer.bias.empty() ? nullptr : upload(layer.bias);
    const std::string extras = std::string(bias ? " +bias" : "") + describe_clip(clip) + (residual ? " +residual" : "");

    switch (kind) {
      case Kind::depthwise: {
        std::vector<float> w(static_cast<size_t>(c.in_channels) * 9);
        for (int ch = 0; ch < c.in_channels; ++ch)
          for (int t = 0; t < 9; ++t) w[static_cast<size_t>(t) * c.in_channels + ch] = layer.weight[ch * 9 + t];
        k::DepthwiseConvParams p;
        p.batch = config_.batch;
        p.channels = c.in_channels;
        p.in_h = checked_int(xs.h, "input height");
        p.in_w = checked_int(xs.w, "input width");
        p.out_h = checked_int(ys.h, "output height");
        p.out_w = checked_int(ys.w, "output width");
        p.stride_h = c.stride_h;
        p.stride_w = c.stride_w;
        p.pad_top = c.pad_top;
        p.pad_left = c.pad_left;
        p.dtype = act_;
        p.input = nhwc_input(in);
        p.weight = upload(w);
        p.bias = bias;
        p.clip = clip;
        p.output = y;
        const k::DepthwiseVariant v = k::choose_depthwise_variant(p, sms_);
        step.launches.push_back([p, v](cudaStream_t s) { k::launch_depthwise_conv3x3(p, v, s); });
        step.exec.variant = k::to_string(v) + extras + ffma_note();
        break;
      }
      case Kind::pointwise: {
        if (reduced()) {
          plan_pointwise_tc(layer, ys, nhwc_input(in), bias, clip, residual, y, step);
          step.exec.variant += extras;
          break;
        }
        std::vector<float> w(layer.weight.size());
        for (int o = 0; o < c.out_channels; ++o)
          for (int ci = 0; ci < c.in_channels; ++ci)
            w[static_cast<size_t>(ci) * c.out_channels + o] = layer.weight[static_cast<size_t>(o) * c.in_channels + ci];
        k::PointwiseConvParams p;
        p.pixels = ys.n * ys.h * ys.w;
        p.in_channels = c.in_channels;
        p.out_channels = c.out_channels;
        p.input = static_cast<const float*>(nhwc_input(in));
        p.weight = upload(w);
        p.bias = bias;
        p.clip = clip;
        p.residual = static_cast<const float*>(residual);
        p.output = static_cast<float*>(y);
        const k::GemmVariant v = gemm_variant(k::pointwise_gemm_params(p));
        step.launches.push_back([this, p, v](cudaStream_t s) {
          k::PointwiseConvParams q = p;
          q.workspace = gemm_workspace_;
          k::launch_pointwise_conv(q, v, s);
        });
        step.exec.variant = k::to_string(v) + extras;
        break;
      }
      case Kind::direct_nchw:
      case Kind::direct_nhwc: {
        const int cin_g = c.in_channels / c.groups;
        std::vector<float> w(layer.weight.size());
        for (int o = 0; o < c.out_channels; ++o)
          for (int ci = 0; ci < cin_g; ++ci)
            for (int kh = 0; kh < c.kernel_h; ++kh)
              for (int kw = 0; kw < c.kernel_w; ++kw)
                w[((static_cast<size_t>(kh) * c.kernel_w + kw) * cin_g + ci) * c.out_channels + o] =
                    layer.weight[((static_cast<size_t>(o) * cin_g + ci) * c.kernel_h + kh) * c.kernel_w + kw];
        k::DirectConvParams p;
        p.batch = config_.batch;
        p.in_channels = c.in_channels;
        p.in_h = checked_int(xs.h, "input height");
        p.in_w = checked_int(xs.w, "input width");
        p.out_channels = c.out_channels;
        p.out_h = checked_int(ys.h, "output height");
        p.out_w = checked_int(ys.w, "output width");
        p.kernel_h = c.kernel_h;
        p.kernel_w = c.kernel_w;
        p.stride_h = c.stride_h;
        p.stride_w = c.stride_w;
        p.pad_top = c.pad_top;
        p.pad_left = c.pad_left;
        p.dilation_h = c.dilation_h;
        p.dilation_w = c.dilation_w;
        p.groups = c.groups;
        p.input_layout = kind == Kind::direct_nchw ? k::Layout::nchw : k::Layout::nhwc;
        p.dtype = act_;
        p.input = kind == Kind::direct_nchw ? input_.data : nhwc_input(in);
        p.weight = upload(w);
        p.bias = bias;
        p.clip = clip;
        p.output = y;
        const k::DirectConvVariant v = k::choose_direct_conv_variant(p, sms_);
        step.launches.push_back([p, v](cudaStream_t s) { k::launch_direct_conv(p, v, s); });
        step.exec.variant = k::to_string(v, p.input_layout, p.dtype) + extras + ffma_note();
        break;
      }
    }
    return last;
  }

  // A pointwise convolution of a reduced mode: the tensor-core GEMM of the batch's pixels [pixels, in] by the
  // weights [in, out] (TF32 operands on float32 storage, or half), bias, clip and residual in its epilogue.
  void plan_pointwise_tc(const Layer& layer, const Shape& ys, const void* x, const float* bias, const k::Clip& clip,
                         const void* residual, void* y, Step& step) {
    const ConvParams& c = layer.conv;
    std::vector<float> w(layer.weight.size());
    for (int o = 0; o < c.out_channels; ++o)
      for (int ci = 0; ci < c.in_channels; ++ci)
        w[static_cast<size_t>(ci) * c.out_channels + o] = layer.weight[static_cast<size_t>(o) * c.in_channels + ci];
    k::TcGemmParams g;
    g.m = checked_int(ys.n * ys.h * ys.w, "output pixels");
    g.n = c.out_channels;
    g.k = c.in_channels;
    g.in_type = g.out_type = act_;
    g.a = x;
    g.lda = c.in_channels;
    g.b = upload_gemm_weights(w);
    g.ldb = c.out_channels;
    g.c = y;
    g.ldc = c.out_channels;
    g.bias = bias;
    g.clip = clip;
    g.residual = residual;
    g.ldr = c.out_channels;
    const k::TcGemmVariant v = gemm_tc_variant(g);
    step.launches.push_back([this, g, v](cudaStream_t s) {
      k::TcGemmParams q = g;
      q.workspace = gemm_workspace_;  // allocated after planning
      k::launch_gemm_tc(q, v, s);
    });
    step.exec.variant = k::to_string(v, g.in_type);
  }

  // A separate clip pass (the baseline's, or the fast path's when it cannot be fused).
  void plan_clip(const Layer& layer, int i, Step& step, bool fast) {
    const int in = layer.inputs.at(0);
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    if (!(shape_of(in) == ys)) throw Error("output " + ys.str() + " differs from input " + shape_of(in).str());
    void* y = new_activation(ys);
    values_[static_cast<size_t>(i)] = Value{y, ys, fast, 0, act_};
    k::ClipParams p;
    p.count = ys.numel();
    p.dtype = act_;
    p.input = fast ? nhwc_input(in) : (in == kNetworkInput ? input_.data : values_[static_cast<size_t>(in)].data);
    p.output = y;
    p.clip = clip_of(layer);
    step.launches.push_back([p](cudaStream_t s) { k::launch_clip(p, s); });
    step.exec.variant = std::string(act_ == k::DType::f16 ? "clip half[" : "clip[") + format_number(p.clip.lo) + "," +
                        format_number(p.clip.hi) + "]";
  }

  void plan_add(const Layer& layer, int i, Step& step, bool fast) {
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    const int a = layer.inputs.at(0), b = layer.inputs.at(1);
    if (!(shape_of(a) == ys) || !(shape_of(b) == ys))
      throw Error("adds " + shape_of(a).str() + " and " + shape_of(b).str() + " into " + ys.str());
    void* y = new_activation(ys);
    values_[static_cast<size_t>(i)] = Value{y, ys, fast, 0, act_};
    auto pointer = [&](int j) -> const void* {
      if (fast) return nhwc_input(j);
      return j == kNetworkInput ? input_.data : values_[static_cast<size_t>(j)].data;
    };
    k::AddParams p;
    p.count = ys.numel();
    p.dtype = act_;
    p.a = pointer(a);
    p.b = pointer(b);
    p.output = y;
    step.launches.push_back([p](cudaStream_t s) { k::launch_add(p, s); });
    step.exec.variant = act_ == k::DType::f16 ? "add half" : "add";
  }

  void plan_pool(const Layer& layer, int i, Step& step, bool fast) {
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    if (!(ys == Shape{xs.n, xs.c, 1, 1})) throw Error("pools " + xs.str() + " into " + ys.str());
    void* y = new_activation(ys);
    values_[static_cast<size_t>(i)] = Value{y, ys, fast, 0, act_};
    k::GlobalAvgPoolParams p;
    p.batch = checked_int(xs.n, "batch");
    p.channels = checked_int(xs.c, "channels");
    p.plane = xs.h * xs.w;
    p.dtype = act_;
    // The fast path reads NHWC maps, except the network input, which stays NCHW float32 (in fp16 its half NHWC
    // copy is read instead).
    const bool half_input_copy = fast && in == kNetworkInput && act_ != k::DType::f32;
    p.layout = fast && (in != kNetworkInput || half_input_copy) ? k::Layout::nhwc : k::Layout::nchw;
    p.input = half_input_copy ? input_nhwc_ : in == kNetworkInput ? input_.data : values_[static_cast<size_t>(in)].data;
    p.output = y;
    step.launches.push_back([p](cudaStream_t s) { k::launch_global_avg_pool(p, s); });
    step.exec.variant = std::string("avgpool ") + (p.layout == k::Layout::nhwc ? "nhwc" : "nchw") +
                        (act_ == k::DType::f16 ? " half (fp32 sum)" : "");
  }

  // Linear: logits[batch, out] = x[batch, in] * W^T + b as the GEMM with B = W^T [in, out]. An NHWC input
  // with a map larger than 1x1 flattens in (h, w, c) order, so W's columns are permuted to match.
  void plan_linear(const Layer& layer, int i, Step& step, bool fast) {
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    const int K = layer.in_features, O = layer.out_features;
    if (xs.per_image() != K) throw Error("input " + xs.str() + " does not hold " + std::to_string(K) + " features");
    if (!(ys == Shape{config_.batch, O, 1, 1}))
      throw Error("output " + ys.str() + " is not " + std::to_string(O) + " features");
    // In fp16 a Linear over the network input reads its half NHWC copy (the GEMM takes one operand type).
    const bool half_input_copy = fast && in == kNetworkInput && act_ != k::DType::f32;
    const bool permute = fast && (in != kNetworkInput || half_input_copy) && xs.h * xs.w > 1;
    const int64_t plane = xs.h * xs.w;
    // The network's last layer (nothing reads it but the download) gets its features padded to a multiple of
    // 16 bytes of operand (4 floats, 8 halves) with zero weights, so its GEMM takes 16-byte accesses (1001
    // classes: 1004 or 1008); the download skips the pad.
    const int align = fast ? 16 / k::dtype_bytes(act_) : 4;
    const int padded =
        readers_[static_cast<size_t>(i)] == 0 && O % align != 0 && K % align == 0 ? (O + align - 1) / align * align : O;
    std::vector<float> w(static_cast<size_t>(K) * padded, 0.0f);
    for (int o = 0; o < O; ++o)
      for (int kk = 0; kk < K; ++kk) {
        // kk is the NCHW feature index c * plane + pixel; NHWC storage holds it at pixel * C + c.
        const int64_t row = permute ? (kk % plane) * xs.c + kk / plane : kk;
        w[static_cast<size_t>(row) * padded + o] = layer.weight[static_cast<size_t>(o) * K + kk];
      }
    // The logits (a Linear layer nothing else reads) are float32 in every mode; a Linear layer that other
    // layers read stores the activation type.
    const k::DType out_type = readers_[static_cast<size_t>(i)] == 0 || !fast ? k::DType::f32 : act_;
    Value out{nullptr, ys, fast, padded, out_type};
    out.data = new_activation(Shape{config_.batch, padded, 1, 1}, out_type);
    values_[static_cast<size_t>(i)] = out;
    std::vector<float> bias;
    if (!layer.bias.empty()) {
      bias.assign(static_cast<size_t>(padded), 0.0f);
      std::copy(layer.bias.begin(), layer.bias.end(), bias.begin());
    }
    const std::string notes =
        std::string(bias.empty() ? "" : " +bias") + (permute ? " (weights permuted to nhwc)" : "") +
        (padded != O ? " (" + std::to_string(O) + " features padded to " + std::to_string(padded) + ")"
                     : std::string());
    if (fast && reduced()) {
      k::TcGemmParams g;
      g.m = config_.batch;
      g.n = padded;
      g.k = K;
      g.in_type = act_;
      g.out_type = out_type;
      g.a = half_input_copy ? input_nhwc_ : in == kNetworkInput ? input_.data : values_[static_cast<size_t>(in)].data;
      g.lda = K;
      g.b = upload_gemm_weights(w);
      g.ldb = padded;
      g.c = out.data;
      g.ldc = padded;
      g.bias = bias.empty() ? nullptr : upload(bias);
      const k::TcGemmVariant v = gemm_tc_variant(g);
      step.launches.push_back([this, g, v](cudaStream_t s) {
        k::TcGemmParams q = g;
        q.workspace = gemm_workspace_;
        k::launch_gemm_tc(q, v, s);
      });
      step.exec.variant = k::to_string(v, g.in_type) + notes + (out_type == k::DType::f32 ? " -> fp32 logits" : "");
      return;
    }
    k::GemmParams p;
    p.m = config_.batch;
    p.n = padded;
    p.k = K;
    p.a = in == kNetworkInput ? input_.f32() : values_[static_cast<size_t>(in)].f32();
    p.lda = K;
    p.b = upload(w);
    p.ldb = padded;
    p.c = out.f32();
    p.ldc = padded;
    if (!bias.empty()) {
      p.bias_mode = k::BiasMode::per_col;
      p.bias = upload(bias);
    }
    const k::GemmVariant v = gemm_variant(p);
    step.launches.push_back([this, p, v](cudaStream_t s) {
      k::GemmParams q = p;
      q.workspace = gemm_workspace_;
      k::launch_gemm(q, v, s);
    });
    step.exec.variant = k::to_string(v) + notes;
  }

  // Baseline: NCHW, one step per layer, im2col + GEMM convolutions, separate elementwise passes.
  void build_baseline(const Model& model) {
    const int n = static_cast<int>(model.layers.size());
    for (int i = 0; i < n; ++i) {
      const Layer& layer = model.layers[static_cast<size_t>(i)];
      Step step;
      step.label = layer_label(layer);
      try {
        switch (layer.kind) {
          case LayerKind::Conv2d:
            plan_baseline_conv(layer, i, step);
            break;
          case LayerKind::ReLU6:
          case LayerKind::ReLU:
            plan_clip(layer, i, step, false);
            break;
          case LayerKind::ResidualAdd:
            plan_add(layer, i, step, false);
            break;
          case LayerKind::GlobalAveragePool:
            plan_pool(layer, i, step, false);
            break;
          case LayerKind::Linear:
            plan_linear(layer, i, step, false);
            break;
        }
      } catch (const Error& e) {
        throw Error("cuda: " + step.label + ": " + e.what());
      }
      step.exec.name = std::string(to_string(layer.kind)) + " " + std::to_string(i);
      step.exec.layers = {i};
      step.exec.variant = "baseline: " + step.exec.variant;
      steps_.push_back(std::move(step));
    }
  }

  void plan_baseline_conv(const Layer& layer, int i, Step& step) {
    const ConvParams& c = layer.conv;
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = stats_[static_cast<size_t>(i)].output;
    if (xs.c != c.in_channels)
      throw Error("input has " + std::to_string(xs.c) + " channels, expected " + std::to_string(c.in_channels));
    const float* x = in == kNetworkInput ? input_.f32() : values_[static_cast<size_t>(in)].f32();
    auto* y = static_cast<float*>(new_activation(ys));
    values_[static_cast<size_t>(i)] = Value{y, ys, false};

    const int groups = c.groups;
    const int cin_g = c.in_channels / groups, cout_g = c.out_channels / groups;
    const int64_t taps = static_cast<int64_t>(c.kernel_h) * c.kernel_w;
    const int64_t kg = cin_g * taps;                // GEMM depth per group
    const int64_t pixels = ys.h * ys.w;             // GEMM columns
    const int64_t rows_all = c.in_channels * taps;  // im2col rows of one image (all groups)
    const bool identity = c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 &&
                          c.pad_left == 0 && ys.h == xs.h && ys.w == xs.w;
    int chunk = config_.batch;
    if (!identity) chunk = static_cast<int>(std::clamp<int64_t>(kMaxColumnFloats / (rows_all * pixels), 1, chunk));
    chunk = std::max(1, std::min(chunk, kMaxGemmBatch / groups));
    if (groups > kMaxGemmBatch) throw Error("more than 65535 groups");
    if (!identity) workspace_floats_ = std::max(workspace_floats_, chunk * rows_all * pixels);

    k::GemmParams g;
    g.m = cout_g;
    g.n = checked_int(pixels, "output pixels");
    g.k = checked_int(kg, "GEMM depth");
    g.a = upload(layer.weight);  // [out, in/groups * kh * kw] row-major: A as it is
    g.lda = kg;
    g.a_inner_stride = static_cast<int64_t>(cout_g) * kg;
    g.ldb = pixels;
    g.b_inner_stride = kg * pixels;
    g.b_outer_stride = rows_all * pixels;
    g.ldc = pixels;
    g.c_inner_stride = cout_g * pixels;
    g.c_outer_stride = c.out_channels * pixels;
    g.inner = groups;
    if (!layer.bias.empty()) {
      g.bias_mode = k::BiasMode::per_row;
      g.bias = upload(layer.bias);
      g.bias_inner_stride = cout_g;
    }
    // The variant is chosen for a full chunk, with stand-in aligned pointers (the real ones are fixed only
    // when the workspace exists): the columns buffer is a cudaMalloc, so 256-byte aligned.
    g.b = identity ? x : g.a;
    g.c = y;
    g.batch = chunk * groups;
    const k::GemmVariant v = gemm_variant(g);

    k::Im2colParams col;
    col.channels = c.in_channels;
    col.in_h = checked_int(xs.h, "input height");
    col.in_w = checked_int(xs.w, "input width");
    col.out_h = checked_int(ys.h, "output height");
    col.out_w = checked_int(ys.w, "output width");
    col.kernel_h = c.kernel_h;
    col.kernel_w = c.kernel_w;
    col.stride_h = c.stride_h;
    col.stride_w = c.stride_w;
    col.pad_top = c.pad_top;
    col.pad_left = c.pad_left;
    col.dilation_h = c.dilation_h;
    col.dilation_w = c.dilation_w;
    const int batch = config_.batch;
    const int64_t x_image = xs.per_image(), y_image = ys.per_image();
    step.launches.push_back([this, g, v, col, identity, chunk, batch, x, y, x_image, y_image](cudaStream_t s) {
      for (int first = 0; first < batch; first += chunk) {
        const int images = std::min(chunk, batch - first);
        k::GemmParams p = g;
        p.batch = images * p.inner;
        p.workspace = gemm_workspace_;
        p.c = y + first * y_image;
        if (identity) {
          p.b = x + first * x_image;
        } else {
          k::Im2colParams q = col;
          q.images = images;
          q.input = x + first * x_image;
          q.columns = workspace_;
          k::launch_im2col(q, s);
          p.b = workspace_;
        }
        k::launch_gemm(p, v, s);
      }
    });
    step.exec.variant = (identity ? std::string("gemm (1x1, no im2col) ") : std::string("im2col + ")) +
                        k::to_string(v) + (g.bias ? " +bias" : "") +
                        (chunk < batch ? " (" + std::to_string(chunk) + " images per launch)" : std::string());
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
    MNV2_CHECK_CUDA(cudaMemcpyAsync(input_.data, pinned_input_.get(),
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
  // then costs one launch. A second graph holds the steps alone (no copies) for device-resident runs.
  void capture_graph() {
    CaptureRecorder recorder;
    graph_ = capture([&](cudaStream_t stream) { enqueue_network(stream, &recorder); });
    recorder.finish(graph_.get());
    graph_steps_ = std::move(recorder.map);
    graph_exec_ = instantiate(graph_.get());
    compute_graph_ = capture([&](cudaStream_t stream) { enqueue_steps(stream, nullptr); });
    compute_exec_ = instantiate(compute_graph_.get());
  }

  // What `enqueue` puts on the stream, as a graph; the capture ends on every path.
  CudaGraph capture(const std::function<void(cudaStream_t)>& enqueue) {
    cudaStream_t stream = stream_.get();
    MNV2_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue(stream);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      MNV2_CHECK_LOG(cudaStreamEndCapture(stream, &broken));
      if (broken != nullptr) MNV2_CHECK_LOG(cudaGraphDestroy(broken));
      throw;
    }
    cudaGraph_t graph = nullptr;
    MNV2_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    return CudaGraph(graph);
  }

  CudaGraphExec instantiate(cudaGraph_t graph) {
    cudaGraphExec_t exec = nullptr;
    MNV2_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CudaGraphExec owned(exec);
    MNV2_CHECK_CUDA(cudaGraphUpload(owned.get(), stream_.get()));
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream_.get()));
    return owned;
  }

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
    for (const Value& v : values_)
      if (v.data != nullptr && (v.nhwc || v.dtype != k::DType::f32))
        scratch_floats = std::max(scratch_floats, v.shape.numel());
    if (static_cast<int64_t>(download_scratch_.bytes()) < scratch_floats * static_cast<int64_t>(sizeof(float)))
      download_scratch_ = DeviceBuffer(static_cast<size_t>(scratch_floats) * sizeof(float));
    for (size_t i = 0; i < values_.size(); ++i) {
      const Value& v = values_[i];
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
  k::DType act_;  // element type of the activations: f16 in fp16, else f32 (the network input is always f32)
  Variant variant_;
  GraphMode graph_mode_;
  FuseMode fuse_mode_;
  int sms_ = 0;
  std::optional<k::GemmTile> forced_tile_;
  std::optional<k::TcTile> forced_tc_tile_;
  int device_ = 0;  // the first visible CUDA device
  std::vector<LayerStats> stats_;
  Shape input_shape_, output_shape_;
  std::vector<int> readers_;  // per layer: how many layers read its output

  // Declared first among the GPU objects so it is destroyed last: the buffers may still be in use on it.
  CudaStream stream_;
  std::vector<DeviceBuffer> buffers_;  // every weight, activation and workspace allocation
  int64_t weight_bytes_ = 0, activation_bytes_ = 0, workspace_bytes_ = 0;
  int64_t workspace_floats_ = 0;
  float* workspace_ = nullptr;  // the baseline's im2col columns
  int64_t gemm_workspace_floats_ = 0;
  float* gemm_workspace_ = nullptr;  // split-K partial sums, shared by every split GEMM
  void* input_nhwc_ = nullptr;       // the network input transposed (in the activation type), when a layer
                                     // other than a convolution reads it directly
  Value input_;                      // the network input, NCHW
  std::vector<Value> values_;        // per layer; data == nullptr where fused away
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
  DeviceBuffer download_scratch_;  // keep_layer_outputs: NHWC -> NCHW and half -> float32, allocated on first use
  std::vector<ExecStep> exec_steps_;
  std::vector<Tensor> layer_outputs_;
};

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return kBackendName; }

  std::string description() const override {
    std::string text =
        "custom CUDA kernels (fast: NHWC, fused bias/ReLU6/residual epilogues; baseline on request: NCHW, im2col + "
        "tiled GEMM, separate passes; CUDA graph for whole runs), fp32 FFMA (no TF32) by default; tf32 and fp16 on "
        "request in the fast variant (tensor-core GEMMs, fp16 half NHWC storage)";
    const CudaEnvironment& env = cuda_environment();
    if (!env.devices.empty()) text += " on " + env.devices.front().name;
    return text;
  }

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

  // Every mode in the fast variant (the default; the baseline, the optimisation story's reference point, is fp32
  // only and prepare() refuses it in another mode); tf32 only where the GPU and the code that runs on it have
  // TF32 tensor cores (probe()).
  bool supports(Precision p) const override {
    if (p == Precision::fp32) return true;
    return p != Precision::tf32 || !probe().ok || probe().tf32_why_not.empty();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    if (config.precision != Precision::fp32 && config.cuda.variant == Variant::baseline)
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
    forced_gemm_tile(config.cuda.gemm_tile);  // a bad tile fails here, as a usage error, before anything is allocated
    return std::make_unique<CudaPreparedNet>(model, config, probe().sms);
  }
};

}  // namespace
}  // namespace cuda_backend

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda_backend::CudaBackend>(); }

}  // namespace mnv2
