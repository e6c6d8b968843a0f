// The cudnn backend's lowering (cudnn_lowering.h): descriptors, legacy calls and graph problems per layer and step.
#include "backends/cudnn/cudnn_lowering.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "backends/layer_checks.h"  // format_number
#include "gpu/check.h"
#include "mnv2/error.h"

namespace mnv2::cudnn_backend {
namespace {

const float kOne = 1.0f;
const float kZero = 0.0f;

}  // namespace

Arithmetic arithmetic_for(Precision p) {
  switch (p) {
    case Precision::fp32:
      // FMA math: plain float32 multiply-adds, no tensor cores, so no TF32 rounding of the operands;
      // pedantic cuBLAS: the prescribed float32 arithmetic whatever the environment says.
      return {};
    case Precision::tf32:
      return {p, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, CUBLAS_TF32_TENSOR_OP_MATH};
    case Precision::fp16:
      return {p, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, CUBLAS_DEFAULT_MATH};
  }
  return {};
}

int to_int(int64_t value, const std::string& what) {
  if (value < 0 || value > INT_MAX)
    throw Error("cudnn: " + what + " (" + std::to_string(value) + ") exceeds cuDNN's int range");
  return static_cast<int>(value);
}

TensorDescriptor packed_descriptor(const Shape& s, cudnnDataType_t type, bool nhwc) {
  TensorDescriptor d = make_tensor_descriptor();
  MNV2_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d.get(), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, type,
                                              to_int(s.n, "batch"), to_int(s.c, "channels"), to_int(s.h, "height"),
                                              to_int(s.w, "width")));
  return d;
}

std::vector<float> channels_last_filter(const Layer& layer) {
  const ConvParams& c = layer.conv;
  const int64_t k = c.out_channels, cg = c.in_channels / c.groups, r = c.kernel_h, sz = c.kernel_w;
  std::vector<float> out(layer.weight.size());
  for (int64_t ko = 0; ko < k; ++ko)
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t y = 0; y < r; ++y)
        for (int64_t x = 0; x < sz; ++x)
          out[static_cast<size_t>(((ko * r + y) * sz + x) * cg + ci)] =
              layer.weight[static_cast<size_t>(((ko * cg + ci) * r + y) * sz + x)];
  return out;
}

std::vector<float> channels_last_linear(const Layer& layer, const Shape& in) {
  const int64_t out = layer.out_features, c = in.c, pixels = in.h * in.w, k = c * pixels;
  std::vector<float> w(layer.weight.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t p = 0; p < pixels; ++p)
        w[static_cast<size_t>(o * k + p * c + ci)] = layer.weight[static_cast<size_t>(o * k + ci * pixels + p)];
  return w;
}

