// The cuda backend's prepared network (cuda_net.h). prepare() is plan -> allocate -> lower -> capture: the planner
// decided the steps, kernels and tiles; the lower_*.cpp files turn each step into weights on the device and kernel
// launches; the core (engine/gpu/prepared_net.h) warms up, captures the CUDA graphs and runs. What is left here is
// this backend's: the network input and the logits' layouts, the PDL rule per kernel family, the layer outputs'
// conversion for download, and the 8-bit input path.
#include "backends/cuda/cuda_net.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/lowering.h"
#include "backends/layer_checks.h"  // layer_label
#include "gpu/check.h"
#include "gpu/device.h"  // device_name
#include "gpu/prepared_net.h"
#include "gpu/runtime.h"
#include "kernels/common.cuh"
#include "kernels/input_u8.cuh"
#include "kernels/layout.cuh"
#include "mnv2/error.h"

namespace mnv2::cuda_backend {
namespace {

using gpu::MemoryUse;
using gpu::PinnedBuffer;

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

// The kernel families whose kernels call pdl_wait() before touching activations (kernels/common.cuh); a step of any
// other kernel keeps a plain edge and so waits for the kernel before it to finish.
bool pdl_ready(CudaKernel kernel) {
  switch (kernel) {  // every family now: the switch stays so that a new one is a decision
    case CudaKernel::direct_conv:
    case CudaKernel::depthwise_conv:
    case CudaKernel::pointwise_gemm:
    case CudaKernel::pointwise_tc:
    case CudaKernel::expand_depthwise:
    case CudaKernel::fused_stem:
    case CudaKernel::fused_block:
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

class CudaPreparedNet final : public gpu::GpuPreparedNet {
 public:
  CudaPreparedNet(const Model& model, const PrepareConfig& config, CudaPlan plan, std::shared_ptr<const LabKernel> lab)
      : GpuPreparedNet(config, gpu::NetSettings{"cuda", gpu::graph_mode_of(config.cuda.graph), plan.pdl, true}),
        plan_(std::move(plan)),
        lab_(std::move(lab)) {
    build(model);
  }
  ~CudaPreparedNet() override {  // the 8-bit path's staging may still be in use
    if (u8_copy_stream_) MNV2_CHECK_LOG(cudaStreamSynchronize(u8_copy_stream_.get()));
    wait_idle();
  }

  // The backend's description and this plan's launch chain (kernels per run, PDL, split-K reduction).
  std::string description() const override {
    return backend_text(device()) + "; fusion " + describe_fusion(plan_) + "; " + describe_chain(plan_);
  }
  std::vector<ResolvedOption> resolved_options() const override {
    return {{"cuda-fusion", to_string(plan_.config.cuda.fusion), to_string(plan_.fusion), plan_.fusion_note}};
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
    PrepareConfig unfused = config();
    unfused.cuda.fusion = CudaOptions::Fusion::none;
    return unfused;
  }

  std::string u8_path() const override {
    return "gpu: two pinned staging buffers, each sub-batch uploaded on a copy stream while the previous one "
           "computes, converted and normalised on the GPU";
  }

  Tensor run_u8(const uint8_t* hwc, int64_t images, const InputNormaliser& n) override;

 private:
  // ---- the core's hooks ----------------------------------------------------------------------------------
  void enqueue_upload(cudaStream_t stream) override {
    MNV2_CHECK_CUDA(cudaMemcpyAsync(lw_->input.data, pinned_input(),
                                    static_cast<size_t>(lw_->input.shape.numel()) * sizeof(float),
                                    cudaMemcpyHostToDevice, stream));
  }
  void enqueue_step(int step, cudaStream_t stream) override {
    for (const Launch& launch : launches_[static_cast<size_t>(step)]) launch(stream);
  }
  void enqueue_tail(cudaStream_t stream) override {
    for (const Launch& launch : tail_) launch(stream);
  }
  void enqueue_download(cudaStream_t stream) override {
    copy_to_host(static_cast<float*>(pinned_logits()), logits_, logits_.data, stream);  // float32 always
  }
  void enqueue_layer_outputs(cudaStream_t stream, std::vector<Tensor>& outputs) override;
  // A kernel lab user's kernel does not call pdl_wait(): started early it would read its input before the kernel
  // that writes it has finished. Its step keeps a plain edge.
  bool may_start_early(int step) const override {
    const CudaStep& s = plan_.steps[static_cast<size_t>(step)];
    return pdl_ready(s.kernel) && !lab_runs(*lw_, s);
  }

  void build(const Model& model);
  void prepare_u8_path(const InputNormaliser& n);

  CudaPlan plan_;
  std::shared_ptr<const LabKernel> lab_;       // the kernel lab's user kernel, or null
  std::unique_ptr<Lowering> lw_;               // the values, weights and workspaces, in the core's device memory
  std::vector<std::vector<Launch>> launches_;  // per step, in order, all on the network's stream
  std::vector<Launch> tail_;                   // after the last step: logits to NCHW
  Value logits_;                               // what the run downloads: the last layer's output, NCHW
  float* download_scratch_ = nullptr;  // keep_layer_outputs: NHWC -> NCHW and half -> float32, made on first use

  // The 8-bit input path (run_u8), made on first use: two slots of staging buffers, a copy stream.
  struct U8Slot {
    PinnedBuffer host, logits;
    void* device = nullptr;
    gpu::Event uploaded, downloaded;
  };
  gpu::Stream u8_copy_stream_;
  std::array<U8Slot, 2> u8_slots_;
  float* u8_table_ = nullptr;
  InputNormaliser u8_normaliser_;
  bool u8_table_valid_ = false;
};

// Allocate and lower every step -> the logits' tail -> the core's warm-up and capture.
void CudaPreparedNet::build(const Model& model) {
  const PrepareConfig& c = config();
  std::vector<LayerStats> stats = analyse(model, c.batch, c.height, c.width);
  const Shape output_shape = stats.back().output;
  lw_ = std::make_unique<Lowering>(model, plan_, std::move(stats), stream(), device_memory());
  lw_->lab = lab_;
  std::vector<ExecStep> exec;
  for (const CudaStep& planned : plan_.steps) {
    ExecStep e{planned.name, planned.layers, planned.variant};
    // The kernel lab's user kernel: its steps say so in reports (the variant that actually ran).
    if (lab_runs(*lw_, planned)) e.variant = "lab:" + lab_->spec().name + " (" + lab_->kernel_name() + ")";
    std::vector<Launch> launches;
    try {
      lower_step(*lw_, planned, launches);
    } catch (const Error& err) {
      throw Error("cuda: " + layer_label(model.layers[static_cast<size_t>(planned.layers.front())]) + ": " +
                  err.what());
    }
    launches_.push_back(std::move(launches));
    exec.push_back(std::move(e));
  }
  if (plan_.input_nhwc_copy) {  // the first step transposes the NCHW input for the layers that read it NHWC
    const Shape& s = lw_->input.shape;
    const k::TransposeParams t{
        s.n, s.c, s.h * s.w, lw_->input.data, lw_->input_nhwc, k::DType::f32, lw_->input_nhwc_type};
    std::vector<Launch>& first = launches_.front();
    first.insert(first.begin(), [t](cudaStream_t st) { k::launch_transpose(t, st); });
  }

  // The logits leave in NCHW order: an NHWC map with more than one pixel is transposed first.
  const Value& last = lw_->values.back();
  if (last.data == nullptr) throw Error("cuda: the last layer's output is not materialised");
  logits_ = last;
  if (last.nhwc && last.shape.h * last.shape.w > 1 && last.shape.c > 1) {
    float* nchw = lw_->allocate(last.shape.numel(), MemoryUse::workspace);
    k::TransposeParams t{last.shape.n, last.shape.h * last.shape.w, last.shape.c, last.data, nchw};
    t.in_type = last.dtype;
    tail_.push_back([t](cudaStream_t s) { k::launch_transpose(t, s); });
    logits_ = Value{nchw, last.shape, false};
  } else if (last.dtype != k::DType::f32) {  // a half output that needs no transpose (fp16, 1x1 maps)
    float* converted = lw_->allocate(last.shape.numel(), MemoryUse::workspace);
    const k::ConvertParams cv{last.shape.numel(), last.data, converted, last.dtype, k::DType::f32};
    tail_.push_back([cv](cudaStream_t s) { k::launch_convert(cv, s); });
    logits_ = Value{converted, last.shape, last.nhwc};
  }
  finish_prepare(model, std::move(exec), output_shape);
}

// Every materialised layer to the host in NCHW float32 (NHWC maps transposed and half maps converted on the
// device first, into the scratch buffer).
void CudaPreparedNet::enqueue_layer_outputs(cudaStream_t stream, std::vector<Tensor>& outputs) {
  if (download_scratch_ == nullptr) {
    int64_t scratch_floats = 0;
    for (const Value& v : lw_->values)
      if (v.data != nullptr && (v.nhwc || v.dtype != k::DType::f32))
        scratch_floats = std::max(scratch_floats, v.shape.numel());
    if (scratch_floats > 0)
      download_scratch_ = static_cast<float*>(device_memory().allocate(
          MemoryUse::workspace, static_cast<size_t>(scratch_floats) * sizeof(float), "the layer outputs' download"));
  }
  for (size_t i = 0; i < lw_->values.size(); ++i) {
    const Value& v = lw_->values[i];
    Tensor& out = outputs[i];
    if (v.data == nullptr) {
      out = Tensor{};  // fused away: not materialised
      continue;
    }
    if (!(out.shape == v.shape) || out.empty()) out = Tensor(v.shape);
    const void* source = v.data;
    Value dense = v;  // what the copy reads: the value itself, or its float32 NCHW copy in the scratch
    float* scratch = download_scratch_;
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

// The 8-bit input path (PreparedNet::run_u8): sub-batch k's bytes go host -> pinned slot k % 2 (all cores) ->
// device slot on the copy stream, while the compute stream still runs sub-batch k - 1; the compute stream waits
// for the upload, converts the bytes into the network input (a table lookup, bit for bit the host's
// normalisation), runs the steps (the device-resident graph) and downloads the logits into the slot. Before a
// slot is reused (k + 2) its download is waited for, which orders every use of both of its buffers.
Tensor CudaPreparedNet::run_u8(const uint8_t* hwc, int64_t images, const InputNormaliser& n) {
  const int64_t batch = config().batch;
  const Shape& input_shape = lw_->input.shape;
  if (hwc == nullptr || images < 1 || images % batch != 0)
    throw UsageError("cuda: " + std::to_string(images) + " images are not a whole number of sub-batches of " +
                     std::to_string(batch) + " (the prepared batch)");
  if (input_shape.c != 3)
    throw UsageError("cuda: the 8-bit input path takes RGB images; this model's input has " +
                     std::to_string(input_shape.c) + " channels");
  MNV2_CHECK_CUDA(cudaSetDevice(device()));
  prepare_u8_path(n);
  const size_t bytes = static_cast<size_t>(input_shape.numel());  // one byte per input value
  const Shape& output_shape = logits_.shape;
  const int64_t per_sub = output_shape.numel();  // logits of one sub-batch
  Tensor out(Shape{images, output_shape.c, output_shape.h, output_shape.w});
  cudaStream_t compute = stream(), copy = u8_copy_stream_.get();
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
      gpu::parallel_copy(slot.host.get(), hwc + static_cast<size_t>(k) * bytes, bytes);
      MNV2_CHECK_CUDA(cudaMemcpyAsync(slot.device, slot.host.get(), bytes, cudaMemcpyHostToDevice, copy));
      MNV2_CHECK_CUDA(cudaEventRecord(slot.uploaded.get(), copy));
      MNV2_CHECK_CUDA(cudaStreamWaitEvent(compute, slot.uploaded.get(), 0));
      k::NormaliseU8Params p;
      p.images = batch;
      p.pixels = input_shape.h * input_shape.w;
      p.input = static_cast<const uint8_t*>(slot.device);
      p.table = u8_table_;
      for (size_t c = 0; c < 3; ++c) p.source[c] = u8_normaliser_.source[c];
      p.output = lw_->input.f32();
      k::launch_normalise_u8(p, compute);
      enqueue_compute(compute);
      copy_to_host(static_cast<float*>(slot.logits.get()), logits_, logits_.data, compute);
      MNV2_CHECK_CUDA(cudaEventRecord(slot.downloaded.get(), compute));
    }
    for (int64_t k = std::max<int64_t>(0, subs - 2); k < subs; ++k) finish(k);
  } catch (const Error& e) {
    throw Error(std::string("cuda: the 8-bit input path failed: ") + e.what());
  }
  return out;
}

// The 8-bit path's buffers and copy stream on first use (device memory counted as workspace); the normaliser's
// table uploaded when it changes.
void CudaPreparedNet::prepare_u8_path(const InputNormaliser& n) {
  const size_t bytes = static_cast<size_t>(lw_->input.shape.numel());
  constexpr size_t kTableBytes = 3 * 256 * sizeof(float);
  if (!u8_copy_stream_) {
    gpu::DeviceMemory& memory = device_memory();
    u8_table_ = static_cast<float*>(memory.allocate(MemoryUse::workspace, kTableBytes, "the 8-bit input's table"));
    for (U8Slot& slot : u8_slots_) {
      slot.host = memory.allocate_pinned(bytes, "the 8-bit input's staging");
      slot.device = memory.allocate(MemoryUse::workspace, bytes, "the 8-bit input's staging");
      slot.logits = memory.allocate_pinned(static_cast<size_t>(logits_.shape.numel()) * sizeof(float), "the logits");
      slot.uploaded = gpu::make_event(cudaEventDisableTiming);
      slot.downloaded = gpu::make_event(cudaEventDisableTiming);
    }
    u8_copy_stream_ = gpu::make_stream();
    u8_table_valid_ = false;
  }
  if (!u8_table_valid_ || !(n == u8_normaliser_)) {
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream()));  // no conversion may still read the old table
    MNV2_CHECK_CUDA(cudaMemcpy(u8_table_, n.value.data(), kTableBytes, cudaMemcpyHostToDevice));
    u8_normaliser_ = n;
    u8_table_valid_ = true;
  }
}

}  // namespace

std::string backend_text(int device) {
  std::string text =
      "custom CUDA kernels (fast: NHWC, fused bias/ReLU6/residual epilogues; baseline on request: NCHW, im2col + "
      "tiled GEMM, separate passes; CUDA graph for whole runs), fp32 FFMA (no TF32) by default; tf32 and fp16 on "
      "request in the fast variant (tensor-core GEMMs, fp16 half NHWC storage)";
  if (const std::string name = gpu::device_name(device); !name.empty()) text += " on " + name;
  return text;
}

std::unique_ptr<PreparedNet> make_prepared_net(const Model& model, const PrepareConfig& config, CudaPlan plan,
                                               std::shared_ptr<const LabKernel> lab) {
  return std::make_unique<CudaPreparedNet>(model, config, std::move(plan), std::move(lab));
}

}  // namespace mnv2::cuda_backend
