// The cpu backend's step plan (see onednn_plan.h).
#include "backends/cpu/onednn_plan.h"

namespace mnv2::cpu {
namespace {

bool is_clip(const Layer& l) { return l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU; }

}  // namespace

std::vector<FusedGroup> plan_groups(const Model& model, const DepthwiseFusion& fuse_depthwise) {
  const int n = static_cast<int>(model.layers.size());
  // How many times each layer's output is read (an add of a value with itself reads it twice).
  std::vector<int> readers(static_cast<size_t>(n), 0);
  for (const Layer& l : model.layers)
    for (int j : l.inputs)
      if (j >= 0 && j < n) ++readers[static_cast<size_t>(j)];
  auto layer = [&](int i) -> const Layer& { return model.layers[static_cast<size_t>(i)]; };
  // Whether layer `next` exists and reads `last` only, and nothing else reads `last`.
  auto sole_reader = [&](int last, int next) {
    return next < n && readers[static_cast<size_t>(last)] == 1 &&
           (layer(next).inputs.size() == 1 ? layer(next).inputs[0] == last
                                           : (layer(next).inputs[0] == last) != (layer(next).inputs[1] == last));
  };

  // oneDNN's dw post-op: a 3x3 depthwise convolution, dilation 1, the same stride (1 or 2) and leading pad
  // both ways, after a pointwise convolution that keeps the map's size.
  auto pointwise_identity = [&](const ConvParams& c) {
    return c.pointwise() && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 && c.pad_left == 0 &&
           c.pad_bottom == 0 && c.pad_right == 0 && c.dilation_h == 1 && c.dilation_w == 1;
  };
  auto fusable_depthwise = [&](const Layer& l) {
    const ConvParams& c = l.conv;
    return l.kind == LayerKind::Conv2d && c.depthwise() && c.kernel_h == 3 && c.kernel_w == 3 && c.dilation_h == 1 &&
           c.dilation_w == 1 && c.stride_h == c.stride_w && (c.stride_h == 1 || c.stride_h == 2) &&
           c.pad_top == c.pad_left && c.pad_bottom == c.pad_right && c.pad_top <= 1 && c.pad_bottom <= 1;
  };

  std::vector<FusedGroup> groups;
  for (int i = 0; i < n;) {
    FusedGroup g;
    g.layers = {i};
    if (layer(i).kind == LayerKind::Conv2d) {
      int last = i;
      if (sole_reader(last, last + 1) && is_clip(layer(last + 1)) && layer(last + 1).inputs.size() == 1) {
        g.clip = ++last;
        g.layers.push_back(last);
      }
      if (fuse_depthwise && pointwise_identity(layer(i).conv) && sole_reader(last, last + 1) &&
          fusable_depthwise(layer(last + 1)) && layer(last + 1).inputs.size() == 1) {
        FusedGroup candidate = g;
        candidate.depthwise = last + 1;
        candidate.layers.push_back(last + 1);
        if (sole_reader(last + 1, last + 2) && is_clip(layer(last + 2)) && layer(last + 2).inputs.size() == 1) {
          candidate.depthwise_clip = last + 2;
          candidate.layers.push_back(last + 2);
        }
        if (fuse_depthwise(candidate)) {
          i = candidate.output() + 1;
          groups.push_back(std::move(candidate));
          continue;
        }
      }
      if (sole_reader(last, last + 1) && layer(last + 1).kind == LayerKind::ResidualAdd &&
          layer(last + 1).inputs.size() == 2) {
        const Layer& add = layer(last + 1);
        const int other = add.inputs[0] == last ? add.inputs[1] : add.inputs[0];
        // The other operand must be computed before this step runs: an earlier layer or the network input.
        if (other < i) {
          g.add = ++last;
          g.residual = other;
          g.layers.push_back(last);
          if (sole_reader(last, last + 1) && is_clip(layer(last + 1)) && layer(last + 1).inputs.size() == 1) {
            g.clip_after_add = ++last;
            g.layers.push_back(last);
          }
        }
      }
    }
    i = g.output() + 1;
    groups.push_back(std::move(g));
  }
  return groups;
}

std::string group_name(const Model& model, const FusedGroup& group) {
  std::string name;
  for (int l : group.layers)
    name += (name.empty() ? "" : " + ") + std::string(to_string(model.layers[static_cast<size_t>(l)].kind)) + " " +
            std::to_string(l);
  return name;
}

}  // namespace mnv2::cpu
