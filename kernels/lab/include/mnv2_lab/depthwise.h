// Kernel lab slot "depthwise": the depthwise 3x3 convolution of MobileNetV2 (groups == channels), with bias and
// the clip (ReLU6) fused. The same fields our own kernel receives (kernels/depthwise_conv.cuh). The kernel is
//   __global__ void my_kernel(const mnv2_lab::DepthwiseParams p)
// and is the module's only __global__ function. Grid rule: one work item = MNV2_LAB_TILE's `a` consecutive
// channels x `b` consecutive output columns of one output row of one image; items =
// batch * out_h * ceil(out_w / b) * ceil(channels / a); grid.x = ceil(items / threads per block).
#pragma once

#include "mnv2_lab/lab.h"

namespace mnv2_lab {

struct DepthwiseParams {
  int batch;
  int channels;            // input and output channels (one 3x3 filter each)
  int in_h, in_w;          // input map, pixels
  int out_h, out_w;        // output map, pixels
  int stride_h, stride_w;  // 1 or 2 in MobileNetV2
  int pad_top, pad_left;   // leading zero padding; trailing padding is implied by out_h / out_w
  int dtype;               // DType of input and output
  const void* input;       // NHWC [batch, in_h, in_w, channels] of dtype
  const float* weight;     // [3][3][channels]: tap-major (tap t = 3 * r + s), then channel
  const float* bias;       // [channels] or null
  Clip clip;               // applied to conv + bias
  void* output;            // NHWC [batch, out_h, out_w, channels] of dtype; never aliases input
};

}  // namespace mnv2_lab
