// Kernel lab slot "pointwise": the 1x1 convolution of MobileNetV2 as a GEMM on NHWC maps, output[pixel][o] =
// clip(sum_k input[pixel][k] * weight[k][o] + bias[o]) + residual[pixel][o], with bias, the clip (ReLU6) and the
// residual add of the projection layers fused. The same fields our own kernels receive (kernels/pointwise_conv.cuh,
// kernels/gemm_tc.cuh). The kernel is
//   __global__ void my_kernel(const mnv2_lab::PointwiseParams p)
// and is the module's only __global__ function. Grid rule: one work item = MNV2_LAB_TILE's `a` consecutive output
// channels x `b` consecutive pixels; items = ceil(out_channels / a) * ceil(pixels / b), channel groups fastest
// (item = pixel_group * ceil(out_channels / a) + channel_group, a suggestion: the order is the kernel's);
// grid.x = ceil(items / threads per block).
#pragma once

#include "mnv2_lab/lab.h"

namespace mnv2_lab {

struct PointwiseParams {
  int pixels;            // batch * height * width: the GEMM's M
  int in_channels;       // K
  int out_channels;      // N
  int dtype;             // DType of input, weight, residual and output (half everything in fp16 runs)
  const void* input;     // [pixels][in_channels] of dtype (NHWC)
  const void* weight;    // [in_channels][out_channels] of dtype (the 1x1 filters transposed)
  const float* bias;     // [out_channels] float32, or null
  Clip clip;             // applied to the product + bias
  const void* residual;  // [pixels][out_channels] of dtype, added after the clip, or null
  void* output;          // [pixels][out_channels] of dtype; never aliases input or residual
};

}  // namespace mnv2_lab
