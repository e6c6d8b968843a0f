// Direct convolution (see direct_conv.cuh). One thread computes `kCo` consecutive output channels of one
// output pixel; consecutive threads take consecutive channel groups of the same pixel, so their stores are
// contiguous and they share every input value they load (one L1 line serves the whole group).
#include <algorithm>
#include <type_traits>

#include "kernels/direct_conv.cuh"

namespace mnv2::kernels {
namespace {

// grid.y holds the image index; larger batches take several launches.
constexpr int kMaxGridY = 65535;

// TOut: float or __half; the input is float32 when NCHW (the network input), else TOut.
template <bool kNchw, int kCo, class TOut>
__global__ void __launch_bounds__(kBlockThreads) direct_conv_kernel(const DirectConvParams p, int image0) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  using TIn = std::conditional_t<kNchw, float, TOut>;
  const TIn* input = static_cast<const TIn*>(p.input);
  // grid.y walks images (from image0), grid.x this image's threads: 32-bit index arithmetic.
  const int Cin = p.in_channels, Cout = p.out_channels;
  const int co_groups = Cout / kCo;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.out_h * p.out_w * co_groups) return;
  const int co0 = idx % co_groups * kCo;
  const int pixel_in_image = idx / co_groups;
  const int ow = pixel_in_image % p.out_w;
  const int oh = pixel_in_image / p.out_w;
  const int64_t n = image0 + blockIdx.y;
  const int64_t pixel = n * p.out_h * p.out_w + pixel_in_image;
  const int cin_g = Cin / p.groups;
  const int ci_base = co0 / (Cout / p.groups) * cin_g;

  float acc[kCo];
#pragma unroll
  for (int v = 0; v < kCo; ++v) acc[v] = p.bias != nullptr ? __ldg(p.bias + co0 + v) : 0.0f;

  for (int kh = 0; kh < p.kernel_h; ++kh) {
    const int ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    if (ih < 0 || ih >= p.in_h) continue;
    for (int kw = 0; kw < p.kernel_w; ++kw) {
      const int iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
      if (iw < 0 || iw >= p.in_w) continue;
      const float* wp = p.weight + (static_cast<int64_t>(kh * p.kernel_w + kw) * cin_g) * Cout + co0;
      // Input values of this tap: channel ci_base + ci at (n, ih, iw).
      const TIn* xp;
      int64_t x_step;
      if constexpr (kNchw) {
        xp = input + ((n * Cin + ci_base) * p.in_h + ih) * p.in_w + iw;
        x_step = static_cast<int64_t>(p.in_h) * p.in_w;
      } else {
        xp = input + ((n * p.in_h + ih) * p.in_w + iw) * Cin + ci_base;
        x_step = 1;
      }
      for (int ci = 0; ci < cin_g; ++ci) {
        const float x = to_float(__ldg(xp + ci * x_step));
        const float* wr = wp + static_cast<int64_t>(ci) * Cout;
        if constexpr (kCo % 4 == 0) {
#pragma unroll
          for (int v = 0; v < kCo; v += 4) {
            const float4 w4 = Vec<4>::load(wr + v);
            acc[v + 0] = fmaf(x, w4.x, acc[v + 0]);
            acc[v + 1] = fmaf(x, w4.y, acc[v + 1]);
            acc[v + 2] = fmaf(x, w4.z, acc[v + 2]);
            acc[v + 3] = fmaf(x, w4.w, acc[v + 3]);
          }
        } else {
#pragma unroll
          for (int v = 0; v < kCo; ++v) acc[v] = fmaf(x, __ldg(wr + v), acc[v]);
        }
      }
    }
  }
  // The bias is already in acc; 4 channels (16 or 8 bytes) per store where kCo allows.
  TOut* out = static_cast<TOut*>(p.output) + pixel * Cout + co0;
  constexpr int kW = kCo % 4 == 0 ? 4 : 1;
#pragma unroll
  for (int v = 0; v < kCo; v += kW) {
    float part[kW];
#pragma unroll
    for (int j = 0; j < kW; ++j) part[j] = acc[v + j];
    epilogue_store<TOut, kW>(out + v, part, nullptr, p.clip, nullptr);
  }
}

