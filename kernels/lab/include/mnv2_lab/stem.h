// Kernel lab slot "stem": the convolution that reads the network input (MobileNetV2's 3x3 stride-2 stem, 3 -> 32
// channels), with bias and the clip (ReLU6) fused. It reads the input as given, NCHW float32, and writes the NHWC
// map the rest of the network reads: the layout change happens in the same pass. The same fields our own kernel
// receives (kernels/direct_conv.cuh). The kernel is
//   __global__ void my_kernel(const mnv2_lab::StemParams p)
// and is the module's only __global__ function. Grid rule: one work item = MNV2_LAB_TILE's `a` consecutive output
// channels x `b` consecutive output columns of one output row of one image; items =
// batch * out_h * ceil(out_w / b) * ceil(out_channels / a); grid.x = ceil(items / threads per block).
#pragma once

#include "mnv2_lab/lab.h"

namespace mnv2_lab {

struct StemParams {
  int batch;
  int in_channels;             // 3 (RGB) in MobileNetV2
  int in_h, in_w;              // input map, pixels
  int out_channels;            // 32 in MobileNetV2
  int out_h, out_w;            // output map, pixels
  int kernel_h, kernel_w;      // 3 x 3 in MobileNetV2
  int stride_h, stride_w;      // 2 in MobileNetV2
  int pad_top, pad_left;       // leading zero padding; trailing padding is implied by out_h / out_w
  int dilation_h, dilation_w;  // 1 in MobileNetV2
  int groups;                  // 1 in MobileNetV2; divides in_channels and out_channels
  int dtype;                   // DType of the output; the input is float32 in every run
  const float* input;          // NCHW [batch, in_channels, in_h, in_w] float32: the network input as given
  const float* weight;         // [kernel_h][kernel_w][in_channels / groups][out_channels]: output channel fastest
  const float* bias;           // [out_channels] or null
  Clip clip;                   // applied to conv + bias
  void* output;                // NHWC [batch, out_h, out_w, out_channels] of dtype
};

}  // namespace mnv2_lab