void configure(LayerOp& op, const Layer& layer, const CudnnPlan& plan, const CudnnContext& ctx) {
  const LayerPlan& lp = *op.plan;
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const ConvParams& c = layer.conv;
      if (lp.in_shape.c != c.in_channels)
        throw Error("input has " + std::to_string(lp.in_shape.c) + " channels, expected " +
                    std::to_string(c.in_channels));
      const Shape& conv_in = lp.pad_copy ? lp.padded_shape : lp.in_shape;
      op.x_desc = ctx.descriptor(conv_in);
      if (lp.pad_copy) {
        const int64_t pixel = ctx.nhwc ? lp.padded_shape.c : 1;  // elements per pixel in a row
        op.padded_interior = static_cast<char*>(op.padded) + (lp.extra_top * lp.padded_shape.w + lp.extra_left) *
                                                                 pixel * static_cast<int64_t>(ctx.element_bytes);
      }
      op.w_desc = make_filter_descriptor();
      MNV2_CHECK_CUDNN(cudnnSetFilter4dDescriptor(op.w_desc.get(), ctx.arith.data,
                                                  ctx.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, c.out_channels,
                                                  c.in_channels / c.groups, c.kernel_h, c.kernel_w));
      op.conv_desc = make_convolution_descriptor();
      // ONNX Conv is cross-correlation (the kernel is not flipped). Accumulation is float32 in every mode
      // (for fp16 storage that is cuDNN's "pseudo half" configuration).
      MNV2_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(op.conv_desc.get(), lp.sym_pad_h, lp.sym_pad_w, c.stride_h,
                                                       c.stride_w, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      MNV2_CHECK_CUDNN(cudnnSetConvolutionGroupCount(op.conv_desc.get(), c.groups));
      MNV2_CHECK_CUDNN(cudnnSetConvolutionMathType(op.conv_desc.get(), ctx.arith.conv_math));
      int on = 0, oc = 0, oh = 0, ow = 0;
      MNV2_CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(op.conv_desc.get(), op.x_desc.get(), op.w_desc.get(), &on,
                                                             &oc, &oh, &ow));
      if (!(Shape{on, oc, oh, ow} == lp.out_shape))
        throw Error("cuDNN's output " + Shape{on, oc, oh, ow}.str() + " differs from the model's " +
                    lp.out_shape.str());
      op.y_desc = ctx.descriptor(lp.out_shape);
      if (lp.has_bias) op.bias_desc = ctx.descriptor(Shape{1, c.out_channels, 1, 1});
      break;
    }
    case LayerKind::ReLU6:
    case LayerKind::ReLU: {
      if (!(lp.out_shape == lp.in_shape))
        throw Error("output " + lp.out_shape.str() + " differs from input " + lp.in_shape.str());
      op.x_desc = ctx.descriptor(lp.in_shape);
      op.y_desc = ctx.descriptor(lp.out_shape);
      op.activation = make_activation_descriptor();
      const bool unbounded = std::isinf(layer.clip_max);
      // NaN propagates: a profiler should show a broken input, not clip it into a plausible number.
      MNV2_CHECK_CUDNN(cudnnSetActivationDescriptor(
          op.activation.get(), unbounded ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_PROPAGATE_NAN,
          unbounded ? 0.0 : static_cast<double>(layer.clip_max)));
      break;
    }
    case LayerKind::ResidualAdd: {
      const Shape second =
          lp.in_layer2 == kNetworkInput ? plan.input_shape : plan.layers[static_cast<size_t>(lp.in_layer2)].out_shape;
      if (!(lp.in_shape == second) || !(lp.out_shape == lp.in_shape))
        throw Error("adds " + lp.in_shape.str() + " and " + second.str() + " into " + lp.out_shape.str());
      op.y_desc = ctx.descriptor(lp.out_shape);
      op.add = make_op_tensor_descriptor();
      MNV2_CHECK_CUDNN(
          cudnnSetOpTensorDescriptor(op.add.get(), CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
      break;
    }
    case LayerKind::GlobalAveragePool: {
      const Shape& in = lp.in_shape;
      if (!(lp.out_shape == Shape{in.n, in.c, 1, 1})) throw Error("pools " + in.str() + " into " + lp.out_shape.str());
      op.x_desc = ctx.descriptor(in);
      op.y_desc = ctx.descriptor(lp.out_shape);
      op.pooling = make_pooling_descriptor();
      // One window over the whole map, no padding: "include padding" then divides by exactly H*W.
      const int h = to_int(in.h, "height"), w = to_int(in.w, "width");
      MNV2_CHECK_CUDNN(cudnnSetPooling2dDescriptor(op.pooling.get(), CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                                   CUDNN_PROPAGATE_NAN, h, w, 0, 0, h, w));
      break;
    }
    case LayerKind::Linear: {
      if (lp.in_shape.per_image() != layer.in_features)
        throw Error("input " + lp.in_shape.str() + " does not hold " + std::to_string(layer.in_features) + " features");
      if (!(lp.out_shape == Shape{ctx.batch, layer.out_features, 1, 1}))
        throw Error("output " + lp.out_shape.str() + " is not " + std::to_string(layer.out_features) + " features");
      op.in_features = layer.in_features;
      op.out_features = layer.out_features;
      op.y_desc = ctx.descriptor(lp.out_shape);
      if (lp.has_bias) op.bias_desc = ctx.descriptor(Shape{1, layer.out_features, 1, 1});
      break;
    }
  }
}

