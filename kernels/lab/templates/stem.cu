// Kernel lab template, slot "stem": our simplest correct stem convolution (one thread per output element: one
// output channel of one output pixel; reads the NCHW float32 input, writes NHWC). Edit it, then:
// mnv2 lab --slot stem --kernel THIS_FILE.cu
#include <cuda_fp16.h>

#include "mnv2_lab/stem.h"

MNV2_LAB_BLOCK(256, 1, 1);  // threads per block
MNV2_LAB_TILE(1, 1);        // per thread: 1 output channel x 1 output column (the slot's grid rule)

__global__ void stem_conv(const mnv2_lab::StemParams p) {
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long total = static_cast<long long>(p.batch) * p.out_h * p.out_w * p.out_channels;
  if (idx >= total) return;
  // NHWC output: the output channel varies fastest, so neighbouring threads store neighbouring addresses and
  // read neighbouring weights (the weights' output channel is fastest too).
  const int co = static_cast<int>(idx % p.out_channels);
  long long rest = idx / p.out_channels;
  const int ow = static_cast<int>(rest % p.out_w);
  rest /= p.out_w;
  const int oh = static_cast<int>(rest % p.out_h);
  const int n = static_cast<int>(rest / p.out_h);
  const int cin_g = p.in_channels / p.groups;
  const int cout_g = p.out_channels / p.groups;
  const int g = co / cout_g;
  float acc = 0.0f;
  for (int kh = 0; kh < p.kernel_h; ++kh) {
    const int ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    if (ih < 0 || ih >= p.in_h) continue;
    for (int kw = 0; kw < p.kernel_w; ++kw) {
      const int iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
      if (iw < 0 || iw >= p.in_w) continue;
      for (int ci = 0; ci < cin_g; ++ci) {
        const int c = g * cin_g + ci;
        const float x = p.input[((static_cast<long long>(n) * p.in_channels + c) * p.in_h + ih) * p.in_w + iw];
        const float w = p.weight[((kh * p.kernel_w + kw) * cin_g + ci) * p.out_channels + co];
        acc = fmaf(x, w, acc);
      }
    }
  }
  if (p.bias != nullptr) acc += p.bias[co];
  acc = mnv2_lab::apply_clip(acc, p.clip);
  if (p.dtype == mnv2_lab::kF16)
    static_cast<__half*>(p.output)[idx] = __float2half_rn(acc);
  else
    static_cast<float*>(p.output)[idx] = acc;
}
