// The cuda backend's fusion planner (mnv2/cuda_plan.h): topology + options + GPU properties -> execution steps
// as plain data. No CUDA here: it is part of the core engine library, so it runs (and is tested) without a
// GPU; the tile choosers it calls are the kernels' own host-only cost models (kernels/tiles.h).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cuda/block_split_rules.h"
#include "backends/cuda/gemm_tile_rules.h"
#include "backends/cuda/shapes.h"
#include "backends/layer_checks.h"  // layer_label
#include "kernels/tiles.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/error.h"

namespace mnv2 {

const char* to_string(CudaKernel k) {
  switch (k) {
    case CudaKernel::direct_conv:
      return "direct_conv";
    case CudaKernel::depthwise_conv:
      return "depthwise_conv";
    case CudaKernel::pointwise_gemm:
      return "pointwise_gemm";
    case CudaKernel::pointwise_tc:
      return "pointwise_tc";
    case CudaKernel::expand_depthwise:
      return "expand_depthwise";
    case CudaKernel::fused_block:
      return "fused_block";
    case CudaKernel::fused_stem:
      return "fused_stem";
    case CudaKernel::im2col_gemm:
      return "im2col_gemm";
    case CudaKernel::clip:
      return "clip";
    case CudaKernel::add:
      return "add";
    case CudaKernel::avg_pool:
      return "avg_pool";
    case CudaKernel::linear_gemm:
      return "linear_gemm";
    case CudaKernel::linear_tc:
      return "linear_tc";
  }
  return "?";
}

namespace {

namespace k = kernels;

// The baseline's im2col columns for one launch stay under this many floats (1 GiB); larger batches are
// unfolded a chunk of images at a time.
constexpr int64_t kMaxColumnFloats = int64_t{1} << 28;
// The GEMM's grid.z limit: the baseline's image chunks times groups stay within it.
constexpr int kMaxGemmBatch = 65535;
// Images one launch of a kernel whose grid walks images covers (grid.y or grid.z); more take several launches.
constexpr int kMaxGridImages = 65535;
// PDL auto: the largest batch it is on for (above it PDL measured a loss), per precision. Since every kernel loads its
// weights before its wait (docs/PERFORMANCE.md run 15, three alternating rounds of one call on an H200,
// docs/bench/h200-2026-11-29-issue32d/call4-pdl-on-off, ms on / off): batch 1 gains in every precision (fp16 0.179 /
// 0.207, fp32 0.219 / 0.258, tf32 0.247 / 0.274); fp16 gains at batch 8 and 64 too (0.400 / 0.407, 0.944 / 0.963)
// and loses at 256 (2.828 / 2.809); fp32 and tf32 lose from batch 8 on (fp32 0.539 / 0.534, 2.374 / 2.279; tf32
// 0.570 / 0.560, 2.331 / 2.180).
int pdl_auto_max_batch(Precision p) { return p == Precision::fp16 ? 64 : 1; }
// Below this many input channels the expansion does too little arithmetic per byte to hide its expanded
// map's round trip through device memory (block1..6 of MobileNetV2: 16..32 channels); below this many
// pixels (batch x map) the two steps are launch- and latency-bound (14x14 and 7x7 maps at small batches).
constexpr int kFuseMaxMemoryBoundChannels = 32;
constexpr int64_t kFuseMaxLatencyBoundPixels = 1024;

bool worth_fusing_expand_dw(int in_channels, int64_t pixels) {
  return in_channels <= kFuseMaxMemoryBoundChannels || pixels <= kFuseMaxLatencyBoundPixels;
}

bool is_clip(const Layer& l) { return l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU; }

std::string describe_clip(const Layer* clip) {
  return clip != nullptr ? " +clip[" + format_number(clip->clip_min) + "," + format_number(clip->clip_max) + "]"
                         : std::string();
}

using cuda_backend::checked_int;
using cuda_backend::device_caps;

// What a planned layer's output looks like on the device (the lowering allocates it so).
struct PlannedValue {
  bool materialised = false;  // false: fused away
  bool nhwc = false;
  bool half = false;
  int64_t stride = 0;  // elements between images (a padded Linear output differs from per_image)
};

class Planner {
 public:
  Planner(const Model& model, const PrepareConfig& config, const GpuProperties& gpu)
      : model_(model), gpu_(gpu), caps_(device_caps(gpu)), fast_(config.cuda.variant == CudaOptions::Variant::fast) {
    plan_.gpu = gpu;
    plan_.config = config;
    half_ = config.precision == Precision::fp16;
    reduced_ = config.precision != Precision::fp32;
    if (!config.cuda.gemm_tile.empty()) {
      k::GemmTile tile{};
      if (!k::parse_gemm_tile(config.cuda.gemm_tile, &tile))
        throw UsageError("cuda: GEMM tile must be one of 128x128, 128x64, 64x64, 128x32, 32x32, got '" +
                         config.cuda.gemm_tile + "'");
      forced_tile_ = tile;
      has_forced_tile_ = true;
      // The tensor-core GEMM has no 32x32k32: there its cost model chooses.
      has_forced_tc_tile_ = k::parse_tc_tile(config.cuda.gemm_tile, &forced_tc_tile_);
    }
  }

  CudaPlan run() {
    const PrepareConfig& config = plan_.config;
    if (config.precision != Precision::fp32 && !fast_)
      throw UsageError(std::string("cuda: precision ") + to_string(config.precision) +
                       " needs the fast variant; the baseline variant runs strict fp32 only (FFMA, no TF32)");
    if (config.batch < 1 || config.height < 1 || config.width < 1)
      throw UsageError("cuda: batch, height and width must be positive (got batch " + std::to_string(config.batch) +
                       ", " + std::to_string(config.height) + "x" + std::to_string(config.width) + ")");
    if (config.precision == Precision::tf32)
      if (const std::string why = tf32_refusal(gpu_); !why.empty())
        throw Error("cuda: " + why + " (fp32 and fp16 run here)");
    const size_t n = model_.layers.size();
    if (n == 0) throw Error("cuda: the model has no layers");
    stats_ = analyse(model_, config.batch, config.height, config.width);
    if (stats_.size() != n)
      throw Error("cuda: analyse() returned a shape for " + std::to_string(stats_.size()) + " of " + std::to_string(n) +
                  " layers");
    input_shape_ = Shape{config.batch, model_.input_channels, config.height, config.width};
    for (size_t i = 0; i < n; ++i)
      for (int j : model_.layers[i].inputs)
        if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
          throw Error("cuda: " + layer_label(model_.layers[i]) + " reads layer " + std::to_string(j) +
                      ", which does not come before it");
    values_.assign(n, PlannedValue{});
    readers_.assign(n, 0);
    for (const Layer& l : model_.layers)
      for (int j : l.inputs)
        if (j >= 0) ++readers_[static_cast<size_t>(j)];
    const CudaFusionChoice fusion = resolve_cuda_fusion(config, gpu_);
    plan_.fusion = fusion.fusion;
    plan_.fusion_note = fusion.why;
    if (fast_) {
      plan_fast();
    } else {
      plan_baseline();
    }
    if (!values_.back().materialised) throw Error("cuda: the last layer's output is not materialised");
    count_kernels();
    resolve_pdl();
    return std::move(plan_);
  }

