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
};

// Tuning: channels per thread (16-byte accesses: 4 floats or 8 halves, which need channels in multiples of
// that and 16-byte aligned operands; else one) and output columns per thread, which share their input columns in
// registers (3 + (cols - 1) * stride loads instead of 3 * cols). The column count needs a compile-time stride: 1 and 2
// have their own code, other strides run one column per thread.
struct DepthwiseVariant {
  int vec = 1;               // channels per thread: 4 (f32) or 8 (f16) in one 16-byte access, or 1
  int cols = 1;              // output columns per thread: 4 (stride 1), 2 (stride 2) or 1
  int stride = 0;            // compile-time stride the kernel was built for: 1, 2, or 0 (any, from the params)
  DType dtype = DType::f32;  // of input and output; arithmetic is float32 either way
};

// num_sms: multiprocessors of the device (small problems get one column per thread, for more warps).
DepthwiseVariant choose_depthwise_variant(const DepthwiseConvParams& p, int num_sms);
std::string to_string(const DepthwiseVariant& v);  // "dw3x3 s1 vec4 cols4", "dw3x3 s1 half8 cols4"

void launch_depthwise_conv3x3(const DepthwiseConvParams& p, const DepthwiseVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
