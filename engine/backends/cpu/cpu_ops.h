// Float32 NCHW kernels of the reference path (backend cpu-ref): direct loops, oneDNN's sgemm and OpenMP.
// They know no network: each takes raw buffers, a parameter struct and the number of threads to split its
// work over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mnv2::cpu {

// Each worker thread's part of the kernels run while a log is active on the calling thread (the timeline's
// worker spans): first start and last end of the thread's work in its parallel regions, steady-clock
// nanoseconds since the clock's epoch. One slot per thread, a cache line each, so workers never share one.
class ThreadSpanLog {
 public:
  struct alignas(64) Span {
    int64_t begin_ns = -1;  // -1: the thread did no work since reset()
    int64_t end_ns = -1;
  };
  void reset(int threads) { spans_.assign(static_cast<size_t>(threads > 0 ? threads : 0), Span{}); }
  // Called by worker `thread` only; threads beyond the reset size are not noted.
  void note(int thread, int64_t begin_ns, int64_t end_ns) {
    if (thread < 0 || static_cast<size_t>(thread) >= spans_.size()) return;
    Span& s = spans_[static_cast<size_t>(thread)];
    if (s.begin_ns < 0) s.begin_ns = begin_ns;
    s.end_ns = end_ns;
  }
  const std::vector<Span>& spans() const { return spans_; }

 private:
  std::vector<Span> spans_;
};

// Makes `log` the active one of the calling thread while it lives (the kernels read it before they open a
// parallel region, so their workers note into it); the previous one is restored after.
class ScopedThreadSpanLog {
 public:
  explicit ScopedThreadSpanLog(ThreadSpanLog* log);
  ~ScopedThreadSpanLog();
  ScopedThreadSpanLog(const ScopedThreadSpanLog&) = delete;
  ScopedThreadSpanLog& operator=(const ScopedThreadSpanLog&) = delete;

 private:
  ThreadSpanLog* previous_;
};

// One convolution over a whole batch. Layouts: input [batch, in_channels, in_h, in_w], weight
// [out_channels, in_channels / groups, kernel_h, kernel_w], output [batch, out_channels, out_h, out_w].
struct ConvShape {
  int batch = 1;
  int in_channels = 0;
  int in_h = 0, in_w = 0;  // input map, pixels
  int out_channels = 0;
  int out_h = 0, out_w = 0;  // output map, pixels; must agree with conv_output_extent()
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0;  // leading zero padding; trailing padding is implied by out_h/out_w
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;  // in_channels and out_channels are multiples of it
};

// Output length along one axis, or <= 0 when the padded input is shorter than the dilated kernel.
int conv_output_extent(int in, int pad_begin, int pad_end, int kernel, int stride, int dilation);

// How a convolution is computed; recorded in the report as the step's variant.
enum class ConvVariant {
  pointwise_gemm,    // 1x1, stride 1, no pads, groups 1: one GEMM per image, no copy of the input
  depthwise_direct,  // groups == in == out channels: direct loops, 3x3 stride 1/2 on a fast path
  im2col_gemm,       // anything else: unfold the input per group, then GEMM
};
const char* to_string(ConvVariant variant);
ConvVariant choose_conv_variant(const ConvShape& shape);

// Scratch floats conv2d() needs for this shape and variant (0 when it needs none).
int64_t conv_workspace_floats(const ConvShape& shape, ConvVariant variant);

// output = conv(input, weight) + bias. bias may be null (no bias). workspace holds
// conv_workspace_floats() floats. Accumulates in float32.
void conv2d(const ConvShape& shape, ConvVariant variant, const float* input, const float* weight, const float* bias,
            float* output, float* workspace, int threads);

// out[i] = min(max(in[i], lo), hi); in may equal out.
void clip(const float* in, float* out, int64_t count, float lo, float hi, int threads);

// out[i] = a[i] + b[i]; out may equal a or b.
void add(const float* a, const float* b, float* out, int64_t count, int threads);

// out[p] = mean of the plane_size values of plane p; planes = batch * channels.
void global_average_pool(const float* in, float* out, int64_t planes, int64_t plane_size, int threads);

// out[batch, out_features] = in[batch, in_features] * weight[out_features, in_features]^T + bias.
// bias may be null.
void linear(const float* in, const float* weight, const float* bias, float* out, int batch, int in_features,
            int out_features, int threads);

// Row-major C = alpha * op(A) * op(B) + beta * C (trans 'N' or 'T') on the calling thread when called inside
// an OpenMP parallel region (oneDNN never nests), on the OpenMP threads otherwise. oneDNN's sgemm picks
// its kernel from CPUID. Aborts on arguments no caller may pass (negative sizes, short leading dimensions).
void sgemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace mnv2::cpu
