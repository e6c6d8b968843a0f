// Float32 NCHW kernels of the reference path. GEMM-shaped work goes to oneDNN's sgemm on slices that
// OpenMP threads own (called inside a parallel region, it runs on the calling thread); the other loops are
// written to auto-vectorise.
#include "backends/cpu/cpu_ops.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// Hot loops are compiled for AVX-512 and AVX2+FMA besides the baseline; the loader picks one per
// machine, so the same binary runs (slower) on a CPU without them.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MNV2_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MNV2_CPU_CLONES
#endif

namespace mnv2::cpu {
namespace {

thread_local ThreadSpanLog* t_active_log = nullptr;

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One worker's part of a parallel region, noted when it leaves the region; nothing without a log.
class WorkerSpan {
 public:
  explicit WorkerSpan(ThreadSpanLog* log) : log_(log), begin_ns_(log ? steady_now_ns() : 0) {}
  ~WorkerSpan() {
    if (log_) log_->note(omp_get_thread_num(), begin_ns_, steady_now_ns());
  }
  WorkerSpan(const WorkerSpan&) = delete;
  WorkerSpan& operator=(const WorkerSpan&) = delete;

 private:
  ThreadSpanLog* log_;
  int64_t begin_ns_;
};

// Column slices handed to threads start on a multiple of this many floats (one 64-byte cache line),
// so two threads never write the same line of an output row.
constexpr int64_t kColumnAlign = 16;
// A GEMM is split by columns only when every thread gets at least this many; below that the
// micro-kernel runs mostly on its edge path and splitting the output rows is better.
constexpr int64_t kMinColumnsPerThread = 64;
// Elementwise work below this many floats runs on one thread: a parallel region costs about as much
// as the work itself.
constexpr int64_t kMinParallelFloats = 32768;

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Part `part` of `parts` of [0, n), boundaries on multiples of `align`; may be empty.
void split_range(int64_t n, int parts, int part, int64_t align, int64_t* begin, int64_t* end) {
  const int64_t blocks = (n + align - 1) / align;
  *begin = std::min(n, blocks * part / parts * align);
  *end = std::min(n, blocks * (part + 1) / parts * align);
}

MNV2_CPU_CLONES
void fill_rows(float* c, int64_t ldc, int64_t rows, int64_t cols, const float* row_values) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = c + r * ldc;
    const float v = row_values[r];
    for (int64_t j = 0; j < cols; ++j) row[j] = v;
  }
}

// c[m x n] = a[m x k] * b[k x n] (+ bias per row of c); row-major, on the calling thread.
void gemm_bias_rows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    const float* bias, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  // Seeding c with the bias and accumulating (beta = 1) costs one pass; beta = 0 would cost the same
  // pass to zero c plus another to add the bias.
  if (bias) fill_rows(c, ldc, m, n, bias);
  sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, bias ? 1.0f : 0.0f, c, ldc);
}

void conv_pointwise(const ConvShape& s, const float* input, const float* weight, const float* bias, float* output,
                    int threads) {
  const int64_t m = s.out_channels, k = s.in_channels;
  const int64_t n = static_cast<int64_t>(s.out_h) * s.out_w;
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(threads)
  {
    const WorkerSpan span(log);
    const int part = omp_get_thread_num(), parts = omp_get_num_threads();
    int64_t m0 = 0, m1 = m, n0 = 0, n1 = n;
    if (parts > 1) {
      if (n >= kMinColumnsPerThread * parts)
        split_range(n, parts, part, kColumnAlign, &n0, &n1);
      else
        split_range(m, parts, part, 1, &m0, &m1);
    }
    for (int b = 0; b < s.batch; ++b) {
      const float* x = input + b * k * n;
      float* y = output + b * m * n;
      gemm_bias_rows(m1 - m0, n1 - n0, k, weight + m0 * k, k, x + n0, n, bias ? bias + m0 : nullptr, y + m0 * n + n0,
                     n);
    }
  }
}

