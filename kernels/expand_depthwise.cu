// Expansion 1x1 + depthwise 3x3 in one kernel (see expand_depthwise.cuh). A block: one image, one output
// tile, kExpandDwSlice expanded channels. Shared memory holds the input window (row stride odd, so threads
// reading different pixels' k-th value hit different banks), the slice's weights and biases, and the
// expanded window; pixels of the window outside the map are the depthwise part's zero padding.
#include <algorithm>
#include <string>

#include "kernels/expand_depthwise.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kSlice = kExpandDwSlice;
constexpr int kBlocks8 = kSlice / 8;  // 8-channel blocks per pixel in the expansion phase
constexpr int kGroups4 = kSlice / 4;  // float4 groups per pixel in the depthwise phase
static_assert(kSlice % 8 == 0, "the expansion phase computes 8 channels per thread");
constexpr int kMaxGridZ = 65535;

using Layout = ExpandDepthwiseSmem;

__host__ __device__ inline Layout layout(const ExpandDepthwiseParams& p, int tile_h, int tile_w) {
  return expand_depthwise_smem(p.in_channels, p.stride_h, p.stride_w, tile_h, tile_w);
}

__global__ void __launch_bounds__(kThreads)
    expand_depthwise_kernel(const ExpandDepthwiseParams p, int tile_h, int tile_w, int tiles_w, int image0) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const Layout l = layout(p, tile_h, tile_w);
  const int cin = p.in_channels, E = p.expanded;
  const int oh0 = static_cast<int>(blockIdx.x / tiles_w) * tile_h;
  const int ow0 = static_cast<int>(blockIdx.x % tiles_w) * tile_w;
  const int e0 = static_cast<int>(blockIdx.y) * kSlice;
  const int64_t n = image0 + blockIdx.z;
  const int ih0 = oh0 * p.stride_h - p.pad_top, iw0 = ow0 * p.stride_w - p.pad_left;

  // The slice's weights and biases (channels past E: zero weights, never stored): where they are constants
  // (weights_before_wait), before the wait for the previous kernel (PDL, common.cuh), else after it.
  auto load_weights = [&] {
    for (int i = threadIdx.x; i < cin * kSlice; i += kThreads) {
      const int k = i / kSlice, e = e0 + i % kSlice;
      smem[l.we + i] = e < E ? __ldg(p.expand_weight + static_cast<int64_t>(k) * E + e) : 0.0f;
    }
    for (int i = threadIdx.x; i < 9 * kSlice; i += kThreads) {
      const int t = i / kSlice, e = e0 + i % kSlice;
      smem[l.dw + i] = e < E ? __ldg(p.dw_weight + t * E + e) : 0.0f;
    }
    if (threadIdx.x < kSlice) {
      const int e = e0 + threadIdx.x;
      smem[l.eb + threadIdx.x] = e < E && p.expand_bias != nullptr ? __ldg(p.expand_bias + e) : 0.0f;
      smem[l.db + threadIdx.x] = e < E && p.dw_bias != nullptr ? __ldg(p.dw_bias + e) : 0.0f;
    }
  };
  if (p.weights_before_wait) load_weights();
  pdl_enter();
  // The input window.
  float* in_s = smem + l.in;
  for (int i = threadIdx.x; i < l.window * cin; i += kThreads) {
    const int px = i / cin, k = i - px * cin;
    const int ih = ih0 + px / l.window_w, iw = iw0 + px % l.window_w;
    float v = 0.0f;
    if (ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w)
      v = __ldg(p.input + ((n * p.in_h + ih) * p.in_w + iw) * cin + k);
    in_s[px * l.in_ld + k] = v;
  }
  if (!p.weights_before_wait) load_weights();
  __syncthreads();

  // Expansion: one window pixel x 8 channels per item; a warp spans 32 / kBlocks8 pixels, so the weight
  // loads are broadcasts and the input loads distinct banks.
  const float4* we4 = reinterpret_cast<const float4*>(smem + l.we);
  const float4* eb4 = reinterpret_cast<const float4*>(smem + l.eb);
  float4* ex4 = reinterpret_cast<float4*>(smem + l.ex);
  for (int item = threadIdx.x; item < l.window * kBlocks8; item += kThreads) {
    const int px = item / kBlocks8, b = item % kBlocks8;
    const int ih = ih0 + px / l.window_w, iw = iw0 + px % l.window_w;
    float4 a0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), a1 = a0;
    if (ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w) {
      a0 = eb4[2 * b];
      a1 = eb4[2 * b + 1];
      const float* x = in_s + px * l.in_ld;
#pragma unroll 4
      for (int k = 0; k < cin; ++k) {
        const float xv = x[k];
        a0 = fma4(xv, we4[k * kGroups4 + 2 * b], a0);
        a1 = fma4(xv, we4[k * kGroups4 + 2 * b + 1], a1);
      }
      a0 = apply_clip(a0, p.expand_clip);
      a1 = apply_clip(a1, p.expand_clip);
    }  // else: padding of the depthwise input, zero
    ex4[px * kGroups4 + 2 * b] = a0;
    ex4[px * kGroups4 + 2 * b + 1] = a1;
  }
  __syncthreads();

  // Depthwise: one output pixel x 4 channels per item, the taps from the expanded window.
  const float4* dw4 = reinterpret_cast<const float4*>(smem + l.dw);
  const float4* db4 = reinterpret_cast<const float4*>(smem + l.db);
  for (int item = threadIdx.x; item < tile_h * tile_w * kGroups4; item += kThreads) {
    const int g = item % kGroups4, o = item / kGroups4;
    const int th = o / tile_w, tw = o % tile_w;
    const int oh = oh0 + th, ow = ow0 + tw, e = e0 + 4 * g;
    if (oh >= p.out_h || ow >= p.out_w || e >= E) continue;
    float4 acc = db4[g];
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int px = (th * p.stride_h + r) * l.window_w + tw * p.stride_w + s;
        acc = fma4(ex4[px * kGroups4 + g], dw4[(r * 3 + s) * kGroups4 + g], acc);
      }
    *reinterpret_cast<float4*>(p.output + ((n * p.out_h + oh) * p.out_w + ow) * E + e) = apply_clip(acc, p.dw_clip);
  }
}

}  // namespace