// The stem's shape (3x3 taps over 3 input channels per group) with every loop bound known at compile time:
// the 27 input values of a pixel are loaded at once (27 loads in flight instead of a chain of 27 waits, which
// bounded the generic loop at 0.7 ms for the stem at batch 256, run 2), then multiplied by 27 x kCo weights.
template <bool kNchw, int kCo, class TOut>
__global__ void __launch_bounds__(kBlockThreads) conv3x3x3_kernel(const DirectConvParams p, int image0) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  using TIn = std::conditional_t<kNchw, float, TOut>;
  const TIn* input = static_cast<const TIn*>(p.input);
  constexpr int kTaps = 27;
  const int Cin = p.in_channels, Cout = p.out_channels;
  const int co_groups = Cout / kCo;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= p.out_h * p.out_w * co_groups) return;
  const int co0 = idx % co_groups * kCo;
  const int pixel_in_image = idx / co_groups;
  const int ow = pixel_in_image % p.out_w;
  const int oh = pixel_in_image / p.out_w;
  const int64_t n = image0 + blockIdx.y;
  const int64_t pixel = n * p.out_h * p.out_w + pixel_in_image;
  const int ci_base = co0 / (Cout / p.groups) * 3;

  float x[kTaps];
#pragma unroll
  for (int kh = 0; kh < 3; ++kh) {
    const int ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
#pragma unroll
    for (int kw = 0; kw < 3; ++kw) {
      const int iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
      const bool inside = ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w;
#pragma unroll
      for (int ci = 0; ci < 3; ++ci) {
        int64_t at;
        if constexpr (kNchw) {
          at = ((n * Cin + ci_base + ci) * p.in_h + ih) * p.in_w + iw;
        } else {
          at = ((n * p.in_h + ih) * p.in_w + iw) * Cin + ci_base + ci;
        }
        x[(kh * 3 + kw) * 3 + ci] = inside ? to_float(__ldg(input + at)) : 0.0f;
      }
    }
  }
  float acc[kCo];
#pragma unroll
  for (int v = 0; v < kCo; ++v) acc[v] = p.bias != nullptr ? __ldg(p.bias + co0 + v) : 0.0f;
    // Weight row t (tap-major, [kh][kw][ci]) for channels co0..: every thread of a warp reads the same row
    // when kCo covers the group, so each load is one broadcast.
#pragma unroll
  for (int t = 0; t < kTaps; ++t) {
    const float* wr = p.weight + static_cast<int64_t>(t) * Cout + co0;
    if constexpr (kCo % 4 == 0) {
#pragma unroll
      for (int v = 0; v < kCo; v += 4) {
        const float4 w4 = Vec<4>::load(wr + v);
        acc[v + 0] = fmaf(x[t], w4.x, acc[v + 0]);
        acc[v + 1] = fmaf(x[t], w4.y, acc[v + 1]);
        acc[v + 2] = fmaf(x[t], w4.z, acc[v + 2]);
        acc[v + 3] = fmaf(x[t], w4.w, acc[v + 3]);
      }
    } else {
#pragma unroll
      for (int v = 0; v < kCo; ++v) acc[v] = fmaf(x[t], __ldg(wr + v), acc[v]);
    }
  }
  // The bias is already in acc; 4 channels (16 or 8 bytes) per store where kCo allows.
  TOut* out = static_cast<TOut*>(p.output) + pixel * Cout + co0;
  constexpr int kW = kCo % 4 == 0 ? 4 : 1;
#pragma unroll
  for (int v = 0; v < kCo; v += kW) {
    float part[kW];
#pragma unroll
    for (int j = 0; j < kW; ++j) part[j] = acc[v + j];
    epilogue_store<TOut, kW>(out + v, part, nullptr, p.clip, nullptr);
  }
}

bool is_3x3x3(const DirectConvParams& p) {
  return p.kernel_h == 3 && p.kernel_w == 3 && p.groups > 0 && p.in_channels / p.groups == 3;
}

