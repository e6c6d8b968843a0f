// How the cpu backend groups the topology into steps, as plain data (no oneDNN types, testable alone): a
// Conv2d absorbs, as post-ops of its oneDNN primitive, the clip right after it, then the residual add right
// after that, then a clip right after the add — each only where it is the sole reader of what it follows.
// Every other layer is a step of its own. The last layer of a group is the only one it materialises.
#pragma once

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

  int anchor() const { return layers.front(); }
  int output() const { return layers.back(); }  // the materialised layer
};

// One group per step, in execution order; together they cover every layer once.
std::vector<FusedGroup> plan_groups(const Model& model);

// "Conv2d 5 + ReLU6 6", the step's name in reports.
std::string group_name(const Model& model, const FusedGroup& group);

}  // namespace mnv2::cpu
