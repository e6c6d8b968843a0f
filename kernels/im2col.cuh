// im2col for NCHW convolutions (the baseline path): unfolds every receptive field into a column so that a
// convolution becomes a GEMM of the weights [out, in/groups * kh * kw] by the columns.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct Im2colParams {
  int images = 0;            // images unfolded by this launch
  int channels = 0;          // input channels (all groups)
  int in_h = 0, in_w = 0;    // input map, pixels
  int out_h = 0, out_w = 0;  // output map, pixels
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;  // leading zero padding
  int dilation_h = 1, dilation_w = 1;
  const float* input = nullptr;  // [images, channels, in_h, in_w]
  float* columns = nullptr;      // [images, channels * kernel_h * kernel_w, out_h * out_w]; row (c, kh, kw)
};

void launch_im2col(const Im2colParams& p, cudaStream_t stream);

}  // namespace mnv2::kernels
