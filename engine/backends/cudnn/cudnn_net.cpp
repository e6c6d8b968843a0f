// The cudnn backend's prepared network (cudnn_net.h): prepare() is plan -> arenas -> weights -> descriptors ->
// tuned graphs and algorithms -> the core's warm-up and capture. The host side stays float32 NCHW in every mode:
// the input is converted on the device after upload, the logits and kept layer outputs before download.
#include "backends/cudnn/cudnn_net.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cudnn/autotune.h"
#include "backends/cudnn/cudnn_lowering.h"
#include "backends/cudnn/descriptors.h"
#include "backends/layer_checks.h"  // layer_label
#include "gpu/check.h"
#include "gpu/device.h"  // device_name
#include "gpu/prepared_net.h"
#include "gpu/runtime.h"
#include "mnv2/error.h"

namespace mnv2::cudnn_backend {
namespace {

using gpu::MemoryUse;

// Activation buffers are filled with this byte before Find measures: every float reads 0.0115, a non-zero, finite
// value, so no algorithm is timed on zeros or on leftover NaNs.
constexpr int kFindFillByte = 0x3C;
// cuBLAS's workspace (the Linear layer's GEMM), set explicitly so graph capture allocates nothing.
constexpr size_t kCublasWorkspace = size_t{4} << 20;

const float kOne = 1.0f;
const float kZero = 0.0f;

std::string cublas_version_string() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
    return "?";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

void* at_offset(void* arena, size_t offset) { return static_cast<char*>(arena) + offset; }

class CudnnPreparedNet final : public gpu::GpuPreparedNet {
 public:
  CudnnPreparedNet(const Model& model, CudnnPlan plan, const GpuProperties& gpu)
      : GpuPreparedNet(plan.config, gpu::NetSettings{"cudnn", gpu::graph_mode_of(plan.config.cudnn.graph)}),
        plan_(std::move(plan)) {
    build(model, gpu);
  }
  // The handles and cuBLAS's workspace below may still be in use by a run that threw.
  ~CudnnPreparedNet() override { wait_idle(); }

  std::string description() const override { return description_; }
  // The fused variant keeps a group's intermediate tensors virtual: diffs take every layer from the naive one.
  std::optional<PrepareConfig> every_layer_config() const override {
    if (!plan_.fused) return std::nullopt;
    PrepareConfig naive = config();
    naive.cudnn.variant = CudnnOptions::Variant::naive;
    return naive;
  }

 private:
  // ---- the core's hooks ----------------------------------------------------------------------------------
  void enqueue_upload(cudaStream_t stream) override {
    const size_t bytes = static_cast<size_t>(plan_.input_shape.numel()) * sizeof(float);
    if (plan_.converted()) {
      MNV2_CHECK_CUDA(cudaMemcpyAsync(input_staging_, pinned_input(), bytes, cudaMemcpyHostToDevice, stream));
      MNV2_CHECK_CUDNN(cudnnTransformTensor(ctx_.cudnn, &kOne, input_float_desc_.get(), input_staging_, &kZero,
                                            input_desc_.get(), input_device_));
    } else {
      MNV2_CHECK_CUDA(cudaMemcpyAsync(input_device_, pinned_input(), bytes, cudaMemcpyHostToDevice, stream));
    }
  }
  void enqueue_step(int step, cudaStream_t /*stream: ctx_'s handles are bound to it*/) override {
    execute_unit(units_[static_cast<size_t>(step)], ops_, ctx_);
  }
  void enqueue_download(cudaStream_t stream) override {
    const LayerOp& last = ops_.back();
    const size_t bytes = static_cast<size_t>(last.plan->out_shape.numel()) * sizeof(float);
    MNV2_CHECK_CUDA(cudaMemcpyAsync(pinned_logits(), as_float(last), bytes, cudaMemcpyDeviceToHost, stream));
  }
  void enqueue_layer_outputs(cudaStream_t stream, std::vector<Tensor>& outputs) override {
    for (size_t i = 0; i < ops_.size(); ++i) {
      Tensor& out = outputs[i];
      const LayerOp& op = ops_[i];
      if (!op.materialised) {
        out = Tensor{};  // fused away: a virtual tensor of an operation graph
        continue;
      }
      if (!(out.shape == op.plan->out_shape) || out.empty()) out = Tensor(op.plan->out_shape);
      // Same stream: each conversion into the readback buffer waits for the previous download.
      MNV2_CHECK_CUDA(cudaMemcpyAsync(out.data.data(), as_float(op), out.data.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream));
    }
  }

  // A layer's output as float32 NCHW on the device: itself, or converted (half, NHWC) into the readback buffer,
  // which holds one layer output at a time.
  const void* as_float(const LayerOp& op) const {
    if (!plan_.converted()) return op.y;
    const TensorDescriptor from = ctx_.descriptor(op.plan->out_shape);
    const TensorDescriptor to = packed_descriptor(op.plan->out_shape, CUDNN_DATA_FLOAT);
    MNV2_CHECK_CUDNN(cudnnTransformTensor(ctx_.cudnn, &kOne, from.get(), op.y, &kZero, to.get(), readback_));
    return readback_;
  }