// Unfolds columns [n0, n1) of one group's input into col[(ci, ky, kx), output pixel]; ld = all pixels.
MNV2_CPU_CLONES
void im2col_columns(const ConvShape& s, const float* x, int channels, float* col, int64_t ld, int64_t n0, int64_t n1) {
  const int64_t plane = static_cast<int64_t>(s.in_h) * s.in_w;
  for (int ci = 0; ci < channels; ++ci) {
    for (int ky = 0; ky < s.kernel_h; ++ky) {
      for (int kx = 0; kx < s.kernel_w; ++kx) {
        float* dst_row = col + ((static_cast<int64_t>(ci) * s.kernel_h + ky) * s.kernel_w + kx) * ld;
        const int64_t x_offset = static_cast<int64_t>(kx) * s.dilation_w - s.pad_left;
        for (int64_t p = n0; p < n1;) {
          const int oy = static_cast<int>(p / s.out_w);
          const int ox0 = static_cast<int>(p % s.out_w);
          const int ox1 = static_cast<int>(std::min<int64_t>(s.out_w, ox0 + (n1 - p)));
          float* dst = dst_row + p - ox0;
          const int64_t iy =
              static_cast<int64_t>(oy) * s.stride_h - s.pad_top + static_cast<int64_t>(ky) * s.dilation_h;
          if (iy < 0 || iy >= s.in_h) {
            for (int ox = ox0; ox < ox1; ++ox) dst[ox] = 0.0f;
          } else {
            const float* src = x + ci * plane + iy * s.in_w;
            for (int ox = ox0; ox < ox1; ++ox) {
              const int64_t ix = static_cast<int64_t>(ox) * s.stride_w + x_offset;
              dst[ox] = (ix >= 0 && ix < s.in_w) ? src[ix] : 0.0f;
            }
          }
          p += ox1 - ox0;
        }
      }
    }
  }
}

void conv_im2col(const ConvShape& s, const float* input, const float* weight, const float* bias, float* output,
                 float* col, int threads) {
  const int cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
  const int64_t k = static_cast<int64_t>(cin_g) * s.kernel_h * s.kernel_w;
  const int64_t n = static_cast<int64_t>(s.out_h) * s.out_w;
  const int64_t in_plane = static_cast<int64_t>(s.in_h) * s.in_w;
  // Threads own column slices of the one unfolded matrix, so they never wait for each other and the
  // buffer is reused for every image and group.
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(threads)
  {
    const WorkerSpan span(log);
    int64_t n0 = 0, n1 = n;
    split_range(n, omp_get_num_threads(), omp_get_thread_num(), kColumnAlign, &n0, &n1);
    if (n0 < n1) {
      for (int b = 0; b < s.batch; ++b) {
        for (int g = 0; g < s.groups; ++g) {
          const float* x =
              input + (static_cast<int64_t>(b) * s.in_channels + static_cast<int64_t>(g) * cin_g) * in_plane;
          im2col_columns(s, x, cin_g, col, n, n0, n1);
          float* y = output + (static_cast<int64_t>(b) * s.out_channels + static_cast<int64_t>(g) * cout_g) * n;
          gemm_bias_rows(cout_g, n1 - n0, k, weight + static_cast<int64_t>(g) * cout_g * k, k, col + n0, n,
                         bias ? bias + static_cast<int64_t>(g) * cout_g : nullptr, y + n0, n);
        }
      }
    }
  }
}

// 3x3, dilation 1, stride S. Rows above or below the map read `zero_row` instead, so only the few
// columns next to the left and right edges need bounds checks; the interior loop vectorises over ox.
template <int S>
[[gnu::always_inline]] inline void depthwise3x3_plane(const ConvShape& s, const float* x, const float* w, float b,
                                                      float* y, const float* zero_row) {
  const int in_h = s.in_h, in_w = s.in_w, out_w = s.out_w, pl = s.pad_left;
  const int lo = static_cast<int>(std::clamp<int64_t>(ceil_div(pl, S), 0, out_w));
  const int hi = static_cast<int>(std::clamp<int64_t>(floor_div(in_w - 3 + pl, S) + 1, lo, out_w));
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  for (int oy = 0; oy < s.out_h; ++oy) {
    const int iy = oy * S - s.pad_top;
    const float* r0 = (iy >= 0 && iy < in_h) ? x + static_cast<int64_t>(iy) * in_w : zero_row;
    const float* r1 = (iy + 1 >= 0 && iy + 1 < in_h) ? x + static_cast<int64_t>(iy + 1) * in_w : zero_row;
    const float* r2 = (iy + 2 >= 0 && iy + 2 < in_h) ? x + static_cast<int64_t>(iy + 2) * in_w : zero_row;
    float* out = y + static_cast<int64_t>(oy) * out_w;
    auto edge = [&](int ox) {
      float acc = b;
      for (int kx = 0; kx < 3; ++kx) {
        const int ix = ox * S - pl + kx;
        if (ix >= 0 && ix < in_w) acc += w[kx] * r0[ix] + w[3 + kx] * r1[ix] + w[6 + kx] * r2[ix];
      }
      out[ox] = acc;
    };
    for (int ox = 0; ox < lo; ++ox) edge(ox);
    for (int ox = lo; ox < hi; ++ox) {
      const int p = ox * S - pl;
      float acc = b;
      acc += w0 * r0[p] + w1 * r0[p + 1] + w2 * r0[p + 2];
      acc += w3 * r1[p] + w4 * r1[p + 1] + w5 * r1[p + 2];
      acc += w6 * r2[p] + w7 * r2[p + 1] + w8 * r2[p + 2];
      out[ox] = acc;
    }
    for (int ox = hi; ox < out_w; ++ox) edge(ox);
  }
}