 private:
  const Layer& at(int i) const { return model_.layers[static_cast<size_t>(i)]; }
  const Shape& out_shape(int i) const { return stats_[static_cast<size_t>(i)].output; }
  const Shape& shape_of(int j) const { return j == kNetworkInput ? input_shape_ : out_shape(j); }
  int n() const { return static_cast<int>(model_.layers.size()); }
  bool conv_half() const { return half_; }
  std::string ffma_note() const { return reduced_ ? " (fp32 FFMA)" : std::string(); }

  void set_output(CudaStep& step, int layer, bool nhwc, bool half_storage, int64_t stride = 0) {
    step.output_layer = layer;
    step.nhwc_output = nhwc;
    step.half_output = half_storage;
    values_[static_cast<size_t>(layer)] =
        PlannedValue{true, nhwc, half_storage, stride > 0 ? stride : out_shape(layer).per_image()};
  }

  // ---- the tile choices -----------------------------------------------------------------------------------

  // A split GEMM reduces in the kernel where the options ask for it (CudaOptions::splitk; the separate pass is
  // the default); the tile counters are shared by every split GEMM, so the plan keeps the most any of them needs.
  bool splitk_in_kernel() const { return plan_.config.cuda.splitk == CudaOptions::SplitK::in_kernel; }
  // The cluster reduction (tensor-core GEMMs): asked for, and thread-block clusters exist on the GPU and in the code.
  bool splitk_cluster() const {
    return plan_.config.cuda.splitk == CudaOptions::SplitK::cluster && gpu_.arch() >= 90 &&
           gpu_.effective_code_arch() >= 90;
  }
  // A shape the architecture's measured table lists (gemm_tile_rules.h) takes the tile measured fastest there, with
  // the split the cost model gives that tile (as it ran in the measurement); a forced tile, the baseline variant
  // and every other shape take the cost model's choice. `measured` says whether the table chose.
  k::GemmVariant gemm(const k::GemmShape& s, bool* measured = nullptr) {
    k::GemmTile table_tile{};
    const bool from_table = !has_forced_tile_ && fast_ && measured_gemm_tile(gpu_, s, &table_tile);
    if (measured != nullptr) *measured = from_table;
    const k::GemmTile* only = has_forced_tile_ ? &forced_tile_ : from_table ? &table_tile : nullptr;
    k::GemmVariant v = k::choose_gemm_variant(s, caps_, s.batch == 1, only);
    if (v.splits > 1 && plan_.config.cuda.splitk == CudaOptions::SplitK::cluster)
      plan_.splitk_note = "is built for the tensor-core GEMMs only: the FFMA GEMMs keep the second kernel";
    plan_.gemm_workspace_floats = std::max(plan_.gemm_workspace_floats, k::gemm_workspace_floats(s.m, s.n, v));
    v.reduce_in_kernel = v.splits > 1 && splitk_in_kernel();
    if (v.reduce_in_kernel)
      plan_.gemm_tile_counters = std::max(plan_.gemm_tile_counters, k::gemm_tile_count(s.m, s.n, v.tile));
    return v;
  }
  k::TcGemmVariant gemm_tc(const k::TcGemmShape& s) {
    const bool cluster = splitk_cluster();
    if (!cluster && plan_.config.cuda.splitk == CudaOptions::SplitK::cluster)
      plan_.splitk_note = "needs thread-block clusters: compute capability 9.0 and code compiled for compute_90";
    k::TcGemmVariant v = k::choose_gemm_tc_variant(s, caps_, has_forced_tc_tile_ ? &forced_tc_tile_ : nullptr,
                                                   /*allow_split=*/true, cluster ? k::kClusterMaxSplits : 0);
    if (cluster && v.splits > 1) {
      v.reduce_in_cluster = true;  // no workspace, no counters
      return v;
    }
    plan_.gemm_workspace_floats = std::max(plan_.gemm_workspace_floats, k::gemm_tc_workspace_floats(s.m, s.n, v));
    v.reduce_in_kernel = v.splits > 1 && splitk_in_kernel();
    if (v.reduce_in_kernel)
      plan_.gemm_tile_counters = std::max(plan_.gemm_tile_counters, k::gemm_tc_tile_count(s.m, s.n, v.tile));
    return v;
  }
  static void record(CudaLaunchChoice& c, const k::GemmVariant& v) {
    c.tile = k::to_string(v.tile);
    c.vec = v.vec4;
    c.splits = v.splits;
    c.splitk_in_kernel = v.reduce_in_kernel;
  }
  // Below compute_80 the tensor-core GEMM has no cp.async: its stages are filled through registers.
  std::string tc_note() const { return gpu_.effective_code_arch() < 80 ? " (no cp.async below sm_80)" : ""; }
  std::string tc_string(const k::TcGemmVariant& v, k::DType in_type) const {
    return k::to_string(v, in_type) + tc_note();
  }
  static void record(CudaLaunchChoice& c, const k::TcGemmVariant& v) {
    c.tile = k::to_string(v.tile);
    c.vec = v.vec;
    c.splits = v.splits;
    c.splitk_in_kernel = v.reduce_in_kernel;
    c.splitk_cluster = v.reduce_in_cluster;
  }

  // ---- the launch chain -----------------------------------------------------------------------------------

