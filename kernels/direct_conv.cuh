// Direct convolution, any kernel, stride, padding, dilation and groups, output NHWC; input NCHW or NHWC.
// It is the stem of the fast path (3x3 stride 2 over the 3-channel NCHW network input: the layout change to
// NHWC happens in the same pass) and the fallback for convolutions no specialised kernel takes.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct DirectConvParams {
  int batch = 0;
  int in_channels = 0;
  int in_h = 0, in_w = 0;  // input map, pixels
  int out_channels = 0;
  int out_h = 0, out_w = 0;  // output map, pixels (trailing padding is implied by them)
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;  // leading zero padding
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;  // divides in_channels and out_channels
  Layout input_layout = Layout::nhwc;
  DType dtype = DType::f32;       // of the output, and of an NHWC input; an NCHW input (the network's) is float32
  const void* input = nullptr;    // [batch, in_channels, in_h, in_w] in input_layout
  const float* weight = nullptr;  // [kernel_h, kernel_w, in_channels / groups, out_channels]
  const float* bias = nullptr;    // [out_channels] or null
  Clip clip;                      // applied to conv + bias
  void* output = nullptr;         // NHWC [batch, out_h, out_w, out_channels] of dtype; must not alias input
};

// The variant for this problem (tiles.h's chooser; operands not 16-byte aligned take scalar stores).
DirectConvVariant choose_direct_conv_variant(const DirectConvParams& p, int num_sms);

void launch_direct_conv(const DirectConvParams& p, const DirectConvVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