std::string problem_key(const LayerOp& op, int device, Precision precision) {
  int n = 0, c = 0, h = 0, w = 0, k = 0, cg = 0, kh = 0, kw = 0, ph = 0, pw = 0, sh = 0, sw = 0, dh = 0, dw = 0;
  int groups = 0;
  cudnnDataType_t type{};
  cudnnTensorFormat_t format{};
  cudnnConvolutionMode_t mode{};
  int ns = 0, cs = 0, hs = 0, ws = 0;
  MNV2_CHECK_CUDNN(cudnnGetTensor4dDescriptor(op.x_desc.get(), &type, &n, &c, &h, &w, &ns, &cs, &hs, &ws));
  MNV2_CHECK_CUDNN(cudnnGetFilter4dDescriptor(op.w_desc.get(), &type, &format, &k, &cg, &kh, &kw));
  MNV2_CHECK_CUDNN(cudnnGetConvolution2dDescriptor(op.conv_desc.get(), &ph, &pw, &sh, &sw, &dh, &dw, &mode, &type));
  MNV2_CHECK_CUDNN(cudnnGetConvolutionGroupCount(op.conv_desc.get(), &groups));
  char key[256];
  std::snprintf(key, sizeof key, "gpu%d %s x=%dx%dx%dx%d%s w=%dx%dx%dx%d pad=%d,%d stride=%d,%d groups=%d", device,
                to_string(precision), n, c, h, w, cs == 1 ? " nhwc" : "", k, cg, kh, kw, ph, pw, sh, sw, groups);
  return key;
}

std::string variant_name(const LayerOp& op, const Layer& layer, Precision precision) {
  const LayerPlan& lp = *op.plan;
  switch (lp.kind) {
    case LayerKind::Conv2d: {
      std::string v =
          std::string(algorithm_name(op.algo.algo)) + " ws=" + std::to_string(op.algo.workspace_bytes) + "B";
      if (precision != Precision::fp32)
        v += std::string(" ") + to_string(precision) + (op.algo.math == CUDNN_TENSOR_OP_MATH ? " tensor-op" : " fma");
      if (lp.has_bias) v += " +bias";
      if (lp.pad_copy) {
        const ConvParams& c = layer.conv;
        v += " +padcopy[" + std::to_string(c.pad_top) + "," + std::to_string(c.pad_left) + "," +
             std::to_string(c.pad_bottom) + "," + std::to_string(c.pad_right) + "]";
      }
      return v;
    }
    case LayerKind::ReLU6:
    case LayerKind::ReLU:
      return std::isinf(layer.clip_max) ? std::string("RELU") : "CLIPPED_RELU(" + format_number(layer.clip_max) + ")";
    case LayerKind::ResidualAdd:
      return "OpTensor ADD";
    case LayerKind::GlobalAveragePool:
      return "Pooling AVG " + std::to_string(lp.in_shape.h) + "x" + std::to_string(lp.in_shape.w);
    case LayerKind::Linear: {
      const char* gemm = precision == Precision::fp32   ? "cublasSgemm (pedantic fp32)"
                         : precision == Precision::tf32 ? "cublasSgemm (TF32 tensor ops)"
                                                        : "cublasGemmEx (fp16, fp32 accumulate)";
      return lp.has_bias ? std::string(gemm) + " +bias" : std::string(gemm);
    }
  }
  return "?";
}

