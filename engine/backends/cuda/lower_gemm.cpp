// Lowering of everything that runs as a GEMM: the fast path's 1x1 convolutions (NHWC pixels x channels, FFMA
// in fp32, tensor cores in tf32 and fp16), the Linear layer, and the baseline's im2col + GEMM convolutions.
// Weights are transposed (and permuted, padded or rounded to half) here; the tile came from the plan.
#include <algorithm>

#include "backends/cuda/lowering.h"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tc.cuh"
#include "kernels/im2col.cuh"
#include "kernels/pointwise_conv.cuh"
#include "mnv2/error.h"
#include "mnv2_lab/classifier.h"  // kernels/lab/include: the kernel lab's slot headers
#include "mnv2_lab/pointwise.h"

namespace mnv2::cuda_backend {

namespace {

k::GemmVariant gemm_variant(const CudaStep& step) {
  k::GemmVariant v;
  if (!k::parse_gemm_tile(step.launch.tile, &v.tile))
    throw Error("cuda: the plan names no GEMM tile: '" + step.launch.tile + "'");
  v.vec4 = step.launch.vec;
  v.splits = step.launch.splits;
  v.reduce_in_kernel = step.launch.splitk_in_kernel;
  return v;
}

k::TcGemmVariant tc_variant(const CudaStep& step) {
  k::TcGemmVariant v;
  if (!k::parse_tc_tile(step.launch.tile, &v.tile))
    throw Error("cuda: the plan names no tensor-core GEMM tile: '" + step.launch.tile + "'");
  v.vec = step.launch.vec;
  v.splits = step.launch.splits;
  v.reduce_in_kernel = step.launch.splitk_in_kernel;
  v.reduce_in_cluster = step.launch.splitk_cluster;
  return v;
}

// [out][in] (ONNX) -> [in][out]: B of the NHWC GEMM.
std::vector<float> transposed(const Layer& layer) {
  const ConvParams& c = layer.conv;
  std::vector<float> w(layer.weight.size());
  for (int o = 0; o < c.out_channels; ++o)
    for (int ci = 0; ci < c.in_channels; ++ci)
      w[static_cast<size_t>(ci) * c.out_channels + o] = layer.weight[static_cast<size_t>(o) * c.in_channels + ci];
  return w;
}

}  // namespace

void lower_pointwise(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  const ConvParams& c = layer.conv;
  const int in = layer.inputs.at(0);
  const Shape& ys = lw.out_shape(i);
  void* y = lw.values[static_cast<size_t>(step.output_layer)].data;
  const float* bias = lw.upload_bias(layer);
  const k::Clip clip = step.clip_layer >= 0 ? clip_of(lw.layer(step.clip_layer)) : k::Clip{};
  const void* residual = step.residual >= 0 ? lw.values[static_cast<size_t>(step.residual)].data : nullptr;
  float* workspace = lw.gemm_workspace;
  if (lab_runs(lw, step)) {
    // The kernel lab's slot "pointwise" (mnv2_lab/pointwise.h): weights in the activations' type, as the
    // tensor-core path keeps them; items = ceil(out_channels / tile a) * ceil(pixels / tile b).
    mnv2_lab::PointwiseParams u{};
    u.pixels = checked_int(ys.n * ys.h * ys.w, "output pixels");
    u.in_channels = c.in_channels;
    u.out_channels = c.out_channels;
    u.dtype = act_type(step) == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
    u.input = lw.nhwc_input(in);
    u.weight = lw.upload_gemm_weights(step, transposed(layer));
    u.bias = bias;
    u.clip = mnv2_lab::Clip{clip.enabled, clip.lo, clip.hi};
    u.residual = residual;
    u.output = y;
    const LabKernel& kernel = *lw.lab;
    const int64_t items = ((int64_t{u.out_channels} + kernel.tile(0) - 1) / kernel.tile(0)) *
                          ((int64_t{u.pixels} + kernel.tile(1) - 1) / kernel.tile(1));
    push_lab_launch(lw, u, items, launches);
    return;
  }
  if (step.kernel == CudaKernel::pointwise_tc) {
    // Pixels [pixels, in] by the weights [in, out]: TF32 operands on float32 storage, or half.
    k::TcGemmParams g;
    g.m = checked_int(ys.n * ys.h * ys.w, "output pixels");
    g.n = c.out_channels;
    g.k = c.in_channels;
    g.in_type = g.out_type = act_type(step);
    g.a = lw.nhwc_input(in);
    g.lda = c.in_channels;
    g.b = lw.upload_gemm_weights(step, transposed(layer));
    g.b_before_wait = lw.plan.weights_before_wait;
    g.ldb = c.out_channels;
    g.c = y;
    g.ldc = c.out_channels;
    g.bias = bias;
    g.clip = clip;
    g.residual = residual;
    g.ldr = c.out_channels;
    g.workspace = workspace;
    g.tile_counters = lw.gemm_tile_counters;
    const k::TcGemmVariant v = tc_variant(step);
    launches.push_back([g, v](cudaStream_t s) { k::launch_gemm_tc(g, v, s); });
    return;
  }
  k::PointwiseConvParams p;
  p.pixels = ys.n * ys.h * ys.w;
  p.in_channels = c.in_channels;
  p.out_channels = c.out_channels;
  p.input = static_cast<const float*>(lw.nhwc_input(in));
  p.weight = lw.upload(transposed(layer));
  p.weight_before_wait = lw.plan.weights_before_wait;
  p.bias = bias;
  p.clip = clip;
  p.residual = static_cast<const float*>(residual);
  p.output = static_cast<float*>(y);
  p.workspace = workspace;
  p.tile_counters = lw.gemm_tile_counters;
  const k::GemmVariant v = gemm_variant(step);
  launches.push_back([p, v](cudaStream_t s) { k::launch_pointwise_conv(p, v, s); });
}

// Linear: logits[batch, out] = x[batch, in] * W^T + b as the GEMM with B = W^T [in, padded out]. An NHWC input
// with a map larger than 1x1 flattens in (h, w, c) order, so W's columns are permuted to match.
void lower_linear(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  const int in = layer.inputs.at(0);
  const Shape& xs = lw.shape_of(in);
  const int K = layer.in_features, O = layer.out_features, padded = step.padded_features;
  const int64_t plane = xs.h * xs.w;
  std::vector<float> w(static_cast<size_t>(K) * padded, 0.0f);
  for (int o = 0; o < O; ++o)
    for (int kk = 0; kk < K; ++kk) {
      // kk is the NCHW feature index c * plane + pixel; NHWC storage holds it at pixel * C + c.
      const int64_t row = step.permute_weights ? (kk % plane) * xs.c + kk / plane : kk;
      w[static_cast<size_t>(row) * padded + o] = layer.weight[static_cast<size_t>(o) * K + kk];
    }
  std::vector<float> bias;
  if (!layer.bias.empty()) {
    bias.assign(static_cast<size_t>(padded), 0.0f);
    std::copy(layer.bias.begin(), layer.bias.end(), bias.begin());
  }
  const Value& out = lw.values[static_cast<size_t>(i)];
  const int batch = lw.plan.config.batch;
  if (lab_runs(lw, step)) {
    // The kernel lab's slot "classifier" (mnv2_lab/classifier.h): what our GEMMs get, the weights in the
    // activations' type (as the tensor-core path keeps them); items = ceil(out_features / tile a) *
    // ceil(batch / tile b).
    mnv2_lab::ClassifierParams u{};
    u.batch = batch;
    u.in_features = K;
    u.out_features = O;
    u.ld_weight = padded;
    u.ld_output = padded;
    u.dtype = act_type(step) == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
    u.out_dtype = out.dtype == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
    u.input = lw.step_input(step, in);
    u.weight = lw.upload_gemm_weights(step, w);
    u.bias = bias.empty() ? nullptr : lw.upload(bias);
    u.output = out.data;
    const int64_t items = ((int64_t{O} + lw.lab->tile(0) - 1) / lw.lab->tile(0)) *
                          ((int64_t{batch} + lw.lab->tile(1) - 1) / lw.lab->tile(1));
    push_lab_launch(lw, u, items, launches);
    return;
  }
  if (step.kernel == CudaKernel::linear_tc) {
    k::TcGemmParams g;
    g.m = batch;
    g.n = padded;
    g.k = K;
    g.in_type = act_type(step);
    g.out_type = out.dtype;
    g.a = lw.step_input(step, in);
    g.lda = K;
    g.b = lw.upload_gemm_weights(step, w);
    g.b_before_wait = lw.plan.weights_before_wait;
    g.ldb = padded;
    g.c = out.data;
    g.ldc = padded;
    g.bias = bias.empty() ? nullptr : lw.upload(bias);
    g.workspace = lw.gemm_workspace;
    g.tile_counters = lw.gemm_tile_counters;
    const k::TcGemmVariant v = tc_variant(step);
    launches.push_back([g, v](cudaStream_t s) { k::launch_gemm_tc(g, v, s); });
    return;
  }
  k::GemmParams p;
  p.m = batch;
  p.n = padded;
  p.k = K;
  p.a = static_cast<const float*>(lw.step_input(step, in));
  p.lda = K;
  p.b = lw.upload(w);
  p.b_before_wait = lw.plan.weights_before_wait;
  p.ldb = padded;
  p.c = out.f32();
  p.ldc = padded;
  if (!bias.empty()) {
    p.bias_mode = k::BiasMode::per_col;
    p.bias = lw.upload(bias);
  }
  p.workspace = lw.gemm_workspace;
  p.tile_counters = lw.gemm_tile_counters;
  const k::GemmVariant v = gemm_variant(step);
  launches.push_back([p, v](cudaStream_t s) { k::launch_gemm(p, v, s); });
}

// The baseline's convolution, NCHW: per chunk of images, im2col into the columns workspace (not for 1x1
// stride-1 convolutions, whose input already is the columns) and the grouped GEMM weights x columns.
void lower_im2col_gemm(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  const ConvParams& c = layer.conv;
  const int in = layer.inputs.at(0);
  const Shape& xs = lw.shape_of(in);
  const Shape& ys = lw.out_shape(i);
  const float* x = static_cast<const float*>(lw.step_input(step, in));
  float* y = lw.values[static_cast<size_t>(i)].f32();
  const int groups = c.groups;
  const int cin_g = c.in_channels / groups, cout_g = c.out_channels / groups;
  const int64_t taps = static_cast<int64_t>(c.kernel_h) * c.kernel_w;
  const int64_t kg = cin_g * taps;
  const int64_t pixels = ys.h * ys.w;
  const int64_t rows_all = c.in_channels * taps;
  const bool identity = c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 &&
                        c.pad_left == 0 && ys.h == xs.h && ys.w == xs.w;
  const int chunk = step.launch.images_per_launch;

  k::GemmParams g;
  g.m = cout_g;
  g.n = checked_int(pixels, "output pixels");
  g.k = checked_int(kg, "GEMM depth");
  g.a = lw.upload(layer.weight);  // [out, in/groups * kh * kw] row-major: A as it is
  g.a_before_wait = lw.plan.weights_before_wait;
  g.lda = kg;
  g.a_inner_stride = static_cast<int64_t>(cout_g) * kg;
  g.ldb = pixels;
  g.b_inner_stride = kg * pixels;
  g.b_outer_stride = rows_all * pixels;
  g.ldc = pixels;
  g.c_inner_stride = cout_g * pixels;
  g.c_outer_stride = c.out_channels * pixels;
  g.inner = groups;
  if (!layer.bias.empty()) {
    g.bias_mode = k::BiasMode::per_row;
    g.bias = lw.upload(layer.bias);
    g.bias_inner_stride = cout_g;
  }
  g.workspace = lw.gemm_workspace;
  g.tile_counters = lw.gemm_tile_counters;
  const k::GemmVariant v = gemm_variant(step);

  k::Im2colParams col;
  col.channels = c.in_channels;
  col.in_h = checked_int(xs.h, "input height");
  col.in_w = checked_int(xs.w, "input width");
  col.out_h = checked_int(ys.h, "output height");
  col.out_w = checked_int(ys.w, "output width");
  col.kernel_h = c.kernel_h;
  col.kernel_w = c.kernel_w;
  col.stride_h = c.stride_h;
  col.stride_w = c.stride_w;
  col.pad_top = c.pad_top;
  col.pad_left = c.pad_left;
  col.dilation_h = c.dilation_h;
  col.dilation_w = c.dilation_w;
  float* columns = lw.im2col_workspace;
  const int batch = lw.plan.config.batch;
  const int64_t x_image = xs.per_image(), y_image = ys.per_image();
  launches.push_back([g, v, col, identity, chunk, batch, x, y, x_image, y_image, columns](cudaStream_t s) {
    for (int first = 0; first < batch; first += chunk) {
      const int images = std::min(chunk, batch - first);
      k::GemmParams p = g;
      p.batch = images * p.inner;
      p.c = y + first * y_image;
      if (identity) {
        p.b = x + first * x_image;
      } else {
        k::Im2colParams q = col;
        q.images = images;
        q.input = x + first * x_image;
        q.columns = columns;
        k::launch_im2col(q, s);
        p.b = columns;
      }
      k::launch_gemm(p, v, s);
    }
  });
}

}  // namespace mnv2::cuda_backend
