// Lowering of the direct convolution (the stem, reading the NCHW network input itself, and any convolution
// the depthwise and GEMM paths do not take): weights to [kh][kw][in/groups][out], one launch.
#include "backends/cuda/lowering.h"
#include "kernels/direct_conv.cuh"

namespace mnv2::cuda_backend {

void lower_direct_conv(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  const ConvParams& c = layer.conv;
  const int in = layer.inputs.at(0);
  const bool nchw = in == kNetworkInput;
  const Shape& xs = lw.shape_of(in);
  const Shape& ys = lw.out_shape(i);
  const int cin_g = c.in_channels / c.groups;
  std::vector<float> w(layer.weight.size());
  for (int o = 0; o < c.out_channels; ++o)
    for (int ci = 0; ci < cin_g; ++ci)
      for (int kh = 0; kh < c.kernel_h; ++kh)
        for (int kw = 0; kw < c.kernel_w; ++kw)
          w[((static_cast<size_t>(kh) * c.kernel_w + kw) * cin_g + ci) * c.out_channels + o] =
              layer.weight[((static_cast<size_t>(o) * cin_g + ci) * c.kernel_h + kh) * c.kernel_w + kw];
  k::DirectConvParams p;
  p.batch = lw.plan.config.batch;
  p.in_channels = c.in_channels;
  p.in_h = checked_int(xs.h, "input height");
  p.in_w = checked_int(xs.w, "input width");
  p.out_channels = c.out_channels;
  p.out_h = checked_int(ys.h, "output height");
  p.out_w = checked_int(ys.w, "output width");
  p.kernel_h = c.kernel_h;
  p.kernel_w = c.kernel_w;
  p.stride_h = c.stride_h;
  p.stride_w = c.stride_w;
  p.pad_top = c.pad_top;
  p.pad_left = c.pad_left;
  p.dilation_h = c.dilation_h;
  p.dilation_w = c.dilation_w;
  p.groups = c.groups;
  p.input_layout = nchw ? k::Layout::nchw : k::Layout::nhwc;
  p.dtype = lw.act;
  p.input = nchw ? lw.input.data : lw.nhwc_input(in);
  p.output = lw.values[static_cast<size_t>(step.output_layer)].data;
  p.bias = lw.upload_bias(layer);
  p.weight = lw.upload(w);
  if (step.clip_layer >= 0) p.clip = clip_of(lw.layer(step.clip_layer));
  const k::DirectConvVariant v{step.launch.co, step.launch.taps27};
  launches.push_back([p, v](cudaStream_t s) { k::launch_direct_conv(p, v, s); });
}

}  // namespace mnv2::cuda_backend
