// What the two whole-block kernel tests share (test_kernels_fused_block.cpp, fp16; test_kernels_fused_block_ffma.cpp,
// fp32): a case, MobileNetV2's block shapes, the kernel's shape and a case's parameters but for the operands.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>

#include "backends/cpu/cpu_ops.h"  // conv_output_extent
#include "kernels/fused_block.cuh"

namespace mnv2::test {

struct BlockCase {
  int batch, cin, expanded, cout, h, w, stride;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool residual, clip;

  int out_h() const { return cpu::conv_output_extent(h, pad_top, pad_bottom, 3, stride, 1); }
  int out_w() const { return cpu::conv_output_extent(w, pad_left, pad_right, 3, stride, 1); }
  std::string str(uint64_t seed) const {
    std::ostringstream what;
    what << "batch " << batch << " " << cin << "->" << expanded << "->" << cout << " map " << h << "x" << w
         << " stride " << stride << " pads [" << pad_top << "," << pad_left << "," << pad_bottom << "," << pad_right
         << "] residual " << residual << " clip " << clip << " MNV2_TEST_SEED=" << seed;
    return what.str();
  }
  kernels::FusedBlockShape shape() const {
    kernels::FusedBlockShape s;
    s.batch = batch;
    s.in_channels = cin;
    s.expanded = expanded;
    s.out_channels = cout;
    s.in_h = h;
    s.in_w = w;
    s.out_h = out_h();
    s.out_w = out_w();
    s.stride = stride;
    s.pad_top = pad_top;
    s.pad_left = pad_left;
    s.residual = residual;
    return s;
  }
  // The launch's parameters with the case's clips (ReLU6 or none); the operands are the caller's.
  kernels::FusedBlockParams params() const {
    kernels::FusedBlockParams p;
    p.shape = shape();
    p.expand_clip = kernels::Clip{clip, 0.0f, 6.0f};
    p.dw_clip = kernels::Clip{clip, 0.0f, 6.0f};
    return p;
  }
};

// The operands of a launch, in FusedBlockParams' order (device pointers).
inline void set_operands(kernels::FusedBlockParams& p, const void* input, const void* expand_weight,
                         const float* expand_bias, const float* dw_weight, const float* dw_bias,
                         const void* project_weight, const float* project_bias, void* output) {
  p.input = input;
  p.expand_weight = expand_weight;
  p.expand_bias = expand_bias;
  p.dw_weight = dw_weight;
  p.dw_bias = dw_bias;
  p.project_weight = project_weight;
  p.project_bias = project_bias;
  p.output = output;
}

// MobileNetV2's expanding blocks at batch 1: cin, E, cout, map, stride, pads [t, l, b, r] as the main model's
// (TF-style for stride 2), residual.
inline constexpr BlockCase kMobileNetBlocks[] = {
    {1, 16, 96, 24, 112, 112, 2, 0, 0, 1, 1, false, true},  // block2
    {1, 24, 144, 24, 56, 56, 1, 1, 1, 1, 1, true, true},    // block3
    {1, 24, 144, 32, 56, 56, 2, 0, 0, 1, 1, false, true},   // block4
    {1, 32, 192, 32, 28, 28, 1, 1, 1, 1, 1, true, true},    // block5, 6
    {1, 32, 192, 64, 28, 28, 2, 0, 0, 1, 1, false, true},   // block7
    {1, 64, 384, 64, 14, 14, 1, 1, 1, 1, 1, true, true},    // block8-10
    {1, 64, 384, 96, 14, 14, 1, 1, 1, 1, 1, false, true},   // block11
    {1, 96, 576, 96, 14, 14, 1, 1, 1, 1, 1, true, true},    // block12, 13
    {1, 96, 576, 160, 14, 14, 2, 0, 0, 1, 1, false, true},  // block14
    {1, 160, 960, 160, 7, 7, 1, 1, 1, 1, 1, true, true},    // block15, 16
    {1, 160, 960, 320, 7, 7, 1, 1, 1, 1, 1, false, true},   // block17
};

// Odd cases for the tensor-core kernels (fp16, TF32: channels multiples of 8): maps, pads and channel counts the
// network does not have.
inline constexpr BlockCase kOddTensorCoreBlocks[] = {
    {2, 24, 72, 24, 13, 13, 1, 1, 1, 1, 1, true, true},   // odd map, E not a chunk multiple
    {3, 16, 40, 24, 9, 11, 2, 0, 0, 1, 1, false, true},   // odd, non-square, stride 2 TF pads
    {2, 8, 20, 16, 5, 7, 1, 1, 1, 1, 1, false, false},    // E not a multiple of 8, no clips
    {1, 32, 96, 40, 15, 17, 2, 1, 1, 1, 1, false, true},  // symmetric stride-2 pads, cout not a multiple of 32
    {2, 48, 288, 48, 3, 3, 1, 1, 1, 1, 1, true, true},    // a 3x3 map
    {1, 40, 120, 40, 1, 1, 1, 1, 1, 1, 1, true, true},    // a 1x1 map: only the centre tap
};

}  // namespace mnv2::test