// Any kernel, stride, dilation and padding: each output row accumulates one kernel tap at a time over
// the columns where that tap lands inside the map, so no per-pixel bounds checks are needed.
[[gnu::always_inline]] inline void depthwise_general_plane(const ConvShape& s, const float* x, const float* w, float b,
                                                           float* y) {
  const int64_t sw = s.stride_w;
  for (int oy = 0; oy < s.out_h; ++oy) {
    float* out = y + static_cast<int64_t>(oy) * s.out_w;
    for (int ox = 0; ox < s.out_w; ++ox) out[ox] = b;
    for (int ky = 0; ky < s.kernel_h; ++ky) {
      const int64_t iy = static_cast<int64_t>(oy) * s.stride_h - s.pad_top + static_cast<int64_t>(ky) * s.dilation_h;
      if (iy < 0 || iy >= s.in_h) continue;
      const float* row = x + iy * s.in_w;
      for (int kx = 0; kx < s.kernel_w; ++kx) {
        const float wv = w[ky * s.kernel_w + kx];
        const int64_t offset = static_cast<int64_t>(kx) * s.dilation_w - s.pad_left;  // ix = ox * sw + offset
        const int64_t lo = std::clamp<int64_t>(ceil_div(-offset, sw), 0, s.out_w);
        const int64_t hi = std::clamp<int64_t>(floor_div(s.in_w - 1 - offset, sw) + 1, lo, s.out_w);
        for (int64_t ox = lo; ox < hi; ++ox) out[ox] += wv * row[ox * sw + offset];
      }
    }
  }
}

MNV2_CPU_CLONES
void depthwise_plane(const ConvShape& s, const float* x, const float* w, float b, float* y, const float* zero_row) {
  const bool fast =
      s.kernel_h == 3 && s.kernel_w == 3 && s.dilation_h == 1 && s.dilation_w == 1 && s.stride_h == s.stride_w;
  if (fast && s.stride_h == 1)
    depthwise3x3_plane<1>(s, x, w, b, y, zero_row);
  else if (fast && s.stride_h == 2)
    depthwise3x3_plane<2>(s, x, w, b, y, zero_row);
  else
    depthwise_general_plane(s, x, w, b, y);
}

void conv_depthwise(const ConvShape& s, const float* input, const float* weight, const float* bias, float* output,
                    float* zero_row, int threads) {
  std::memset(zero_row, 0, sizeof(float) * static_cast<size_t>(s.in_w));
  const int64_t planes = static_cast<int64_t>(s.batch) * s.in_channels;
  const int64_t in_plane = static_cast<int64_t>(s.in_h) * s.in_w;
  const int64_t out_plane = static_cast<int64_t>(s.out_h) * s.out_w;
  const int64_t taps = static_cast<int64_t>(s.kernel_h) * s.kernel_w;
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(threads)
  {
    const WorkerSpan span(log);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const int64_t c = p % s.in_channels;
      depthwise_plane(s, input + p * in_plane, weight + c * taps, bias ? bias[c] : 0.0f, output + p * out_plane,
                      zero_row);
    }
  }
}

MNV2_CPU_CLONES
void clip_span(const float* in, float* out, int64_t count, float lo, float hi) {
  for (int64_t i = 0; i < count; ++i) out[i] = std::min(std::max(in[i], lo), hi);
}

MNV2_CPU_CLONES
void add_span(const float* a, const float* b, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

MNV2_CPU_CLONES
void mean_planes(const float* in, float* out, int64_t planes, int64_t plane_size) {
  const float scale = 1.0f / static_cast<float>(plane_size);
  for (int64_t p = 0; p < planes; ++p) {
    const float* x = in + p * plane_size;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < plane_size; ++i) sum += x[i];
    out[p] = sum * scale;
  }
}

// Runs fn(begin, end) on cache-line aligned slices of [0, count), one per thread.
template <typename Fn>
void parallel_spans(int64_t count, int threads, Fn fn) {
  const int team = count >= kMinParallelFloats ? threads : 1;
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(team)
  {
    const WorkerSpan span(log);
    int64_t begin = 0, end = 0;
    split_range(count, omp_get_num_threads(), omp_get_thread_num(), kColumnAlign, &begin, &end);
    if (begin < end) fn(begin, end);
  }
}

}  // namespace

ScopedThreadSpanLog::ScopedThreadSpanLog(ThreadSpanLog* log) : previous_(t_active_log) { t_active_log = log; }
ScopedThreadSpanLog::~ScopedThreadSpanLog() { t_active_log = previous_; }