  // Kernel launches per step and after the last one, as the lowering and the kernels' launch functions make
  // them: kernels whose grid walks images launch once per 65535 images; a split GEMM without the in-kernel
  // reduction adds its reduction pass; the baseline's convolution runs im2col (unless 1x1) and the GEMM per
  // chunk of images.
  void count_kernels() {
    const int batch = plan_.config.batch;
    const int image_chunks = static_cast<int>(k::ceil_div(batch, kMaxGridImages));
    for (CudaStep& step : plan_.steps) {
      const int reduction =
          step.launch.splits > 1 && !step.launch.splitk_in_kernel && !step.launch.splitk_cluster ? 1 : 0;
      switch (step.kernel) {
        case CudaKernel::direct_conv:
        case CudaKernel::depthwise_conv:
        case CudaKernel::expand_depthwise:
          step.kernels = image_chunks;
          break;
        case CudaKernel::pointwise_gemm:
        case CudaKernel::pointwise_tc:
        case CudaKernel::linear_gemm:
        case CudaKernel::linear_tc:
          step.kernels = 1 + reduction;
          break;
        case CudaKernel::im2col_gemm: {
          const ConvParams& c = at(step.layers.front()).conv;
          const Shape& xs = shape_of(at(step.layers.front()).inputs.at(0));
          const Shape& ys = out_shape(step.layers.front());
          const bool identity = c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 &&
                                c.pad_top == 0 && c.pad_left == 0 && ys.h == xs.h && ys.w == xs.w;
          const int chunk = std::max(1, step.launch.images_per_launch);
          step.kernels = static_cast<int>(k::ceil_div(batch, chunk)) * ((identity ? 0 : 1) + 1 + reduction);
          break;
        }
        default:  // clip, add, avg_pool (and any one-kernel step a later kernel family adds)
          step.kernels = 1;
          break;
      }
    }
    if (plan_.input_nhwc_copy) plan_.steps.front().kernels += image_chunks;  // the input's NHWC transpose
    const CudaStep& last = plan_.steps.back();
    const Shape& logits = out_shape(n() - 1);
    if (last.output_layer == n() - 1 && last.nhwc_output && logits.h * logits.w > 1 && logits.c > 1) {
      plan_.tail_kernels = image_chunks;  // the logits transposed to NCHW
    } else if (last.output_layer == n() - 1 && last.half_output) {
      plan_.tail_kernels = 1;  // half logits converted to float32
    }
  }

  // Programmatic Dependent Launch: the kernels wait for their predecessor with griddepcontrol, which exists from
  // sm_90 on, in code compiled for it (below, pdl_wait() compiles to nothing and an early start would race).
  void resolve_pdl() {
    const CudaOptions& o = plan_.config.cuda;
    std::string why_not;
    if (gpu_.arch() < 90) {
      why_not = "needs compute capability 9.0 (Hopper) or newer; " + gpu_.name + " is " + std::to_string(gpu_.arch());
    } else if (gpu_.effective_code_arch() < 90) {
      why_not = "needs kernels compiled for compute_90 or newer; this build runs compute_" +
                std::to_string(gpu_.effective_code_arch()) + " code";
    } else if (o.graph == CudaOptions::Graph::off) {
      why_not = "needs the CUDA graph (graph mode off)";
    }
    // auto stops above a batch per precision (pdl_auto_max_batch: where PDL measured a loss on the H200,
    // docs/PERFORMANCE.md run 15).
    const int max_batch = pdl_auto_max_batch(plan_.config.precision);
    if (o.pdl == CudaOptions::Pdl::automatic && why_not.empty() && plan_.config.batch > max_batch) {
      plan_.pdl_note = std::string("auto: off above batch ") + std::to_string(max_batch) + " in " +
                       to_string(plan_.config.precision);
      return;
    }
    if (o.pdl == CudaOptions::Pdl::off) {
      plan_.pdl_note = "off";
    } else if (!why_not.empty()) {
      if (o.pdl == CudaOptions::Pdl::on || o.pdl == CudaOptions::Pdl::late_weights)
        throw Error(std::string("cuda: PDL (pdl ") + to_string(o.pdl) + ") " + why_not);
      plan_.pdl_note = why_not;
    } else {
      plan_.pdl = true;
      plan_.weights_before_wait = o.pdl != CudaOptions::Pdl::late_weights;
    }
  }

  // ---- fast: NHWC, fused epilogues ------------------------------------------------------------------------

  void plan_fast() {
    const k::DType act = half_ ? k::DType::f16 : k::DType::f32;
    // Clip and add layers read NHWC; if one reads the network input itself, the first step transposes it
    // (into the activation type). In fp16 the pool and the Linear layer read that half copy too: their GEMM
    // and kernels take the activation type only.
    for (const Layer& l : model_.layers) {
      const bool reads_input = std::find(l.inputs.begin(), l.inputs.end(), kNetworkInput) != l.inputs.end();
      const bool typed_reader =
          act != k::DType::f32 && (l.kind == LayerKind::GlobalAveragePool || l.kind == LayerKind::Linear);
      if (reads_input && (is_clip(l) || l.kind == LayerKind::ResidualAdd || typed_reader)) plan_.input_nhwc_copy = true;
    }
    const bool fuse = plan_.fusion == CudaOptions::Fusion::expand_dw;
    const bool fuse_block =
        plan_.fusion == CudaOptions::Fusion::block || plan_.fusion == CudaOptions::Fusion::block_split;
    for (int i = 0; i < n();) {
      const Layer& layer = at(i);
      CudaStep step;
      int last = i;
      try {
        switch (layer.kind) {
          case LayerKind::Conv2d:
            // The fused expansion + depthwise kernel is float32 FFMA only: the reduced modes keep two steps.
            last = fuse && !reduced_ ? plan_expand_depthwise(i, step) : -1;
            if (fuse_block && layer.inputs.at(0) == kNetworkInput) {
              // The stem and the first block in one kernel (every precision; tensor cores in fp16 with compute_80
              // code).
              std::string why_not;
              last = plan_fused_stem(i, step, &why_not);
              if (last < 0) {
                last = plan_fast_conv(i, step);
                if (!why_not.empty()) step.variant += " (fusion block: " + why_not + ")";
              }
            } else if (fuse_block) {
              // The whole-block kernels: fp16 and tf32 (tensor cores), fp32 (FFMA).
              std::string why_not;
              last = plan_fused_block(i, step, &why_not);
              if (last < 0) {
                last = plan_fast_conv(i, step);
                if (!why_not.empty()) step.variant += " (fusion block: " + why_not + ")";
              }
            }
            if (last < 0) last = plan_fast_conv(i, step);
            if (fuse && reduced_ && step.variant.rfind("gemm", 0) == 0)
              step.variant +=
                  std::string(" (fusion expand_dw: fp32 only, not fused in ") + to_string(plan_.config.precision) + ")";
            break;
          case LayerKind::ReLU6:
          case LayerKind::ReLU:
            plan_clip(i, step);
            break;
          case LayerKind::ResidualAdd:
            plan_add(i, step);
            break;
          case LayerKind::GlobalAveragePool:
            plan_pool(i, step);
            break;
          case LayerKind::Linear:
            plan_linear(i, step);
            break;
        }
      } catch (const Error& e) {
        throw Error("cuda: " + layer_label(layer) + ": " + e.what());
      }
      for (int l = i; l <= last; ++l) {
        step.layers.push_back(l);
        step.name += (l == i ? "" : " + ") + std::string(to_string(at(l).kind)) + " " + std::to_string(l);
      }
      step.half = half_;
      step.variant = "fast: " + step.variant;
      plan_.steps.push_back(std::move(step));
      i = last + 1;
    }
    if (plan_.input_nhwc_copy) {
      const std::string note = half_ ? "input nchw->nhwc half transpose; " : "input nchw->nhwc transpose; ";
      std::string& v = plan_.steps.front().variant;
      v = "fast: " + note + v.substr(6);
    }
  }