  void build(const Model& model, const GpuProperties& gpu);
  void upload_weights(const Model& model);

  CudnnPlan plan_;
  CudnnHandle cudnn_;
  gpu::CublasHandle cublas_;
  CudnnContext ctx_;
  void* weights_ = nullptr;      // every weight and bias (an arena in the core's device memory)
  void* activations_ = nullptr;  // the network input, every layer output, padded copies, staging and readback
  void* input_device_ = nullptr;
  TensorDescriptor input_desc_;         // the network input as stored on the device
  void* input_staging_ = nullptr;       // converted: the float32 input before conversion
  TensorDescriptor input_float_desc_;   // its descriptor
  void* readback_ = nullptr;            // converted: one layer output as float32 NCHW for download
  gpu::DeviceBuffer cublas_workspace_;  // not counted in memory(), as before the core
  std::vector<LayerOp> ops_;            // per topology layer
  std::vector<Unit> units_;             // the execution steps
  std::string description_;
};

void CudnnPreparedNet::build(const Model& model, const GpuProperties& gpu) {
  const PrepareConfig& config = plan_.config;
  cudaStream_t stream = this->stream();
  cudnn_ = make_cudnn_handle();
  cublas_ = gpu::make_cublas_handle();
  const Arithmetic arith = arithmetic_for(config.precision);
  MNV2_CHECK_CUDNN(cudnnSetStream(cudnn_.get(), stream));
  MNV2_CHECK_CUBLAS(cublasSetStream(cublas_.get(), stream));
  MNV2_CHECK_CUBLAS(cublasSetMathMode(cublas_.get(), arith.blas_math));
  ctx_ = CudnnContext{cudnn_.get(), cublas_.get(), stream, arith, plan_.nhwc, plan_.element_bytes, config.batch};

  // An absurd batch or input size is refused from the plan, with the figures, before anything is allocated. If an
  // allocation fails anyway, everything allocated so far is freed by its owner as the exception leaves the
  // constructor, and the context stays usable: a smaller run can follow in the same process.
  gpu::DeviceMemory& memory = device_memory();
  memory.require(
      plan_.weight_bytes + plan_.activation_bytes,
      "the weights (" + gpu::gib(plan_.weight_bytes) + ") and activations (" + gpu::gib(plan_.activation_bytes) + ")");
  weights_ = memory.allocate(MemoryUse::weights, plan_.weight_bytes, "the weights");
  activations_ = memory.allocate(MemoryUse::activations, plan_.activation_bytes, "the activations");
  MNV2_CHECK_CUDA(cudaMemsetAsync(activations_, kFindFillByte, plan_.activation_bytes, stream));
  input_device_ = at_offset(activations_, plan_.input_offset);
  input_desc_ = ctx_.descriptor(plan_.input_shape);
  if (plan_.converted()) {
    input_staging_ = at_offset(activations_, plan_.staging_offset);
    readback_ = at_offset(activations_, plan_.readback_offset);
    input_float_desc_ = packed_descriptor(plan_.input_shape, CUDNN_DATA_FLOAT);
  }

  const size_t n = plan_.layers.size();
  ops_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    LayerOp& op = ops_[i];
    const LayerPlan& lp = plan_.layers[i];
    op.plan = &lp;
    op.label = layer_label(model.layers[i]);
    op.y = at_offset(activations_, lp.out_offset);
    if (lp.pad_copy) op.padded = at_offset(activations_, lp.pad_offset);
  }
  upload_weights(model);
  for (size_t i = 0; i < n; ++i) {
    LayerOp& op = ops_[i];
    const LayerPlan& lp = plan_.layers[i];
    op.x = lp.in_layer == kNetworkInput ? input_device_ : ops_[static_cast<size_t>(lp.in_layer)].y;
    if (lp.kind == LayerKind::ResidualAdd)
      op.x2 = lp.in_layer2 == kNetworkInput ? input_device_ : ops_[static_cast<size_t>(lp.in_layer2)].y;
    try {
      configure(op, model.layers[i], plan_, ctx_);
    } catch (const Error& e) {
      throw Error("cudnn: " + op.label + ": " + e.what());
    }
  }

  // The steps: every layer's legacy call in the naive variant and outside groups; the fused variant's groups tuned.
  for (const LayerGroup& g : plan_.groups) {
    Unit u;
    u.group = g;
    if (g.conv < 0) u.legacy = g.layers;
    units_.push_back(std::move(u));
  }
  size_t fused_workspace = 0;
  std::string cache_warning;
  if (plan_.fused) {
    Autotuner tuner(ctx_, plan_, model, ops_, gpu, memory);
    fused_workspace = tuner.tune(units_);
    cache_warning = tuner.cache_warning();
  }
  const size_t workspace_bytes = choose_conv_algorithms(ops_, ctx_, device(), fused_workspace, memory);
  ctx_.workspace = memory.allocate(MemoryUse::workspace, workspace_bytes, "the convolution workspace");
  for (Unit& u : units_)
    if (u.fused) u.fused->pack = make_variant_pack(u.fused->uids, u.fused->pointers, ctx_.workspace);
  // cuBLAS gets its own workspace, so nothing is allocated while a run is captured into a CUDA graph.
  cublas_workspace_ = memory.allocate_scratch(kCublasWorkspace, "cuBLAS's workspace");
  MNV2_CHECK_CUBLAS(cublasSetWorkspace(cublas_.get(), cublas_workspace_.get(), kCublasWorkspace));

