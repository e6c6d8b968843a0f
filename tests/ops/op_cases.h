// The op harness's cases: each a small Model (one layer, or the few layers a backend fuses) over a table of
// shapes, MobileNetV2's real layers among them. A case is plain data until build() draws its weights.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mnv2/model.h"
#include "mnv2/tensor.h"

namespace mnv2::ops {

// What a case's model is made of (the layer indices in each model are in op_cases.cpp).
enum class Pattern {
  conv,       // one Conv2d reading the input
  clip,       // one ReLU6 / ReLU / Clip
  add,        // ReLU6(x), then ResidualAdd(ReLU6(x), x)
  gap,        // GlobalAveragePool
  linear,     // Linear over the flattened input
  conv_clip,  // Conv2d + ReLU6: the clip fused into the convolution's epilogue
  conv_add,   // pointwise + ReLU6 (the residual), Conv2d, ResidualAdd: the add fused into the epilogue
  // A pointwise convolution standing for the previous block's projection (so the pattern's input is a step's
  // output, as in the network: the cuda planner fuses a block only there), then the pattern:
  expand_dw,  // pointwise expansion + ReLU6 + depthwise 3x3 + ReLU6 (fusion expand_dw, oneDNN's fused pair)
  block,      // expand_dw + pointwise projection (+ ResidualAdd where the shapes allow): fusion block
  // Full 3x3 convolution on the input + ReLU6 + depthwise 3x3 stride 1 + ReLU6 + pointwise projection: the stem
  // and the first block, one kernel in fusion block (fused_stem).
  stem_block,
};
const char* to_string(Pattern p);

struct OpSpec {
  Pattern pattern = Pattern::conv;
  int batch = 1;
  int channels = 1, height = 1, width = 1;  // the input map
  // conv, conv_clip, conv_add, stem_block: output channels (of the stem); expand_dw, block: the expanded
  // channels; linear: out features
  int out = 1;
  int kernel = 1;  // conv, conv_clip, conv_add: 1 or 3
  int stride = 1;  // the 3x3 convolution's (conv, the depthwise of expand_dw / block, the stem of stem_block)
  std::array<int, 4> pads{0, 0, 0, 0};     // of the 3x3 convolution: top, left, bottom, right
  bool depthwise = false;                  // conv, conv_clip, conv_add: groups = channels
  bool bias = true;                        // every convolution and Linear of the case
  int project = 0;                         // block, stem_block: output channels of the projection
  float clip_min = 0.0f, clip_max = 6.0f;  // clip: the bounds (ReLU6 by default)
  bool mnv2 = false;                       // a layer of MobileNetV2 at 224x224 (named "mnv2")
};

// The case's name: the pattern, shapes, stride, pads, groups, bias and batch in a few words; unique in the
// table and stable across runs (it seeds the case's data, so --filter does not change what a case draws).
std::string case_name(const OpSpec& s);

// Every case of the table.
std::vector<OpSpec> op_specs();

// The case's model with weights drawn from `gen` (uniform in +-1/sqrt(fan-in), biases in +-0.5).
Model build_model(const OpSpec& s, std::mt19937_64& gen);

// The input: uniform in [-1, 1].
Tensor build_input(const OpSpec& s, std::mt19937_64& gen);

}  // namespace mnv2::ops