  // Expansion 1x1 (i) + clip + depthwise 3x3 + clip as one kernel when the pattern is there, each
  // intermediate has no other reader and fusing pays (worth_fusing_expand_dw); returns the last covered
  // layer, or -1 (nothing planned) otherwise.
  int plan_expand_depthwise(int i, CudaStep& step) {
    auto only_reader = [&](int j, int of) {
      return at(j).inputs == std::vector<int>{of} && readers_[static_cast<size_t>(of)] == 1;
    };
    if (i + 2 >= n()) return -1;
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
    const bool dw_clip = i + 3 < n() && is_clip(at(i + 3)) && only_reader(i + 3, i + 2);
    const int last = dw_clip ? i + 3 : i + 2;
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i + 2);
    if (xs.c != ec.in_channels) return -1;

    k::ExpandDepthwiseShape s;
    s.in_channels = ec.in_channels;
    s.expanded = ec.out_channels;
    s.in_h = checked_int(xs.h, "input height");
    s.in_w = checked_int(xs.w, "input width");
    s.out_h = checked_int(ys.h, "output height");
    s.out_w = checked_int(ys.w, "output width");
    s.stride_h = dc.stride_h;
    s.stride_w = dc.stride_w;
    s.pad_top = dc.pad_top;
    s.pad_left = dc.pad_left;
    std::string why_not;
    const k::ExpandDepthwiseVariant v = k::choose_expand_depthwise_variant(s, &why_not, gpu_.smem_per_block_optin);
    if (!why_not.empty() || !worth_fusing_expand_dw(s.in_channels, xs.n * xs.h * xs.w)) return -1;

    step.kernel = CudaKernel::expand_depthwise;
    step.clip_layer = i + 1;
    step.dw_clip_layer = dw_clip ? i + 3 : -1;
    step.launch.tile = std::to_string(v.tile_h) + "x" + std::to_string(v.tile_w);
    step.launch.tile_h = v.tile_h;
    step.launch.tile_w = v.tile_w;
    set_output(step, last, true, false);
    char recompute[64];
    std::snprintf(recompute, sizeof recompute, "; expansion x%.2f for tile halos",
                  k::expand_depthwise_recompute_factor(s, v));
    step.variant = k::to_string(v) + " (expanded map in shared memory only" + recompute + ")" +
                   (expand.bias.empty() ? "" : " +bias") + describe_clip(&at(i + 1)) +
                   (dw.bias.empty() ? "" : " +bias") + describe_clip(dw_clip ? &at(i + 3) : nullptr);
    return last;
  }

  // Whether layers i.. are an inverted-residual block with an expansion: 1x1 conv, clip, depthwise 3x3, clip,
  // 1x1 conv, each the only reader of the one before; returns the last layer (the projection, or the residual
  // add after it when it adds the block's input), else -1.
  int block_pattern(int i) const {
    auto only_reader = [&](int j, int of) {
      return at(j).inputs == std::vector<int>{of} && readers_[static_cast<size_t>(of)] == 1;
    };
    if (i + 4 >= n()) return -1;
    const Layer& expand = at(i);
    const ConvParams& ec = expand.conv;
    const int in = expand.inputs.at(0);
    auto plain_1x1 = [](const Layer& l) {
      const ConvParams& c = l.conv;
      return l.kind == LayerKind::Conv2d && c.pointwise() && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 &&
             c.pad_left == 0 && c.pad_bottom == 0 && c.pad_right == 0;
    };
    if (in == kNetworkInput || !plain_1x1(expand)) return -1;
    if (!is_clip(at(i + 1)) || !only_reader(i + 1, i)) return -1;
    const Layer& dw = at(i + 2);
    const ConvParams& dc = dw.conv;
    if (dw.kind != LayerKind::Conv2d || !only_reader(i + 2, i + 1) || !dc.depthwise() || dc.kernel_h != 3 ||
        dc.kernel_w != 3 || dc.dilation_h != 1 || dc.dilation_w != 1 || dc.in_channels != ec.out_channels)
      return -1;
    if (!is_clip(at(i + 3)) || !only_reader(i + 3, i + 2)) return -1;
    const Layer& project = at(i + 4);
    if (!plain_1x1(project) || !only_reader(i + 4, i + 3) || project.conv.in_channels != dc.out_channels) return -1;
    if (i + 5 < n() && readers_[static_cast<size_t>(i + 4)] == 1) {
      const Layer& add = at(i + 5);
      if (add.kind == LayerKind::ResidualAdd && add.inputs.size() == 2 &&
          ((add.inputs[0] == i + 4 && add.inputs[1] == in) || (add.inputs[1] == i + 4 && add.inputs[0] == in)))
        return i + 5;
    }
    return i + 4;
  }

