// The cudnn backend's plan (cudnn_plan.h): layout, pads, arena offsets and convolution groups, without a GPU.
#include "backends/cudnn/cudnn_plan.h"

#include <algorithm>
#include <string>

#include "backends/layer_checks.h"  // layer_label
#include "mnv2/error.h"

namespace mnv2::cudnn_backend {
namespace {

// Sub-buffers of one allocation: offsets planned first, one cudaMalloc after.
class ArenaPlan {
 public:
  size_t add(int64_t elements, size_t element_bytes) {
    const size_t offset = bytes_;
    bytes_ += (static_cast<size_t>(elements) * element_bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    return offset;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

// Groups: each convolution with the ReLU6/ReLU that reads it, and the residual add that reads that, where each
// intermediate has no other reader (consecutive in topology order, as MobileNetV2's are).
std::vector<LayerGroup> convolution_groups(const Model& model, const std::vector<LayerPlan>& layers) {
  const int n = static_cast<int>(layers.size());
  std::vector<int> readers(static_cast<size_t>(n), 0);
  for (const Layer& l : model.layers)
    for (int j : l.inputs)
      if (j >= 0 && j < n) ++readers[static_cast<size_t>(j)];
  ++readers[static_cast<size_t>(n - 1)];  // the network's output
  auto at = [&](int i) -> const LayerPlan& { return layers[static_cast<size_t>(i)]; };
  std::vector<LayerGroup> groups;
  for (int i = 0; i < n;) {
    LayerGroup g;
    if (at(i).kind != LayerKind::Conv2d) {
      g.layers = {i};
      groups.push_back(std::move(g));
      ++i;
      continue;
    }
    g.conv = i;
    int end = i;
    auto sole_reader = [&](int next) { return next < n && readers[static_cast<size_t>(end)] == 1; };
    if (sole_reader(end + 1) && (at(end + 1).kind == LayerKind::ReLU6 || at(end + 1).kind == LayerKind::ReLU) &&
        at(end + 1).in_layer == end && model.layers[static_cast<size_t>(end + 1)].clip_min == 0.0f) {
      g.act = ++end;
    }
    if (sole_reader(end + 1) && at(end + 1).kind == LayerKind::ResidualAdd) {
      const LayerPlan& a = at(end + 1);
      if ((a.in_layer == end) != (a.in_layer2 == end)) g.add = ++end;
    }
    for (int j = i; j <= end; ++j) g.layers.push_back(j);
    groups.push_back(std::move(g));
    i = end + 1;
  }
  return groups;
}

}  // namespace

CudnnPlan plan_cudnn_network(const Model& model, const PrepareConfig& config) {
  const size_t n = model.layers.size();
  if (n == 0) throw Error("cudnn: the model has no layers");
  const std::vector<LayerStats> stats = analyse(model, config.batch, config.height, config.width);
  if (stats.size() != n)
    throw Error("cudnn: analyse() returned a shape for " + std::to_string(stats.size()) + " of " + std::to_string(n) +
                " layers");
  CudnnPlan plan;
  plan.config = config;
  plan.fused = config.cudnn.variant == CudnnOptions::Variant::fused;
  plan.nhwc =
      plan.fused && (config.cudnn.layout == CudnnOptions::Layout::nhwc ||
                     (config.cudnn.layout == CudnnOptions::Layout::automatic && config.precision != Precision::fp32));
  plan.half = config.precision == Precision::fp16;
  plan.element_bytes = plan.half ? 2 : sizeof(float);
  plan.input_shape = Shape{config.batch, model.input_channels, config.height, config.width};

  ArenaPlan weights, activations;
  const size_t e = plan.element_bytes;
  plan.input_offset = activations.add(plan.input_shape.numel(), e);
  // Converted: the float32 input lands in a staging buffer and is converted; outputs are converted back into the
  // readback buffer (the largest layer output) before download.
  int64_t largest_output = 0;
  for (const LayerStats& st : stats) largest_output = std::max(largest_output, st.output.numel());
  if (plan.converted()) {
    plan.staging_offset = activations.add(plan.input_shape.numel(), sizeof(float));
    plan.readback_offset = activations.add(largest_output, sizeof(float));
  }
  plan.layers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Layer& layer = model.layers[i];
    LayerPlan& lp = plan.layers[i];
    lp.kind = layer.kind;
    lp.layer = static_cast<int>(i);
    lp.out_shape = stats[i].output;
    for (int j : layer.inputs)
      if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
        throw Error("cudnn: " + layer_label(layer) + " reads layer " + std::to_string(j) +
                    ", which does not come before it");
    lp.in_layer = layer.inputs.at(0);
    lp.in_shape = lp.in_layer == kNetworkInput ? plan.input_shape : stats[static_cast<size_t>(lp.in_layer)].output;
    if (layer.kind == LayerKind::ResidualAdd) lp.in_layer2 = layer.inputs.at(1);
    lp.out_offset = activations.add(lp.out_shape.numel(), e);
    lp.has_bias = !layer.bias.empty();
    if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
      lp.weight_offset = weights.add(static_cast<int64_t>(layer.weight.size()), e);
      if (lp.has_bias) lp.bias_offset = weights.add(static_cast<int64_t>(layer.bias.size()), e);
      plan.largest_weight = std::max(plan.largest_weight, static_cast<int64_t>(layer.weight.size()));
    }
    if (layer.kind == LayerKind::Conv2d) {
      const ConvParams& c = layer.conv;
      lp.sym_pad_h = std::min(c.pad_top, c.pad_bottom);
      lp.sym_pad_w = std::min(c.pad_left, c.pad_right);
      lp.extra_top = c.pad_top - lp.sym_pad_h;
      lp.extra_bottom = c.pad_bottom - lp.sym_pad_h;
      lp.extra_left = c.pad_left - lp.sym_pad_w;
      lp.extra_right = c.pad_right - lp.sym_pad_w;
      lp.pad_copy = lp.extra_top + lp.extra_bottom + lp.extra_left + lp.extra_right > 0;
      if (lp.pad_copy) {
        lp.padded_shape = lp.in_shape;
        lp.padded_shape.h += lp.extra_top + lp.extra_bottom;
        lp.padded_shape.w += lp.extra_left + lp.extra_right;
        lp.pad_offset = activations.add(lp.padded_shape.numel(), e);
      }
    }
  }
  plan.weight_bytes = weights.bytes();
  plan.activation_bytes = activations.bytes();

  if (plan.fused) {
    plan.groups = convolution_groups(model, plan.layers);
  } else {
    for (size_t i = 0; i < n; ++i) plan.groups.push_back(LayerGroup{-1, -1, -1, {static_cast<int>(i)}});
  }
  return plan;
}

}  // namespace mnv2::cudnn_backend