void execute(const LayerOp& op, const CudnnContext& ctx) {
  const LayerPlan& lp = *op.plan;
  cudnnHandle_t h = ctx.cudnn;
  switch (lp.kind) {
    case LayerKind::Conv2d: {
      const void* x = op.x;
      if (lp.pad_copy) {
        // A pitched 3-D copy into the interior (the zero border was written at prepare()). A copy engine moves it
        // at device bandwidth; cudnnTransformTensor did the same work with a transpose kernel that the profiler
        // measured at 4.5 ms of 15 ms for block2.dw at batch 64 on the H200.
        const Shape& in = lp.in_shape;
        const Shape& pad = lp.padded_shape;
        cudaMemcpy3DParms copy{};
        // cudaPitchedPtr{ptr, pitch bytes, row width, rows per slice}: the slice stride is pitch * rows.
        // NHWC: a row is w pixels of c channels, and a slice is one image.
        const size_t e = ctx.element_bytes * static_cast<size_t>(ctx.nhwc ? in.c : 1);
        const size_t slices = static_cast<size_t>(ctx.nhwc ? in.n : in.n * in.c);
        copy.srcPtr = cudaPitchedPtr{const_cast<void*>(op.x), static_cast<size_t>(in.w) * e, static_cast<size_t>(in.w),
                                     static_cast<size_t>(in.h)};
        copy.dstPtr = cudaPitchedPtr{op.padded_interior, static_cast<size_t>(pad.w) * e, static_cast<size_t>(in.w),
                                     static_cast<size_t>(pad.h)};
        copy.extent = cudaExtent{static_cast<size_t>(in.w) * e, static_cast<size_t>(in.h), slices};
        copy.kind = cudaMemcpyDeviceToDevice;
        MNV2_CHECK_CUDA(cudaMemcpy3DAsync(&copy, ctx.stream));
        x = op.padded;
      }
      MNV2_CHECK_CUDNN(cudnnConvolutionForward(h, &kOne, op.x_desc.get(), x, op.w_desc.get(), op.weight,
                                               op.conv_desc.get(), op.algo.algo, ctx.workspace, op.algo.workspace_bytes,
                                               &kZero, op.y_desc.get(), op.y));
      if (lp.has_bias)
        MNV2_CHECK_CUDNN(cudnnAddTensor(h, &kOne, op.bias_desc.get(), op.bias, &kOne, op.y_desc.get(), op.y));
      break;
    }
    case LayerKind::ReLU6:
    case LayerKind::ReLU:
      MNV2_CHECK_CUDNN(
          cudnnActivationForward(h, op.activation.get(), &kOne, op.x_desc.get(), op.x, &kZero, op.y_desc.get(), op.y));
      break;
    case LayerKind::ResidualAdd:
      MNV2_CHECK_CUDNN(cudnnOpTensor(h, op.add.get(), &kOne, op.y_desc.get(), op.x, &kOne, op.y_desc.get(), op.x2,
                                     &kZero, op.y_desc.get(), op.y));
      break;
    case LayerKind::GlobalAveragePool:
      MNV2_CHECK_CUDNN(
          cudnnPoolingForward(h, op.pooling.get(), &kOne, op.x_desc.get(), op.x, &kZero, op.y_desc.get(), op.y));
      break;
    case LayerKind::Linear: {
      // cuBLAS is column-major: the row-major logits [batch, out] are the column-major [out, batch] matrix
      // W x^T, with W [out, in] row-major read as its transpose and x [batch, in] as x^T.
      const int batch = ctx.batch;
      if (ctx.arith.data == CUDNN_DATA_HALF)
        MNV2_CHECK_CUBLAS(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, op.out_features, batch, op.in_features,
                                       &kOne, op.weight, CUDA_R_16F, op.in_features, op.x, CUDA_R_16F, op.in_features,
                                       &kZero, op.y, CUDA_R_16F, op.out_features, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
      else
        MNV2_CHECK_CUBLAS(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, op.out_features, batch, op.in_features,
                                      &kOne, static_cast<const float*>(op.weight), op.in_features,
                                      static_cast<const float*>(op.x), op.in_features, &kZero,
                                      static_cast<float*>(op.y), op.out_features));
      if (lp.has_bias)
        MNV2_CHECK_CUDNN(cudnnAddTensor(h, &kOne, op.bias_desc.get(), op.bias, &kOne, op.y_desc.get(), op.y));
      break;
    }
  }
}

