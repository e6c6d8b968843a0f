// Depthwise 3x3 convolution, NHWC (see depthwise_conv.cuh). One thread computes `kCols` neighbouring output
// pixels of one row for `kVec` channels: consecutive threads take consecutive channel groups, so a warp's
// loads and stores are contiguous 16-byte runs along the channel axis. The nine taps live in registers.
#include <algorithm>

#include "kernels/depthwise_conv.cuh"

namespace mnv2::kernels {
namespace {

// grid.y holds the image index; larger batches take several launches.
constexpr int kMaxGridY = 65535;

// T: float or __half storage; kVec channels per thread move in one 16-byte access (or one each); the
// arithmetic is float32 FFMA. With float4s the nine taps are loaded once into registers; with 8 channels per
// thread (half8: 72 tap values) each filter row is loaded as it is used (L1 hits), to keep the registers for
// the accumulators and the input columns.
template <class T, int kVec, int kCols, int kStride>
__global__ void __launch_bounds__(kBlockThreads) depthwise3x3_kernel(const DepthwiseConvParams p, int image0) {
  static_assert(kStride > 0 || kCols == 1, "several columns per thread need a compile-time stride");
  constexpr int kStep = kStride > 0 ? kStride : 0;  // input columns between neighbouring outputs, in x[]
  constexpr int kInCols = kStride > 0 ? (kCols - 1) * kStride + 3 : 3;
  constexpr bool kTapsUpfront = kVec <= 4;

  // grid.y walks images (from image0), grid.x this image's threads: 32-bit index arithmetic.
  const int C = p.channels;
  const int groups = C / kVec;
  const int col_groups = (p.out_w + kCols - 1) / kCols;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.out_h * col_groups * groups) return;
  const int g = idx % groups;
  const int rest = idx / groups;
  const int cg = rest % col_groups;
  const int oh = rest / col_groups;
  const int64_t n = image0 + blockIdx.y;
  const int c = g * kVec;
  const int sh = kStride > 0 ? kStride : p.stride_h;
  const int sw = kStride > 0 ? kStride : p.stride_w;
  const T* input = static_cast<const T*>(p.input);

  // The taps: all nine in registers (float4), or each filter row as it is used (half8) and then, where the weights
  // are constants (weights_before_wait), the first row's before the PDL wait (common.cuh), the rest after it.
  float w[kTapsUpfront ? 9 : 3][kVec];
  auto load_taps = [&] {
    if constexpr (kTapsUpfront) {
#pragma unroll
      for (int t = 0; t < 9; ++t) load_floats<float, kVec>(p.weight + t * C + c, w[t]);
    } else {
#pragma unroll
      for (int s = 0; s < 3; ++s) load_floats<float, kVec>(p.weight + s * C + c, w[s]);
    }
  };
  const bool early = p.weights_before_wait;
  if (early) load_taps();
  pdl_enter();
  if (kTapsUpfront && !early) load_taps();
  float acc[kCols][kVec];
#pragma unroll
  for (int o = 0; o < kCols; ++o)
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[o][v] = 0.0f;

  const int ow0 = cg * kCols;
  const int iw0 = ow0 * sw - p.pad_left;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int ih = oh * sh - p.pad_top + r;
    if (ih < 0 || ih >= p.in_h) continue;
    if constexpr (!kTapsUpfront) {
      if (r > 0 || !early) {  // row 0's taps came before the wait
#pragma unroll
        for (int s = 0; s < 3; ++s) load_floats<float, kVec>(p.weight + (r * 3 + s) * C + c, w[s]);
      }
    }
    const T* row = input + ((n * p.in_h + ih) * p.in_w) * C + c;
    float x[kInCols][kVec];
#pragma unroll
    for (int j = 0; j < kInCols; ++j) {
      const int iw = iw0 + j;
      if (iw >= 0 && iw < p.in_w) {
        load_floats<T, kVec>(row + static_cast<int64_t>(iw) * C, x[j]);
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) x[j][v] = 0.0f;
      }
    }
#pragma unroll
    for (int o = 0; o < kCols; ++o)
#pragma unroll
      for (int s = 0; s < 3; ++s)
#pragma unroll
        for (int v = 0; v < kVec; ++v)
          acc[o][v] = fmaf(x[o * kStep + s][v], w[kTapsUpfront ? r * 3 + s : s][v], acc[o][v]);
  }
  T* out = static_cast<T*>(p.output) + ((n * p.out_h + oh) * p.out_w) * C + c;