ExpandDepthwiseShape expand_depthwise_shape(const ExpandDepthwiseParams& p) {
  return ExpandDepthwiseShape{p.in_channels, p.expanded, p.in_h,     p.in_w,    p.out_h,
                              p.out_w,       p.stride_h, p.stride_w, p.pad_top, p.pad_left};
}

int64_t expand_depthwise_smem_bytes(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v) {
  return expand_depthwise_smem_bytes(expand_depthwise_shape(p), v);
}

ExpandDepthwiseVariant choose_expand_depthwise_variant(const ExpandDepthwiseParams& p, std::string* why_not,
                                                       int64_t max_smem) {
  return choose_expand_depthwise_variant(expand_depthwise_shape(p), why_not, max_smem);
}

double expand_depthwise_recompute_factor(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v) {
  return expand_depthwise_recompute_factor(expand_depthwise_shape(p), v);
}

void launch_expand_depthwise(const ExpandDepthwiseParams& p, const ExpandDepthwiseVariant& v, cudaStream_t stream) {
  constexpr const char* kOp = "expand_depthwise";
  if (p.batch < 1 || p.in_channels < 1 || p.expanded < 1 || p.in_h < 1 || p.in_w < 1 || p.out_h < 1 || p.out_w < 1 ||
      p.stride_h < 1 || p.stride_w < 1 || p.pad_top < 0 || p.pad_left < 0 || v.tile_h < 1 || v.tile_w < 1)
    throw Error("expand_depthwise: sizes, strides and tiles must be positive, pads not negative");
  if (p.input == nullptr || p.expand_weight == nullptr || p.dw_weight == nullptr || p.output == nullptr)
    throw Error("expand_depthwise: null operand");
  if (p.output == p.input) throw Error("expand_depthwise: the output must not alias the input");
  if (p.expanded % 4 != 0 || !aligned16(p.output))
    throw Error("expand_depthwise: the output needs channels in multiples of 4 and 16-byte alignment");
  const int64_t smem = expand_depthwise_smem_bytes(p, v);
  if (smem > kExpandDwMaxSmem)
    throw Error("expand_depthwise: tile " + to_string(v) + " needs " + std::to_string(smem) +
                " bytes of shared memory");
  // Raised once to the most any tile may use (or the device allows: 64 KB on Turing), on the first (uncaptured)
  // launch: not a call to make while a graph is being captured.
  static const int64_t limit = [] {
    int device = 0, optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
      cudaGetLastError();
      return int64_t{48 * 1024};  // every CUDA GPU gives a block this much without opting in
    }
    return std::min<int64_t>(kExpandDwMaxSmem, optin);
  }();
  static const cudaError_t raised = cudaFuncSetAttribute(
      expand_depthwise_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit));
  MNV2_KERNEL_CALL(kOp, raised);
  if (smem > limit)
    throw Error("expand_depthwise: tile " + to_string(v) + " needs " + std::to_string(smem) +
                " bytes of shared memory; this GPU allows " + std::to_string(limit));
  const int tiles_w = static_cast<int>(ceil_div(p.out_w, v.tile_w));
  const int64_t tiles = ceil_div(p.out_h, v.tile_h) * tiles_w;
  if (tiles > 0x7fffffff) throw Error("expand_depthwise: too many tiles for one launch");
  const auto slices = static_cast<unsigned>(ceil_div(p.expanded, kSlice));
  for (int image0 = 0; image0 < p.batch; image0 += kMaxGridZ) {
    const auto images = static_cast<unsigned>(std::min(kMaxGridZ, p.batch - image0));
    expand_depthwise_kernel<<<dim3(static_cast<unsigned>(tiles), slices, images), kThreads, static_cast<size_t>(smem),
                              stream>>>(p, v.tile_h, v.tile_w, tiles_w, image0);
    MNV2_CHECK_LAUNCH(kOp);
  }
}

}  // namespace mnv2::kernels