ConvGraphSpec graph_spec(const LayerGroup& group, const CudnnPlan& plan, const Model& model, cudnnDataType_t io_type,
                         bool bias, bool act, bool add) {
  const LayerPlan& s = plan.layers[static_cast<size_t>(group.conv)];
  const ConvParams& c = model.layers[static_cast<size_t>(group.conv)].conv;
  ConvGraphSpec g;
  g.io_type = io_type;
  g.nhwc = plan.nhwc;
  g.n = s.in_shape.n;
  g.c = s.in_shape.c;
  g.h = s.in_shape.h;
  g.w = s.in_shape.w;
  g.k = c.out_channels;
  g.r = c.kernel_h;
  g.s = c.kernel_w;
  g.groups = c.groups;
  g.out_h = s.out_shape.h;
  g.out_w = s.out_shape.w;
  g.pad_top = c.pad_top;
  g.pad_left = c.pad_left;
  g.pad_bottom = c.pad_bottom;
  g.pad_right = c.pad_right;
  g.stride_h = c.stride_h;
  g.stride_w = c.stride_w;
  g.bias = bias && s.has_bias;
  if (act && group.act >= 0) {
    const Layer& a = model.layers[static_cast<size_t>(group.act)];
    g.act = std::isinf(a.clip_max) ? ConvGraphSpec::Act::relu : ConvGraphSpec::Act::clip;
    g.clip_max = std::isinf(a.clip_max) ? 0.0f : a.clip_max;
  }
  g.residual = add && group.add >= 0;
  return g;
}

void bind_graph(FusedGraph& f, const LayerGroup& group, const std::vector<LayerOp>& ops) {
  const ConvGraphSpec& spec = f.spec;
  const LayerOp& conv = ops[static_cast<size_t>(group.conv)];
  f.last_layer = spec.residual ? group.add : (spec.act != ConvGraphSpec::Act::none ? group.act : group.conv);
  f.uids = {kUidX, kUidW};
  f.pointers = {const_cast<void*>(conv.x), const_cast<void*>(conv.weight)};
  if (spec.bias) {
    f.uids.push_back(kUidBias);
    f.pointers.push_back(const_cast<void*>(conv.bias));
  }
  if (spec.residual) {
    const LayerOp& a = ops[static_cast<size_t>(group.add)];
    f.uids.push_back(kUidResidual);
    f.pointers.push_back(const_cast<void*>(a.plan->in_layer == f.last_layer - 1 ? a.x2 : a.x));
  }
  f.uids.push_back(kUidY);
  f.pointers.push_back(ops[static_cast<size_t>(f.last_layer)].y);
}

void execute_unit(const Unit& u, const std::vector<LayerOp>& ops, const CudnnContext& ctx) {
  if (u.fused) {
    MNV2_CHECK_CUDNN(cudnnBackendExecute(ctx.cudnn, u.fused->plan.plan.get(), u.fused->pack.get()));
    if (u.bias_after) {
      const LayerOp& conv = ops[static_cast<size_t>(u.group.layers.front())];
      MNV2_CHECK_CUDNN(
          cudnnAddTensor(ctx.cudnn, &kOne, conv.bias_desc.get(), conv.bias, &kOne, conv.y_desc.get(), conv.y));
    }
  }
  for (int layer : u.legacy) execute(ops[static_cast<size_t>(layer)], ctx);
}

}  // namespace mnv2::cudnn_backend