  // Fusion block: layers i.. as one fused_block step when block_pattern() holds, the kernel can run the shapes
  // on this GPU, in fp32 the unfused layers are bound by memory (their FFMA GEMMs are faster elsewhere) and the
  // launch has blocks for at least half the multiprocessors (below that the unfused GEMMs, which spread a layer
  // over more blocks, are the better bet); returns the last covered layer, or -1 with the reason in *why_not
  // (empty where the layers are no block).
  int plan_fused_block(int i, CudaStep& step, std::string* why_not) {
    const int last = block_pattern(i);
    if (last < 0) return -1;
    const Layer& expand = at(i);
    const Layer& dw = at(i + 2);
    const Layer& project = at(i + 4);
    const int in = expand.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i + 4);
    const bool residual = last == i + 5;
    if (xs.c != expand.conv.in_channels) return -1;
    if (residual) {
      const PlannedValue& r = values_[static_cast<size_t>(in)];
      if (!(r.materialised && r.nhwc && r.half == half_ && r.stride == xs.per_image() && xs == ys)) {
        *why_not = "not fused: the residual is not a dense NHWC map of the output's shape and type";
        return -1;
      }
    }
    if (dw.conv.stride_h != dw.conv.stride_w) {
      *why_not = "not fused: depthwise strides differ";
      return -1;
    }
    const k::FusedBlockShape s = cuda_backend::fused_block_shape(expand, dw, project, xs, ys, residual);
    k::FusedBlockVariant v;
    k::FusedBlockFfmaVariant vf;
    const bool tf32 = plan_.config.precision == Precision::tf32;
    const bool tc = half_ || tf32;  // the tensor-core kernel
    // fp32 and tf32: only where the unfused layers are bound by memory (tiles.h: kFusedBlockFfmaMaxIntensity,
    // kFusedBlockTf32MaxIntensity); fp16 everywhere.
    if (const double intensity = k::fused_block_unfused_intensity(s);
        !half_ && intensity > (tf32 ? k::kFusedBlockTf32MaxIntensity : k::kFusedBlockFfmaMaxIntensity)) {
      char text[160];
      std::snprintf(text, sizeof text, "not fused: %.1f FLOP/byte unfused (> %.1f): the %s GEMMs are faster there",
                    intensity, tf32 ? k::kFusedBlockTf32MaxIntensity : k::kFusedBlockFfmaMaxIntensity,
                    tf32 ? "TF32" : "FFMA");
      *why_not = text;
      return -1;
    }
    if (tc) {
      v = k::choose_fused_block_variant(s, caps_, gpu_.effective_code_arch(), why_not,
                                        half_ ? k::FusedBlockMath::f16 : k::FusedBlockMath::tf32);
    } else {
      vf = k::choose_fused_block_ffma_variant(s, caps_, why_not);
    }
    if (!why_not->empty()) {
      *why_not = "not fused: " + *why_not;
      return -1;
    }
    const int64_t blocks = tc ? k::fused_block_blocks(s, v) : k::fused_block_ffma_blocks(s, vf);
    if (blocks < gpu_.sm_count / 2) {
      *why_not = "not fused: " + std::to_string(blocks) + " blocks would leave most of the " +
                 std::to_string(gpu_.sm_count) + " multiprocessors idle";
      return -1;
    }
    // block_split: a block that block fuses takes the tile and split measured fastest for its shape and batch on this
    // architecture, where the table lists them (fp16). The stage bench timed the split kernel against this unsplit
    // one, not against the unfused layers, so a block block leaves unfused stays unfused (run 17, call 5: fusing the
    // late blocks at batch 1 split with this table, 24 kernels instead of 58, was 2.7% slower).
    const MeasuredBlockSplit* split_row =
        half_ && plan_.fusion == CudaOptions::Fusion::block_split ? measured_block_split(gpu_, s) : nullptr;
    if (split_row != nullptr) {
      const int items = k::fused_block_items(s, split_row->tile_h, split_row->tile_w);
      v = k::FusedBlockVariant{split_row->tile_h, split_row->tile_w,
                               items <= 2   ? 2
                               : items <= 4 ? 4
                                            : 6,
                               k::FusedBlockMath::f16, split_row->splits};
      // The splits' partials and arrival counters share the split-K GEMMs' workspace.
      plan_.gemm_workspace_floats = std::max(plan_.gemm_workspace_floats, k::fused_block_partials_floats(s, v));
      if (v.splits > 1) plan_.gemm_tile_counters = std::max(plan_.gemm_tile_counters, k::fused_block_blocks(s, v));
    }
    step.kernel = CudaKernel::fused_block;
    step.tensor_cores = tc;  // with float32 storage: TF32
    step.clip_layer = i + 1;
    step.dw_clip_layer = i + 3;
    step.residual = residual ? in : -1;
    step.launch.tile_h = tc ? v.tile_h : vf.tile_h;
    step.launch.tile_w = tc ? v.tile_w : vf.tile_w;
    step.launch.tile = std::to_string(step.launch.tile_h) + "x" + std::to_string(step.launch.tile_w);
    step.launch.items = v.items;
    step.launch.block_splits = v.splits;
    step.launch.px = vf.px;
    step.launch.nc = vf.nc;
    set_output(step, last, true, half_);
    char recompute[112];
    std::snprintf(recompute, sizeof recompute,
                  " (expanded maps in shared memory only; expansion x%.2f for tile halos%s)",
                  tc ? k::fused_block_recompute_factor(s, v) : k::fused_block_ffma_recompute_factor(s, vf),
                  tc ? "" : "; fp32 FFMA");
    step.variant = (tc ? k::to_string(v) : k::to_string(vf)) + recompute + (expand.bias.empty() ? "" : " +bias") +
                   describe_clip(&at(i + 1)) + (dw.bias.empty() ? "" : " +bias") + describe_clip(&at(i + 3)) +
                   (project.bias.empty() ? "" : " +bias") + (residual ? " +residual" : "");
    return last;
  }

  // Fusion block at the network input: the stem (conv 3x3 stride 2 over the NCHW input) + clip + depthwise 3x3
  // stride 1 + clip + projection 1x1, each the only reader of the one before, as one fused_stem step; returns the
  // projection, or -1 with the reason in *why_not (empty where the layers are no such pattern).
  int plan_fused_stem(int i, CudaStep& step, std::string* why_not) {
    auto only_reader = [&](int j, int of) {
      return at(j).inputs == std::vector<int>{of} && readers_[static_cast<size_t>(of)] == 1;
    };
    if (i + 4 >= n()) return -1;
    const Layer& stem = at(i);
    const ConvParams& sc = stem.conv;
    if (stem.kind != LayerKind::Conv2d || stem.inputs.at(0) != kNetworkInput || sc.in_channels != 3 || sc.groups != 1 ||
        sc.kernel_h != 3 || sc.kernel_w != 3 || sc.dilation_h != 1 || sc.dilation_w != 1 || sc.stride_h != sc.stride_w)
      return -1;
    if (!is_clip(at(i + 1)) || !only_reader(i + 1, i)) return -1;
    const Layer& dw = at(i + 2);
    const ConvParams& dc = dw.conv;
    if (dw.kind != LayerKind::Conv2d || !only_reader(i + 2, i + 1) || !dc.depthwise() || dc.kernel_h != 3 ||
        dc.kernel_w != 3 || dc.dilation_h != 1 || dc.dilation_w != 1 || dc.in_channels != sc.out_channels ||
        dc.stride_h != 1 || dc.stride_w != 1)
      return -1;
    if (!is_clip(at(i + 3)) || !only_reader(i + 3, i + 2)) return -1;
    const Layer& project = at(i + 4);
    const ConvParams& pc = project.conv;
    if (project.kind != LayerKind::Conv2d || !only_reader(i + 4, i + 3) || !pc.pointwise() || pc.stride_h != 1 ||
        pc.stride_w != 1 || pc.pad_top != 0 || pc.pad_left != 0 || pc.pad_bottom != 0 || pc.pad_right != 0 ||
        pc.in_channels != dc.out_channels)
      return -1;
    const k::FusedStemShape s = cuda_backend::fused_stem_shape(stem, dw, project, shape_of(kNetworkInput), out_shape(i),
                                                               out_shape(i + 4), half_ ? k::DType::f16 : k::DType::f32);
    const k::FusedStemVariant v = k::choose_fused_stem_variant(s, caps_, why_not);
    if (!why_not->empty()) {
      *why_not = "stem not fused: " + *why_not;
      return -1;
    }
    step.kernel = CudaKernel::fused_stem;
    // fp16 with compute_80 code: the stem and the projection on tensor cores (fused_stem.cu's kMma).
    step.tensor_cores = half_ && gpu_.effective_code_arch() >= 80;
    step.clip_layer = i + 1;
    step.dw_clip_layer = i + 3;
    step.launch.tile = std::to_string(v.tile_h) + "x" + std::to_string(k::kFusedStemTileW);
    step.launch.tile_h = v.tile_h;
    step.launch.tile_w = k::kFusedStemTileW;
    set_output(step, i + 4, true, half_);
    // tf32 takes the float32 kernel: the stem and the projection in FFMA, more exact than TF32 (which the mode allows,
    // not requires) and faster than the unfused TF32 steps (PERFORMANCE.md run 12).
    const char* math = !half_                      ? "fp32 FFMA"
                       : !step.tensor_cores        ? "depthwise in half2, stem and projection fp32 FFMA"
                       : s.stem_channels % 16 == 0 ? "stem and projection on tensor cores, depthwise in half2"
                                                   : "stem on tensor cores, depthwise in half2, projection fp32 FFMA";
    char recompute[192];
    std::snprintf(recompute, sizeof recompute,
                  " (stem and depthwise maps in shared memory only; stem x%.2f for tile halos; %s)",
                  k::fused_stem_recompute_factor(s, v), math);
    step.variant = k::to_string(v) + recompute + (stem.bias.empty() ? "" : " +bias") + describe_clip(&at(i + 1)) +
                   (dw.bias.empty() ? "" : " +bias") + describe_clip(&at(i + 3)) +
                   (project.bias.empty() ? "" : " +bias");
    return i + 4;
  }

