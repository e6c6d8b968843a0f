// Lowering of the depthwise 3x3 convolution and of the fused expansion 1x1 + depthwise 3x3: weights to the
// tap-major [3][3][channels] (and the expansion's [in][expanded]) layouts the kernels read as float4s.
#include "backends/cuda/lowering.h"
#include "kernels/depthwise_conv.cuh"
#include "kernels/expand_depthwise.cuh"
#include "mnv2_lab/depthwise.h"  // kernels/lab/include: the kernel lab's slot header

namespace mnv2::cuda_backend {

namespace {
// [channels][3][3] (ONNX) -> [3][3][channels].
std::vector<float> tap_major(const Layer& l) {
  const int channels = l.conv.in_channels;
  std::vector<float> w(static_cast<size_t>(channels) * 9);
  for (int ch = 0; ch < channels; ++ch)
    for (int t = 0; t < 9; ++t) w[static_cast<size_t>(t) * channels + ch] = l.weight[ch * 9 + t];
  return w;
}

// The kernel lab's slot "depthwise": our parameters as the slot header declares them, and the grid rule of
// mnv2_lab/depthwise.h (items = batch * out_h * ceil(out_w / tile b) * ceil(channels / tile a)).
void lower_lab_depthwise(Lowering& lw, const k::DepthwiseConvParams& p, std::vector<Launch>& launches) {
  mnv2_lab::DepthwiseParams u{};
  u.batch = p.batch;
  u.channels = p.channels;
  u.in_h = p.in_h;
  u.in_w = p.in_w;
  u.out_h = p.out_h;
  u.out_w = p.out_w;
  u.stride_h = p.stride_h;
  u.stride_w = p.stride_w;
  u.pad_top = p.pad_top;
  u.pad_left = p.pad_left;
  u.dtype = p.dtype == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
  u.input = p.input;
  u.weight = p.weight;
  u.bias = p.bias;
  u.clip = mnv2_lab::Clip{p.clip.enabled, p.clip.lo, p.clip.hi};
  u.output = p.output;
  const LabKernel& kernel = *lw.lab;
  const int64_t items = int64_t{u.batch} * u.out_h * ((u.out_w + kernel.tile(1) - 1) / kernel.tile(1)) *
                        ((u.channels + kernel.tile(0) - 1) / kernel.tile(0));
  push_lab_launch(lw, u, items, launches);
}
}  // namespace

void lower_depthwise_conv(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  const ConvParams& c = layer.conv;
  const int in = layer.inputs.at(0);
  const Shape& xs = lw.shape_of(in);
  const Shape& ys = lw.out_shape(i);
  const float* bias = lw.upload_bias(layer);
  k::DepthwiseConvParams p;
  p.batch = lw.plan.config.batch;
  p.channels = c.in_channels;
  p.in_h = checked_int(xs.h, "input height");
  p.in_w = checked_int(xs.w, "input width");
  p.out_h = checked_int(ys.h, "output height");
  p.out_w = checked_int(ys.w, "output width");
  p.stride_h = c.stride_h;
  p.stride_w = c.stride_w;
  p.pad_top = c.pad_top;
  p.pad_left = c.pad_left;
  p.dtype = act_type(step);
  p.input = lw.nhwc_input(in);
  p.weight = lw.upload(tap_major(layer));
  p.bias = bias;
  if (step.clip_layer >= 0) p.clip = clip_of(lw.layer(step.clip_layer));
  p.output = lw.values[static_cast<size_t>(step.output_layer)].data;
  p.weights_before_wait = lw.plan.weights_before_wait;
  if (lab_runs(lw, step)) return lower_lab_depthwise(lw, p, launches);
  const k::DepthwiseVariant v{step.launch.vec_width, step.launch.cols, step.launch.stride, act_type(step)};
  launches.push_back([p, v](cudaStream_t s) { k::launch_depthwise_conv3x3(p, v, s); });
}

void lower_expand_depthwise(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& expand = lw.layer(i);
  const Layer& dw = lw.layer(i + 2);
  const ConvParams& ec = expand.conv;
  const int in = expand.inputs.at(0);
  const Shape& xs = lw.shape_of(in);
  const Shape& ys = lw.out_shape(i + 2);
  k::ExpandDepthwiseParams p;
  p.batch = lw.plan.config.batch;
  p.in_channels = ec.in_channels;
  p.expanded = ec.out_channels;
  p.in_h = checked_int(xs.h, "input height");
  p.in_w = checked_int(xs.w, "input width");
  p.out_h = checked_int(ys.h, "output height");
  p.out_w = checked_int(ys.w, "output width");
  p.stride_h = dw.conv.stride_h;
  p.stride_w = dw.conv.stride_w;
  p.pad_top = dw.conv.pad_top;
  p.pad_left = dw.conv.pad_left;
  std::vector<float> we(expand.weight.size());  // [k][expanded]
  for (int o = 0; o < ec.out_channels; ++o)
    for (int ci = 0; ci < ec.in_channels; ++ci)
      we[static_cast<size_t>(ci) * ec.out_channels + o] = expand.weight[static_cast<size_t>(o) * ec.in_channels + ci];
  p.input = static_cast<const float*>(lw.nhwc_input(in));
  p.expand_weight = lw.upload(we);
  p.expand_bias = lw.upload_bias(expand);
  p.expand_clip = clip_of(lw.layer(step.clip_layer));
  p.dw_weight = lw.upload(tap_major(dw));
  p.dw_bias = lw.upload_bias(dw);
  if (step.dw_clip_layer >= 0) p.dw_clip = clip_of(lw.layer(step.dw_clip_layer));
  p.output = lw.values[static_cast<size_t>(step.output_layer)].f32();
  p.weights_before_wait = lw.plan.weights_before_wait;
  const k::ExpandDepthwiseVariant v{step.launch.tile_h, step.launch.tile_w};
  launches.push_back([p, v](cudaStream_t s) { k::launch_expand_depthwise(p, v, s); });
}

}  // namespace mnv2::cuda_backend
