// im2col (see im2col.cuh): one thread per column element; consecutive threads write consecutive output
// pixels of one row, so the writes are coalesced; zero where the window reaches into the padding.
#include "kernels/im2col.cuh"

namespace mnv2::kernels {
namespace {

__global__ void __launch_bounds__(kBlockThreads) im2col_kernel(const Im2colParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const int64_t pixels = static_cast<int64_t>(p.out_h) * p.out_w;
  const int64_t rows = static_cast<int64_t>(p.channels) * p.kernel_h * p.kernel_w;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= p.images * rows * pixels) return;
  const int64_t pixel = idx % pixels;
  const int64_t row = idx / pixels % rows;
  const int64_t image = idx / (pixels * rows);
  const int ow = static_cast<int>(pixel % p.out_w), oh = static_cast<int>(pixel / p.out_w);
  const int kw = static_cast<int>(row % p.kernel_w);
  const int kh = static_cast<int>(row / p.kernel_w % p.kernel_h);
  const int64_t c = row / (static_cast<int64_t>(p.kernel_w) * p.kernel_h);
  const int ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
  const int iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
  float v = 0.0f;
  if (ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w)
    v = __ldg(p.input + ((image * p.channels + c) * p.in_h + ih) * p.in_w + iw);
  p.columns[idx] = v;
}

}  // namespace

void launch_im2col(const Im2colParams& p, cudaStream_t stream) {
  if (p.images < 1 || p.channels < 1 || p.in_h < 1 || p.in_w < 1 || p.out_h < 1 || p.out_w < 1 || p.kernel_h < 1 ||
      p.kernel_w < 1 || p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.pad_top < 0 ||
      p.pad_left < 0)
    throw Error("im2col: sizes, kernel, stride and dilation must be positive, pads not negative");
  if (p.input == nullptr || p.columns == nullptr) throw Error("im2col: null operand");
  const int64_t total = static_cast<int64_t>(p.images) * p.channels * p.kernel_h * p.kernel_w * p.out_h * p.out_w;
  const int64_t blocks = ceil_div(total, kBlockThreads);
  if (blocks > 0x7fffffff) throw Error("im2col: too many columns for one launch");
  im2col_kernel<<<static_cast<unsigned>(blocks), kBlockThreads, 0, stream>>>(p);
  MNV2_CHECK_LAUNCH("im2col");
}

}  // namespace mnv2::kernels