  // Convolution i and the layers fused into it; returns the last covered layer.
  int plan_fast_conv(int i, CudaStep& step) {
    const Layer& layer = at(i);
    const ConvParams& c = layer.conv;
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i);
    if (xs.c != c.in_channels)
      throw Error("input has " + std::to_string(xs.c) + " channels, expected " + std::to_string(c.in_channels));

    if (in == kNetworkInput) {
      step.kernel = CudaKernel::direct_conv;  // reads the NCHW network input itself: no separate layout pass
    } else if (c.depthwise() && c.kernel_h == 3 && c.kernel_w == 3 && c.dilation_h == 1 && c.dilation_w == 1) {
      step.kernel = CudaKernel::depthwise_conv;
    } else if (c.pointwise() && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 && c.pad_left == 0 &&
               c.pad_bottom == 0 && c.pad_right == 0) {
      step.kernel = reduced_ ? CudaKernel::pointwise_tc : CudaKernel::pointwise_gemm;
    } else {
      step.kernel = CudaKernel::direct_conv;
    }
    const bool pointwise = step.kernel == CudaKernel::pointwise_gemm || step.kernel == CudaKernel::pointwise_tc;

    // Epilogue fusion: the clip right after, when it is the convolution's only reader; then, for the GEMM,
    // the residual add right after, when it is the only reader and its other operand is already computed.
    int last = i;
    if (i + 1 < n() && is_clip(at(i + 1)) && at(i + 1).inputs == std::vector<int>{i} &&
        readers_[static_cast<size_t>(i)] == 1) {
      step.clip_layer = i + 1;
      last = i + 1;
    }
    if (pointwise && last + 1 < n() && readers_[static_cast<size_t>(last)] == 1) {
      const Layer& add = at(last + 1);
      if (add.kind == LayerKind::ResidualAdd && add.inputs.size() == 2 &&
          (add.inputs[0] == last) != (add.inputs[1] == last)) {
        const int other = add.inputs[0] == last ? add.inputs[1] : add.inputs[0];
        if (other >= 0) {
          const PlannedValue& r = values_[static_cast<size_t>(other)];
          if (r.materialised && r.nhwc && r.half == half_ && r.stride == ys.per_image() && shape_of(other) == ys) {
            step.residual = other;
            last = last + 1;
          }
        }
      }
    }
    set_output(step, last, true, half_);
    const std::string extras = std::string(layer.bias.empty() ? "" : " +bias") +
                               describe_clip(step.clip_layer >= 0 ? &at(step.clip_layer) : nullptr) +
                               (step.residual >= 0 ? " +residual" : "");
    const k::DType act = half_ ? k::DType::f16 : k::DType::f32;