  // The border of a padded buffer is zero for good; runs only ever write its interior.
  for (const LayerOp& op : ops_)
    if (op.plan->pad_copy)
      MNV2_CHECK_CUDA(cudaMemsetAsync(
          op.padded, 0, static_cast<size_t>(op.plan->padded_shape.numel()) * plan_.element_bytes, stream));

  std::vector<ExecStep> exec;
  int graphs = 0;
  for (const Unit& u : units_) {
    ExecStep e;
    for (int layer : u.group.layers)
      e.name += (e.name.empty() ? "" : " + ") + std::string(to_string(plan_.layers[static_cast<size_t>(layer)].kind)) +
                " " + std::to_string(layer);
    e.layers = u.group.layers;
    if (!u.fused) {
      for (int layer : u.legacy)
        e.variant +=
            (e.variant.empty() ? "" : "; ") +
            variant_name(ops_[static_cast<size_t>(layer)], model.layers[static_cast<size_t>(layer)], config.precision);
      if (!u.variant.empty()) e.variant = u.variant + "; " + e.variant;
    } else {
      e.variant = u.variant;
      ++graphs;
    }
    exec.push_back(std::move(e));
  }
  const std::string device_name = gpu::device_name(device());
  description_ = libraries_text() + ", " + to_string(config.cudnn.variant) +
                 (plan_.fused ? " (" + std::to_string(graphs) + " operation graphs)" : std::string(" (legacy calls)")) +
                 (plan_.nhwc ? ", NHWC" : ", NCHW") + ", " + to_string(config.precision) + ", CUDA graph " +
                 to_string(config.cudnn.graph) + (device_name.empty() ? std::string() : " on " + device_name) +
                 (cache_warning.empty() ? std::string() : "; plan cache " + cache_warning);
  finish_prepare(model, std::move(exec), ops_.back().plan->out_shape);
}

// Pageable sources: each copy returns once the bytes are staged; fp16 converts each on the device through one
// float32 buffer (same stream, so each conversion finishes before the next upload). NHWC: filters [K, C/g, R, S]
// become channels-last [K, R, S, C/g], and a Linear layer over a map of more than one pixel reads it in NHWC order.
void CudnnPreparedNet::upload_weights(const Model& model) {
  cudaStream_t stream = this->stream();
  const gpu::DeviceBuffer staging =
      plan_.half ? device_memory().allocate_scratch(static_cast<size_t>(plan_.largest_weight) * sizeof(float),
                                                    "the weight conversion")
                 : gpu::DeviceBuffer();
  auto upload = [&](void* to, const std::vector<float>& from) {
    const size_t bytes = from.size() * sizeof(float);
    if (!plan_.half) {
      MNV2_CHECK_CUDA(cudaMemcpyAsync(to, from.data(), bytes, cudaMemcpyHostToDevice, stream));
      return;
    }
    MNV2_CHECK_CUDA(cudaMemcpyAsync(staging.get(), from.data(), bytes, cudaMemcpyHostToDevice, stream));
    const Shape flat{1, static_cast<int64_t>(from.size()), 1, 1};
    MNV2_CHECK_CUDNN(cudnnTransformTensor(ctx_.cudnn, &kOne, packed_descriptor(flat, CUDNN_DATA_FLOAT).get(),
                                          staging.get(), &kZero, packed_descriptor(flat, CUDNN_DATA_HALF).get(), to));
  };
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Layer& layer = model.layers[i];
    const LayerPlan& lp = plan_.layers[i];
    LayerOp& op = ops_[i];
    if (layer.kind != LayerKind::Conv2d && layer.kind != LayerKind::Linear) continue;
    void* w = at_offset(weights_, lp.weight_offset);
    if (!plan_.nhwc || (layer.kind == LayerKind::Linear && lp.in_shape.h * lp.in_shape.w == 1))
      upload(w, layer.weight);
    else if (layer.kind == LayerKind::Conv2d)
      upload(w, channels_last_filter(layer));
    else
      upload(w, channels_last_linear(layer, lp.in_shape));
    op.weight = w;
    if (lp.has_bias) {
      void* b = at_offset(weights_, lp.bias_offset);
      upload(b, layer.bias);
      op.bias = b;
    }
  }
  // The staging buffer goes with this scope: the conversions reading it must be done.
  if (plan_.half) MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace

std::string libraries_text() {
  return "NVIDIA cuDNN " + cudnn_version_string(cudnnGetVersion()) + " + cuBLAS " + cublas_version_string();
}

std::unique_ptr<PreparedNet> make_prepared_net(const Model& model, CudnnPlan plan, const GpuProperties& gpu) {
  return std::make_unique<CudnnPreparedNet>(model, std::move(plan), gpu);
}

}  // namespace mnv2::cudnn_backend
