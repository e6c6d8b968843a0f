// How the cpu backend groups the topology into steps, as plain data (no oneDNN types, testable alone): a
// Conv2d absorbs, as post-ops of its oneDNN primitive, the clip right after it, then either the residual add
// right after that and a clip after the add, or (a pointwise convolution) the depthwise 3x3 convolution right
// after it and that one's clip — each only where it is the sole reader of what it follows, and the depthwise
// one only where the caller says oneDNN has a fused kernel for it. Every other layer is a step of its own.
// The last layer of a group is the only one it materialises.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mnv2/model.h"

namespace mnv2::cpu {

struct FusedGroup {
  std::vector<int> layers;       // consecutive topology layers, ascending; the first runs, the others are post-ops
  int clip = -1;                 // a clip layer on the convolution's output (eltwise post-op), or -1
  int add = -1;                  // a ResidualAdd on the convolution's (clipped) output (sum post-op), or -1
  int residual = kNetworkInput;  // with add >= 0: the add's other operand, a layer before the group or the input
  int clip_after_add = -1;       // a clip layer on the add's output (eltwise post-op after the sum), or -1
  int depthwise = -1;       // a depthwise 3x3 Conv2d on the (clipped) pointwise output (oneDNN's dw post-op), or -1
  int depthwise_clip = -1;  // a clip layer on the depthwise output (eltwise post-op after it), or -1

  int anchor() const { return layers.front(); }
  int output() const { return layers.back(); }  // the materialised layer
};

// Whether a candidate group with a depthwise convolution should run as one primitive (the cpu backend asks
// oneDNN whether it has a JIT kernel for the fusion; its generic fallback runs the two one after the other).
using DepthwiseFusion = std::function<bool(const FusedGroup& candidate)>;

// One group per step, in execution order; together they cover every layer once. Without `fuse_depthwise`
// no depthwise convolution is fused.
std::vector<FusedGroup> plan_groups(const Model& model, const DepthwiseFusion& fuse_depthwise = {});

// "Conv2d 5 + ReLU6 6", the step's name in reports.
std::string group_name(const Model& model, const FusedGroup& group);

}  // namespace mnv2::cpu