#pragma unroll
  for (int o = 0; o < kCols; ++o)
    if (ow0 + o < p.out_w)
      epilogue_store<T, kVec>(out + static_cast<int64_t>(ow0 + o) * C, acc[o], p.bias != nullptr ? p.bias + c : nullptr,
                              p.clip, nullptr);
}

template <class T, int kVec, int kCols, int kStride>
void launch(const DepthwiseConvParams& p, cudaStream_t stream) {
  const int64_t threads = static_cast<int64_t>(p.out_h) * ceil_div(p.out_w, kCols) * (p.channels / kVec);
  if (threads > 0x7fffffff) throw Error("depthwise_conv: one image's map is too large for one launch");
  const auto blocks = static_cast<unsigned>(ceil_div(threads, kBlockThreads));
  for (int image0 = 0; image0 < p.batch; image0 += kMaxGridY) {
    const auto images = static_cast<unsigned>(std::min(kMaxGridY, p.batch - image0));
    depthwise3x3_kernel<T, kVec, kCols, kStride><<<dim3(blocks, images), kBlockThreads, 0, stream>>>(p, image0);
    MNV2_CHECK_LAUNCH("depthwise_conv3x3");
  }
}

template <class T, int kVec>
void launch_vec(const DepthwiseConvParams& p, const DepthwiseVariant& v, cudaStream_t stream) {
  switch (v.stride * 10 + v.cols) {
    case 14:
      return launch<T, kVec, 4, 1>(p, stream);
    case 11:
      return launch<T, kVec, 1, 1>(p, stream);
    case 22:
      return launch<T, kVec, 2, 2>(p, stream);
    case 21:
      return launch<T, kVec, 1, 2>(p, stream);
    case 1:
      return launch<T, kVec, 1, 0>(p, stream);
    default:
      throw Error("depthwise_conv: no kernel for " + to_string(v));
  }
}

// Channels per 16-byte access of the element type.
int wide_vec(DType t) { return 16 / dtype_bytes(t); }

bool wide_ok(const DepthwiseConvParams& p) {
  return p.channels % wide_vec(p.dtype) == 0 && aligned16(p.input) && aligned16(p.weight) && aligned16(p.output) &&
         (p.bias == nullptr || aligned16(p.bias));
}

}  // namespace

DepthwiseVariant choose_depthwise_variant(const DepthwiseConvParams& p, int num_sms) {
  const bool aligned =
      aligned16(p.input) && aligned16(p.weight) && aligned16(p.output) && (p.bias == nullptr || aligned16(p.bias));
  return choose_depthwise_variant(
      DepthwiseShape{p.batch, p.channels, p.out_h, p.out_w, p.stride_h, p.stride_w, p.dtype, aligned}, num_sms);
}

void launch_depthwise_conv3x3(const DepthwiseConvParams& p, const DepthwiseVariant& v, cudaStream_t stream) {
  if (p.batch < 1 || p.channels < 1 || p.in_h < 1 || p.in_w < 1 || p.out_h < 1 || p.out_w < 1 || p.stride_h < 1 ||
      p.stride_w < 1 || p.pad_top < 0 || p.pad_left < 0)
    throw Error("depthwise_conv: sizes and strides must be positive, pads not negative");
  if (p.input == nullptr || p.weight == nullptr || p.output == nullptr) throw Error("depthwise_conv: null operand");
  if (p.output == p.input) throw Error("depthwise_conv: the output must not alias the input");
  if (v.stride != 0 && (p.stride_h != v.stride || p.stride_w != v.stride))
    throw Error("depthwise_conv: variant " + to_string(v) + " does not fit strides " + std::to_string(p.stride_h) +
                "x" + std::to_string(p.stride_w));
  if (v.dtype != p.dtype)
    throw Error(std::string("depthwise_conv: variant for ") + to_string(v.dtype) + " data, parameters hold " +
                to_string(p.dtype));
  if (v.vec != 1) {
    if (v.vec != wide_vec(p.dtype)) throw Error("depthwise_conv: no kernel for " + to_string(v));
    if (!wide_ok(p))
      throw Error("depthwise_conv: " + std::to_string(v.vec) + " channels per thread need channels in multiples of " +
                  std::to_string(v.vec) + " and 16-byte aligned operands");
    if (p.dtype == DType::f16) return launch_vec<__half, 8>(p, v, stream);
    return launch_vec<float, 4>(p, v, stream);
  }
  if (p.dtype == DType::f16) return launch_vec<__half, 1>(p, v, stream);
  return launch_vec<float, 1>(p, v, stream);
}

}  // namespace mnv2::kernels
