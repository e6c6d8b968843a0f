// Depthwise 3x3 convolution on NHWC maps (groups == channels), any stride and any padding, asymmetric
// included, with bias and clip (ReLU6) fused. Other depthwise kernel sizes go to direct_conv.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct DepthwiseConvParams {
  int batch = 0;
  int channels = 0;          // input and output channels (one filter each)
  int in_h = 0, in_w = 0;    // input map, pixels
  int out_h = 0, out_w = 0;  // output map, pixels (the caller derives them from pads and stride)
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;  // leading zero padding; trailing padding is implied by out_h / out_w
  DType dtype = DType::f32;       // element type of input and output (weights and bias stay float32)
  const void* input = nullptr;    // NHWC [batch, in_h, in_w, channels] of dtype
  const float* weight = nullptr;  // [3, 3, channels]: tap-major, so a float4 holds four channels' tap
  const float* bias = nullptr;    // [channels] or null
  Clip clip;                      // applied to conv + bias
  void* output = nullptr;         // NHWC [batch, out_h, out_w, channels] of dtype; must not alias input
  // The weights are written by no kernel that may still be running when this one starts (uploaded before the
  // stream's work): under PDL the taps are loaded before the wait for the previous kernel (common.cuh pdl_wait).
  // false: after it.
  bool weights_before_wait = false;
};

// The variant for this problem (tiles.h's chooser; unaligned operands take one channel per thread).
DepthwiseVariant choose_depthwise_variant(const DepthwiseConvParams& p, int num_sms);

void launch_depthwise_conv3x3(const DepthwiseConvParams& p, const DepthwiseVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