    switch (step.kernel) {
      case CudaKernel::depthwise_conv: {
        k::DepthwiseShape s;
        s.batch = plan_.config.batch;
        s.channels = c.in_channels;
        s.out_h = checked_int(ys.h, "output height");
        s.out_w = checked_int(ys.w, "output width");
        checked_int(xs.h, "input height");
        checked_int(xs.w, "input width");
        s.stride_h = c.stride_h;
        s.stride_w = c.stride_w;
        s.dtype = act;
        const k::DepthwiseVariant v = k::choose_depthwise_variant(s, gpu_.sm_count);
        step.launch.vec_width = v.vec;
        step.launch.cols = v.cols;
        step.launch.stride = v.stride;
        step.variant = k::to_string(v) + extras + ffma_note();
        break;
      }
      case CudaKernel::pointwise_tc: {
        k::TcGemmShape s;
        s.m = checked_int(ys.n * ys.h * ys.w, "output pixels");
        s.n = c.out_channels;
        s.k = c.in_channels;
        s.in_type = s.out_type = act;
        s.residual = step.residual >= 0;
        const int per = 16 / k::dtype_bytes(act);  // elements per 16-byte access; every operand is dense
        s.vec = s.k % per == 0 && s.n % per == 0;
        step.tensor_cores = true;
        const k::TcGemmVariant v = gemm_tc(s);
        record(step.launch, v);
        step.variant = tc_string(v, act) + extras;
        break;
      }
      case CudaKernel::pointwise_gemm: {
        const int64_t pixels = ys.n * ys.h * ys.w;
        if (pixels < 1 || pixels > 0x7fffffff)
          throw Error("pointwise_conv: " + std::to_string(pixels) + " pixels outside the GEMM's 1..2^31-1 rows");
        k::GemmShape s{static_cast<int>(pixels), c.out_channels, c.in_channels, 1,
                       c.in_channels % 4 == 0 && c.out_channels % 4 == 0};
        bool measured = false;
        const k::GemmVariant v = gemm(s, &measured);
        record(step.launch, v);
        step.variant = k::to_string(v) + (measured ? " (tile measured fastest)" : "") + extras;
        break;
      }
      default: {  // direct
        const bool nchw = in == kNetworkInput;
        k::DirectConvShape s;
        s.batch = plan_.config.batch;
        s.in_channels = c.in_channels;
        checked_int(xs.h, "input height");
        checked_int(xs.w, "input width");
        s.out_channels = c.out_channels;
        s.out_h = checked_int(ys.h, "output height");
        s.out_w = checked_int(ys.w, "output width");
        s.groups = c.groups;
        s.kernel_h = c.kernel_h;
        s.kernel_w = c.kernel_w;
        const k::DirectConvVariant v = k::choose_direct_conv_variant(s, gpu_.sm_count);
        step.launch.co = v.co;
        step.launch.taps27 = v.taps27;
        step.variant = k::to_string(v, nchw ? k::Layout::nchw : k::Layout::nhwc, act) + extras + ffma_note();
        break;
      }
    }
    return last;
  }

  void plan_clip(int i, CudaStep& step) {
    const int in = at(i).inputs.at(0);
    const Shape& ys = out_shape(i);
    if (!(shape_of(in) == ys)) throw Error("output " + ys.str() + " differs from input " + shape_of(in).str());
    step.kernel = CudaKernel::clip;
    step.reads_input_copy = fast_ && in == kNetworkInput;
    set_output(step, i, fast_, half_);
    step.variant = std::string(half_ ? "clip half[" : "clip[") + format_number(at(i).clip_min) + "," +
                   format_number(at(i).clip_max) + "]";
  }

  void plan_add(int i, CudaStep& step) {
    const Shape& ys = out_shape(i);
    const int a = at(i).inputs.at(0), b = at(i).inputs.at(1);
    if (!(shape_of(a) == ys) || !(shape_of(b) == ys))
      throw Error("adds " + shape_of(a).str() + " and " + shape_of(b).str() + " into " + ys.str());
    step.kernel = CudaKernel::add;
    step.reads_input_copy = fast_ && (a == kNetworkInput || b == kNetworkInput);
    set_output(step, i, fast_, half_);
    step.variant = half_ ? "add half" : "add";
  }

  void plan_pool(int i, CudaStep& step) {
    const int in = at(i).inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i);
    if (!(ys == Shape{xs.n, xs.c, 1, 1})) throw Error("pools " + xs.str() + " into " + ys.str());
    checked_int(xs.n, "batch");
    checked_int(xs.c, "channels");
    step.kernel = CudaKernel::avg_pool;
    // The fast path reads NHWC maps, except the network input, which stays NCHW float32 (in fp16 its half NHWC
    // copy is read instead).
    step.reads_input_copy = fast_ && in == kNetworkInput && half_;
    const bool nhwc = fast_ && (in != kNetworkInput || step.reads_input_copy);
    set_output(step, i, fast_, half_);
    step.variant = std::string("avgpool ") + (nhwc ? "nhwc" : "nchw") + (half_ ? " half (fp32 sum)" : "");
  }

  // Linear: logits[batch, out] = x[batch, in] * W^T + b as the GEMM with B = W^T [in, out]. An NHWC input
  // with a map larger than 1x1 flattens in (h, w, c) order, so W's columns are permuted to match.
  void plan_linear(int i, CudaStep& step) {
    const Layer& layer = at(i);
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i);
    const int K = layer.in_features, O = layer.out_features;
    const int batch = plan_.config.batch;
    if (xs.per_image() != K) throw Error("input " + xs.str() + " does not hold " + std::to_string(K) + " features");
    if (!(ys == Shape{batch, O, 1, 1}))
      throw Error("output " + ys.str() + " is not " + std::to_string(O) + " features");
    const k::DType act = half_ ? k::DType::f16 : k::DType::f32;
    // In fp16 a Linear over the network input reads its half NHWC copy (the GEMM takes one operand type).
    step.reads_input_copy = fast_ && in == kNetworkInput && half_;
    step.permute_weights = fast_ && (in != kNetworkInput || step.reads_input_copy) && xs.h * xs.w > 1;
    // The network's last layer (nothing reads it but the download) gets its features padded to a multiple of
    // 16 bytes of operand (4 floats, 8 halves) with zero weights, so its GEMM takes 16-byte accesses (1001
    // classes: 1004 or 1008); the download skips the pad.
    const bool logits = readers_[static_cast<size_t>(i)] == 0;
    const int align = fast_ ? 16 / k::dtype_bytes(act) : 4;
    const int padded = logits && O % align != 0 && K % align == 0 ? (O + align - 1) / align * align : O;
    step.padded_features = padded;
    // The logits (a Linear layer nothing else reads) are float32 in every mode; a Linear layer that other
    // layers read stores the activation type.
    const bool half_out = !(logits || !fast_) && half_;
    set_output(step, i, fast_, half_out, padded);
    const std::string notes =
        std::string(layer.bias.empty() ? "" : " +bias") + (step.permute_weights ? " (weights permuted to nhwc)" : "") +
        (padded != O ? " (" + std::to_string(O) + " features padded to " + std::to_string(padded) + ")"
                     : std::string());
    if (fast_ && reduced_) {
      step.kernel = CudaKernel::linear_tc;
      step.tensor_cores = true;
      k::TcGemmShape s;
      s.m = batch;
      s.n = padded;
      s.k = K;
      s.in_type = act;
      s.out_type = half_out ? k::DType::f16 : k::DType::f32;
      const int in_per = 16 / k::dtype_bytes(s.in_type), out_per = 16 / k::dtype_bytes(s.out_type);
      s.vec = K % in_per == 0 && padded % in_per == 0 && padded % out_per == 0;
      const k::TcGemmVariant v = gemm_tc(s);
      record(step.launch, v);
      step.variant = tc_string(v, act) + notes + (half_out ? "" : " -> fp32 logits");
      return;
    }
    step.kernel = CudaKernel::linear_gemm;
    const k::GemmVariant v = gemm(k::GemmShape{batch, padded, K, 1, K % 4 == 0 && padded % 4 == 0});
    record(step.launch, v);
    step.variant = k::to_string(v) + notes;
  }

  // ---- baseline: NCHW, one step per layer -----------------------------------------------------------------

  void plan_baseline() {
    for (int i = 0; i < n(); ++i) {
      const Layer& layer = at(i);
      CudaStep step;
      try {
        switch (layer.kind) {
          case LayerKind::Conv2d:
            plan_baseline_conv(i, step);
            break;
          case LayerKind::ReLU6:
          case LayerKind::ReLU:
            plan_clip(i, step);
            break;
          case LayerKind::ResidualAdd:
            plan_add(i, step);
            break;
          case LayerKind::GlobalAveragePool:
            plan_pool(i, step);
            break;
          case LayerKind::Linear:
            plan_linear(i, step);
            break;
        }
      } catch (const Error& e) {
        throw Error("cuda: " + layer_label(layer) + ": " + e.what());
      }
      step.name = std::string(to_string(layer.kind)) + " " + std::to_string(i);
      step.layers = {i};
      step.variant = "baseline: " + step.variant;
      plan_.steps.push_back(std::move(step));
    }
  }

  void plan_baseline_conv(int i, CudaStep& step) {
    const Layer& layer = at(i);
    const ConvParams& c = layer.conv;
    const int in = layer.inputs.at(0);
    const Shape& xs = shape_of(in);
    const Shape& ys = out_shape(i);
    if (xs.c != c.in_channels)
      throw Error("input has " + std::to_string(xs.c) + " channels, expected " + std::to_string(c.in_channels));
    step.kernel = CudaKernel::im2col_gemm;
    set_output(step, i, false, false);

    const int groups = c.groups;
    const int cin_g = c.in_channels / groups, cout_g = c.out_channels / groups;
    const int64_t taps = static_cast<int64_t>(c.kernel_h) * c.kernel_w;
    const int64_t kg = cin_g * taps;                // GEMM depth per group
    const int64_t pixels = ys.h * ys.w;             // GEMM columns
    const int64_t rows_all = c.in_channels * taps;  // im2col rows of one image (all groups)
    const bool identity = c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 &&
                          c.pad_left == 0 && ys.h == xs.h && ys.w == xs.w;
    const int batch = plan_.config.batch;
    int chunk = batch;
    if (!identity) chunk = static_cast<int>(std::clamp<int64_t>(kMaxColumnFloats / (rows_all * pixels), 1, chunk));
    chunk = std::max(1, std::min(chunk, kMaxGemmBatch / groups));
    if (groups > kMaxGemmBatch) throw Error("more than 65535 groups");
    if (!identity) plan_.im2col_workspace_floats = std::max(plan_.im2col_workspace_floats, chunk * rows_all * pixels);
    step.launch.images_per_launch = chunk;

    // The variant is chosen for a full chunk: operands row-major with these strides, every buffer (and the
    // columns) a cudaMalloc, so 16-byte aligned.
    k::GemmShape s;
    s.m = cout_g;
    s.n = checked_int(pixels, "output pixels");
    s.k = checked_int(kg, "GEMM depth");
    s.batch = chunk * groups;
    s.vec4 = kg % 4 == 0 && pixels % 4 == 0 && (cout_g * kg) % 4 == 0 && (kg * pixels) % 4 == 0 &&
             (rows_all * pixels) % 4 == 0 && (cout_g * pixels) % 4 == 0 && (c.out_channels * pixels) % 4 == 0;
    const k::GemmVariant v = gemm(s);
    record(step.launch, v);
    step.variant = (identity ? std::string("gemm (1x1, no im2col) ") : std::string("im2col + ")) + k::to_string(v) +
                   (layer.bias.empty() ? "" : " +bias") +
                   (chunk < batch ? " (" + std::to_string(chunk) + " images per launch)" : std::string());
  }

  const Model& model_;
  const GpuProperties gpu_;
  const k::DeviceCaps caps_;
  const bool fast_;
  bool half_ = false, reduced_ = false;
  bool has_forced_tile_ = false, has_forced_tc_tile_ = false;
  k::GemmTile forced_tile_{};
  k::TcTile forced_tc_tile_{};
  CudaPlan plan_;
  std::vector<LayerStats> stats_;
  Shape input_shape_;
  std::vector<PlannedValue> values_;
  std::vector<int> readers_;
};

}  // namespace

