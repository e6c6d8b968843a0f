// Lowering of the direct convolution (the stem, reading the NCHW network input itself, and any convolution
// the depthwise and GEMM paths do not take): weights to [kh][kw][in/groups][out], one launch.
#include "backends/cuda/lowering.h"
#include "kernels/direct_conv.cuh"
#include "mnv2/error.h"
#include "mnv2_lab/stem.h"  // kernels/lab/include: the kernel lab's slot header

namespace mnv2::cuda_backend {

namespace {
// The kernel lab's slot "stem" (mnv2_lab/stem.h): our parameters as the slot header declares them (the input NCHW
// float32, the output NHWC of the activation type), and its grid rule: items = batch * out_h * ceil(out_w / tile b)
// * ceil(out_channels / tile a).
void lower_lab_stem(Lowering& lw, const k::DirectConvParams& p, std::vector<Launch>& launches) {
  if (p.input_layout != k::Layout::nchw) throw Error("lab: the stem slot reads the NCHW network input only");
  mnv2_lab::StemParams u{};
  u.batch = p.batch;
  u.in_channels = p.in_channels;
  u.in_h = p.in_h;
  u.in_w = p.in_w;
  u.out_channels = p.out_channels;
  u.out_h = p.out_h;
  u.out_w = p.out_w;
  u.kernel_h = p.kernel_h;
  u.kernel_w = p.kernel_w;
  u.stride_h = p.stride_h;
  u.stride_w = p.stride_w;
  u.pad_top = p.pad_top;
  u.pad_left = p.pad_left;
  u.dilation_h = p.dilation_h;
  u.dilation_w = p.dilation_w;
  u.groups = p.groups;
  u.dtype = p.dtype == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
  u.input = static_cast<const float*>(p.input);
  u.weight = p.weight;
  u.bias = p.bias;
  u.clip = mnv2_lab::Clip{p.clip.enabled, p.clip.lo, p.clip.hi};
  u.output = p.output;
  const LabKernel& kernel = *lw.lab;
  const int64_t items = int64_t{u.batch} * u.out_h * ((u.out_w + kernel.tile(1) - 1) / kernel.tile(1)) *
                        ((u.out_channels + kernel.tile(0) - 1) / kernel.tile(0));
  push_lab_launch(lw, u, items, launches);
}
}  // namespace

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
  p.dtype = act_type(step);
  p.input = nchw ? lw.input.data : lw.nhwc_input(in);
  p.output = lw.values[static_cast<size_t>(step.output_layer)].data;
  p.bias = lw.upload_bias(layer);
  p.weight = lw.upload(w);
  if (step.clip_layer >= 0) p.clip = clip_of(lw.layer(step.clip_layer));
  if (lab_runs(lw, step)) return lower_lab_stem(lw, p, launches);
  const k::DirectConvVariant v{step.launch.co, step.launch.taps27};
  launches.push_back([p, v](cudaStream_t s) { k::launch_direct_conv(p, v, s); });
}

}  // namespace mnv2::cuda_backend