// Whether co output channels per thread are allowed: 4 channels of the output per store, 16 bytes (float) or
// 8 (half) at 16-byte aligned pixels.
bool vector_ok(const DirectConvParams& p, int co) {
  const int cout_g = p.groups > 0 ? p.out_channels / p.groups : 0;
  return p.out_channels % 4 == 0 && cout_g % co == 0 && aligned16(p.weight) && aligned16(p.output);
}

template <bool kNchw, int kCo, class TOut>
void launch(const DirectConvParams& p, bool fixed, cudaStream_t stream) {
  const int64_t threads = static_cast<int64_t>(p.out_h) * p.out_w * (p.out_channels / kCo);
  if (threads > 0x7fffffff) throw Error("direct_conv: one image's map is too large for one launch");
  const auto blocks = static_cast<unsigned>(ceil_div(threads, kBlockThreads));
  for (int image0 = 0; image0 < p.batch; image0 += kMaxGridY) {
    const auto images = static_cast<unsigned>(std::min(kMaxGridY, p.batch - image0));
    if (fixed) {
      conv3x3x3_kernel<kNchw, kCo, TOut><<<dim3(blocks, images), kBlockThreads, 0, stream>>>(p, image0);
    } else {
      direct_conv_kernel<kNchw, kCo, TOut><<<dim3(blocks, images), kBlockThreads, 0, stream>>>(p, image0);
    }
    MNV2_CHECK_LAUNCH("direct_conv");
  }
}

template <bool kNchw, class TOut>
void launch_layout(const DirectConvParams& p, const DirectConvVariant& v, cudaStream_t stream) {
  switch (v.co) {
    case 32:
      return launch<kNchw, 32, TOut>(p, v.taps27, stream);
    case 16:
      return launch<kNchw, 16, TOut>(p, v.taps27, stream);
    case 8:
      return launch<kNchw, 8, TOut>(p, v.taps27, stream);
    case 4:
      return launch<kNchw, 4, TOut>(p, v.taps27, stream);
    case 1:
      return launch<kNchw, 1, TOut>(p, v.taps27, stream);
    default:
      throw Error("direct_conv: no kernel for " + std::to_string(v.co) + " output channels per thread");
  }
}

}  // namespace

DirectConvVariant choose_direct_conv_variant(const DirectConvParams& p, int num_sms) {
  const DirectConvShape s{p.batch,    p.in_channels, p.out_channels,
                          p.out_h,    p.out_w,       p.groups,
                          p.kernel_h, p.kernel_w,    aligned16(p.weight) && aligned16(p.output)};
  return choose_direct_conv_variant(s, num_sms);
}

void launch_direct_conv(const DirectConvParams& p, const DirectConvVariant& v, cudaStream_t stream) {
  if (p.batch < 1 || p.in_channels < 1 || p.out_channels < 1 || p.in_h < 1 || p.in_w < 1 || p.out_h < 1 ||
      p.out_w < 1 || p.kernel_h < 1 || p.kernel_w < 1 || p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 ||
      p.dilation_w < 1 || p.pad_top < 0 || p.pad_left < 0 || p.groups < 1)
    throw Error("direct_conv: sizes, kernel, stride, dilation and groups must be positive, pads not negative");
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0)
    throw Error("direct_conv: groups " + std::to_string(p.groups) + " must divide the channel counts");
  if (p.input == nullptr || p.weight == nullptr || p.output == nullptr) throw Error("direct_conv: null operand");
  if (p.output == p.input) throw Error("direct_conv: the output must not alias the input");
  if (v.taps27 && !is_3x3x3(p))
    throw Error("direct_conv: the 3x3x3 variant needs a 3x3 kernel over 3 channels per group");
  if (v.co != 1 && !vector_ok(p, v.co))
    throw Error("direct_conv: " + std::to_string(v.co) +
                " channels per thread need (out_channels / groups) in multiples of it, out_channels in multiples "
                "of 4 and 16-byte aligned weights and output");
  if (p.dtype == DType::f16) {
    if (p.input_layout == Layout::nchw) return launch_layout<true, __half>(p, v, stream);
    return launch_layout<false, __half>(p, v, stream);
  }
  if (p.input_layout == Layout::nchw) return launch_layout<true, float>(p, v, stream);
  return launch_layout<false, float>(p, v, stream);
}

}  // namespace mnv2::kernels