CudaPlan plan_cuda_network(const Model& model, const PrepareConfig& config, const GpuProperties& gpu) {
  return Planner(model, config, gpu).run();
}

int64_t planned_kernels(const CudaPlan& plan) {
  int64_t kernels = plan.tail_kernels;
  for (const CudaStep& s : plan.steps) kernels += s.kernels;
  return kernels;
}

// "14 split-K GEMMs reduced by a second kernel", "... in their cluster", or both counts where the FFMA GEMMs keep
// the second kernel beside clustered tensor-core GEMMs (and the reason).
std::string describe_splits(const CudaPlan& plan) {
  int separate = 0, in_kernel = 0, cluster = 0;
  for (const CudaStep& s : plan.steps) {
    if (s.launch.splits <= 1) continue;
    (s.launch.splitk_cluster ? cluster : s.launch.splitk_in_kernel ? in_kernel : separate) += 1;
  }
  std::string out;
  auto add = [&](int count, const char* how) {
    if (count == 0) return;
    out += (out.empty() ? "" : ", ") + std::to_string(count) + " split-K GEMMs reduced " + how;
  };
  add(cluster, "in their cluster (distributed shared memory)");
  add(in_kernel, "in the kernel");
  add(separate, "by a second kernel");
  if (separate > 0 && plan.config.cuda.splitk != CudaOptions::SplitK::separate)
    out += std::string(" (") + to_string(plan.config.cuda.splitk) + " " + plan.splitk_note + ")";
  return out;
}

std::string describe_chain(const CudaPlan& plan) {
  int splits = 0;
  for (const CudaStep& s : plan.steps) splits += s.launch.splits > 1 ? 1 : 0;
  return std::to_string(planned_kernels(plan)) + " kernels per run, PDL " +
         (plan.pdl ? std::string(plan.weights_before_wait ? "on" : "on, weights loaded after the wait")
                   : "off" + (plan.pdl_note == "off" ? std::string() : " (" + plan.pdl_note + ")")) +
         (splits > 0 ? ", " + describe_splits(plan) : std::string());
}

std::string describe_fusion(const CudaPlan& plan) {
  return plan.config.cuda.fusion == CudaOptions::Fusion::automatic ? std::string("auto -> ") + to_string(plan.fusion)
                                                                   : std::string(to_string(plan.fusion));
}

std::string describe(const CudaPlan& plan) {
  const PrepareConfig& c = plan.config;
  std::string text = "cuda plan for " + plan.gpu.name + " (sm_" + std::to_string(plan.gpu.arch()) + ", " +
                     std::to_string(plan.gpu.sm_count) + " SMs): batch " + std::to_string(c.batch) + ", " +
                     std::to_string(c.height) + "x" + std::to_string(c.width) + ", " + to_string(c.precision) + ", " +
                     to_string(c.cuda.variant) + ", fusion " + describe_fusion(plan) + ", " +
                     std::to_string(plan.steps.size()) + " steps; " + describe_chain(plan) + "\n" +
                     (c.cuda.fusion == CudaOptions::Fusion::automatic ? "fusion " + plan.fusion_note + "\n" : "");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const CudaStep& s = plan.steps[i];
    char head[32];
    std::snprintf(head, sizeof head, "%3zu  ", i);
    text += head + s.name + "  [" + to_string(s.kernel) + "]  " + s.variant + "\n";
  }
  text += "workspace: split-K and split blocks " + std::to_string(plan.gemm_workspace_floats * 4) + " bytes" +
          (plan.gemm_tile_counters > 0 ? " + " + std::to_string(plan.gemm_tile_counters * 4) + " bytes of tile counters"
                                       : std::string()) +
          ", im2col " + std::to_string(plan.im2col_workspace_floats * 4) + " bytes\n";
  return text;
}

}  // namespace mnv2