int conv_output_extent(int in, int pad_begin, int pad_end, int kernel, int stride, int dilation) {
  const int64_t span = static_cast<int64_t>(dilation) * (kernel - 1) + 1;
  const int64_t padded = static_cast<int64_t>(in) + pad_begin + pad_end;
  if (stride <= 0 || padded < span) return 0;
  return static_cast<int>((padded - span) / stride + 1);
}

const char* to_string(ConvVariant variant) {
  switch (variant) {
    case ConvVariant::pointwise_gemm:
      return "pointwise-gemm";
    case ConvVariant::depthwise_direct:
      return "depthwise-direct";
    case ConvVariant::im2col_gemm:
      return "im2col-gemm";
  }
  return "?";
}

ConvVariant choose_conv_variant(const ConvShape& s) {
  if (s.groups > 1 && s.groups == s.in_channels && s.groups == s.out_channels) return ConvVariant::depthwise_direct;
  const bool identity_window = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 &&
                               s.pad_top == 0 && s.pad_left == 0 && s.out_h == s.in_h && s.out_w == s.in_w;
  if (identity_window && s.groups == 1) return ConvVariant::pointwise_gemm;
  return ConvVariant::im2col_gemm;
}

int64_t conv_workspace_floats(const ConvShape& s, ConvVariant variant) {
  switch (variant) {
    case ConvVariant::pointwise_gemm:
      return 0;
    case ConvVariant::depthwise_direct:
      return s.in_w;  // the zero row
    case ConvVariant::im2col_gemm:
      return static_cast<int64_t>(s.in_channels / s.groups) * s.kernel_h * s.kernel_w * s.out_h * s.out_w;
  }
  return 0;
}

void conv2d(const ConvShape& shape, ConvVariant variant, const float* input, const float* weight, const float* bias,
            float* output, float* workspace, int threads) {
  switch (variant) {
    case ConvVariant::pointwise_gemm:
      conv_pointwise(shape, input, weight, bias, output, threads);
      return;
    case ConvVariant::depthwise_direct:
      conv_depthwise(shape, input, weight, bias, output, workspace, threads);
      return;
    case ConvVariant::im2col_gemm:
      conv_im2col(shape, input, weight, bias, output, workspace, threads);
      return;
  }
}

void clip(const float* in, float* out, int64_t count, float lo, float hi, int threads) {
  parallel_spans(count, threads, [&](int64_t b, int64_t e) { clip_span(in + b, out + b, e - b, lo, hi); });
}

void add(const float* a, const float* b, float* out, int64_t count, int threads) {
  parallel_spans(count, threads, [&](int64_t s, int64_t e) { add_span(a + s, b + s, out + s, e - s); });
}

void global_average_pool(const float* in, float* out, int64_t planes, int64_t plane_size, int threads) {
  const int team = planes * plane_size >= kMinParallelFloats ? threads : 1;
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(team)
  {
    const WorkerSpan span(log);
    int64_t begin = 0, end = 0;
    split_range(planes, omp_get_num_threads(), omp_get_thread_num(), 1, &begin, &end);
    if (begin < end) mean_planes(in + begin * plane_size, out + begin, end - begin, plane_size);
  }
}

void linear(const float* in, const float* weight, const float* bias, float* out, int batch, int in_features,
            int out_features, int threads) {
  // Split the output features: every thread streams its own rows of the weight matrix, the largest
  // operand here, once for the whole batch.
  ThreadSpanLog* const log = t_active_log;
#pragma omp parallel num_threads(threads)
  {
    const WorkerSpan span(log);
    int64_t n0 = 0, n1 = 0;
    split_range(out_features, omp_get_num_threads(), omp_get_thread_num(), kColumnAlign, &n0, &n1);
    if (n0 < n1) {
      const int n = static_cast<int>(n1 - n0);
      if (bias) {
        for (int b = 0; b < batch; ++b)
          std::copy(bias + n0, bias + n1, out + static_cast<int64_t>(b) * out_features + n0);
      }
      sgemm('N', 'T', batch, n, in_features, 1.0f, in, in_features, weight + n0 * in_features, in_features,
            bias ? 1.0f : 0.0f, out + n0, out_features);
    }
  }
}

// oneDNN rather than OpenBLAS: OpenBLAS 0.3.21 (Debian 12) picks its kernels from a table of CPU models and
// falls back to its oldest ones on CPUs newer than the table, unless OPENBLAS_CORETYPE is set before the
// library loads. A failure here is a bug (see cpu_ops.h), and it happens on an OpenMP worker: fatal.
void sgemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (dnnl_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != dnnl_success) {
    std::fprintf(stderr, "cpu: dnnl_sgemm refused m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld\n",
                 static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                 static_cast<long long>(lda), static_cast<long long>(ldb), static_cast<long long>(ldc));
    std::abort();
  }
}

}  // namespace mnv2::cpu
