// A 1x1 expansion convolution followed by a depthwise 3x3 convolution in one kernel (the first two
// convolutions of an inverted-residual block), NHWC, each with its bias and clip (ReLU6): the expanded map
// lives in shared memory only, never in device memory. Any stride and padding of the depthwise part.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/common.cuh"

namespace mnv2::kernels {

struct ExpandDepthwiseParams {
  int batch = 0;
  int in_channels = 0;       // channels of the input (the expansion's k)
  int expanded = 0;          // channels of the expanded map and of the output; a multiple of 4
  int in_h = 0, in_w = 0;    // input map = expanded map, pixels
  int out_h = 0, out_w = 0;  // output map (the caller derives it from pads and stride)
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;         // the depthwise part's leading zero padding; trailing is implied
  const float* input = nullptr;          // NHWC [batch, in_h, in_w, in_channels]
  const float* expand_weight = nullptr;  // [in_channels, expanded]: row k holds every expanded channel's weight
  const float* expand_bias = nullptr;    // [expanded] or null
  Clip expand_clip;                      // applied to expansion + bias
  const float* dw_weight = nullptr;      // [3, 3, expanded]: tap-major
  const float* dw_bias = nullptr;        // [expanded] or null
  Clip dw_clip;                          // applied to depthwise + bias
  float* output = nullptr;               // NHWC [batch, out_h, out_w, expanded], 16-byte aligned; not the input
  // The weights are written by no kernel that may still be running when this one starts (uploaded before the
  // stream's work): under PDL the slice's are loaded before the wait for the previous kernel (common.cuh
  // pdl_wait). false: after it.
  bool weights_before_wait = false;
};

// The tile choice, shared memory and recomputation of tiles.h for this problem.
ExpandDepthwiseShape expand_depthwise_shape(const ExpandDepthwiseParams& p);
int64_t expand_depthwise_smem_bytes(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v);
ExpandDepthwiseVariant choose_expand_depthwise_variant(const ExpandDepthwiseParams& p, std::string* why_not,
                                                       int64_t max_smem = kExpandDwMaxSmem);
double expand_depthwise_recompute_factor(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v);

void launch_expand_depthwise(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
