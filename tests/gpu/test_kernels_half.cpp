// The half-storage (fp16) paths of the elementwise kernels against float64 references, element by element,
// with bounds from their arithmetic: inputs are rounded to half on the host (the reference sees the same
// values), float32 arithmetic adds at most (terms + 2) 2^-24 sum|terms|, and the half output rounds once
// (2^-11 |value|, plus half the smallest subnormal). Depthwise 3x3 (8 channels per 16-byte access and the
// element-wise fallback), direct convolution (the stem: float32 NCHW in, half NHWC out; and half NHWC in),
// global average pooling, clip and add, transpose and conversion between float32 and half.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "kernels/depthwise_conv.cuh"
#include "kernels/direct_conv.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/global_avg_pool.cuh"
#include "kernels/layout.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;
constexpr k::DType kHalf = k::DType::f16;
const double kTinyHalf = std::ldexp(1.0, -25);  // half the smallest half subnormal

// The bound of a float32 sum of `terms` products (absolute sum `abs_sum`) rounded once to half.
double half_bound(double value, double abs_sum, int terms) {
  return (terms + 2) * kU32 * abs_sum + 1.01 * kU16 * std::fabs(value) + kTinyHalf + 1e-30;
}

int out_extent(int in, int pad_before, int pad_after, int kernel, int stride) {
  return (in + pad_before + pad_after - kernel) / stride + 1;
}

struct DwCase {
  int batch, channels, h, w, stride, pad_top, pad_left, pad_bottom, pad_right;
  bool bias, clip;
};

TEST(KernelHalf, DepthwiseConvWithinItsBound) {
  MNV2_SKIP_WITHOUT_GPU();
  const DwCase cases[] = {
      {2, 32, 17, 15, 1, 1, 1, 1, 1, true, true},    // half8, stride 1
      {2, 96, 17, 15, 2, 0, 0, 1, 1, true, true},    // stride 2, pads [0,0,1,1], odd map
      {3, 144, 14, 14, 2, 0, 0, 1, 1, false, true},  // even map, no bias
      {2, 12, 9, 11, 1, 1, 0, 0, 2, true, false},    // 12 channels: not a multiple of 8, element-wise
      {1, 5, 8, 9, 1, 1, 1, 1, 1, true, true},       // odd channel count
      {1, 16, 13, 12, 3, 1, 1, 1, 1, true, false},   // stride 3: the generic code
  };
  for (const DwCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " channels " << c.channels << " map " << c.h << "x" << c.w << " stride " << c.stride
         << " pads [" << c.pad_top << "," << c.pad_left << "," << c.pad_bottom << "," << c.pad_right << "] bias "
         << c.bias << " clip " << c.clip << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    const int C = c.channels;
    const int oh = out_extent(c.h, c.pad_top, c.pad_bottom, 3, c.stride);
    const int ow = out_extent(c.w, c.pad_left, c.pad_right, 3, c.stride);
    const std::vector<float> x =
        TypedArray::rounded(kHalf, random_vector(gen, static_cast<size_t>(c.batch) * c.h * c.w * C, -2.0f, 2.0f));
    const std::vector<float> w = random_vector(gen, static_cast<size_t>(9 * C));  // [3][3][C], float32
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(C));
    const k::Clip clip{c.clip, 0.0f, 1.5f};
    std::vector<double> ref(static_cast<size_t>(c.batch) * oh * ow * C), bound(ref.size());
    for (int n = 0; n < c.batch; ++n)
      for (int y = 0; y < oh; ++y)
        for (int xo = 0; xo < ow; ++xo)
          for (int ch = 0; ch < C; ++ch) {
            double s = c.bias ? bias[static_cast<size_t>(ch)] : 0.0, abs_sum = std::fabs(s);
            for (int r = 0; r < 3; ++r)
              for (int q = 0; q < 3; ++q) {
                const int ih = y * c.stride - c.pad_top + r, iw = xo * c.stride - c.pad_left + q;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                const double prod = double(x[((static_cast<size_t>(n) * c.h + ih) * c.w + iw) * C + ch]) *
                                    double(w[static_cast<size_t>((r * 3 + q) * C + ch)]);
                s += prod;
                abs_sum += std::fabs(prod);
              }
            if (c.clip) s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
            const size_t at = ((static_cast<size_t>(n) * oh + y) * ow + xo) * C + ch;
            ref[at] = s;
            bound[at] = half_bound(s, abs_sum, 10);
          }
    TypedArray dx(kHalf, x), dy(kHalf, ref.size());
    DeviceArray dw(w), db(bias);
    k::DepthwiseConvParams p;
    p.batch = c.batch;
    p.channels = C;
    p.in_h = c.h;
    p.in_w = c.w;
    p.out_h = oh;
    p.out_w = ow;
    p.stride_h = p.stride_w = c.stride;
    p.pad_top = c.pad_top;
    p.pad_left = c.pad_left;
    p.dtype = kHalf;
    p.input = dx.get();
    p.weight = dw.get();
    p.bias = c.bias ? db.get() : nullptr;
    p.clip = clip;
    p.output = dy.get();
    std::vector<k::DepthwiseVariant> variants{k::choose_depthwise_variant(p, 132)};
    for (int vec : {1, 8}) {
      if (vec == 8 && C % 8 != 0) continue;
      variants.push_back({vec, 1, 0, kHalf});
      if (c.stride == 1) variants.push_back({vec, 4, 1, kHalf});
      if (c.stride == 2) variants.push_back({vec, 2, 2, kHalf});
    }
    EXPECT_EQ(variants.front().vec, C % 8 == 0 ? 8 : 1);
    for (const k::DepthwiseVariant& v : variants) {
      SCOPED_TRACE(k::to_string(v));
      dy.poison();
      k::launch_depthwise_conv3x3(p, v, nullptr);
      const BoundCheck check = check_within(dy.download(), ref, bound);
      EXPECT_TRUE(check.ok()) << check.str();
    }
  }
  EXPECT_EQ(k::to_string(k::DepthwiseVariant{8, 4, 1, kHalf}), "dw3x3 s1 half8 cols4");
}

struct DirectCase {
  int batch, in_c, out_c, h, w, kernel, stride, pad_top, pad_left, pad_bottom, pad_right;
  k::Layout layout;
};

TEST(KernelHalf, DirectConvWithinItsBound) {
  MNV2_SKIP_WITHOUT_GPU();
  const DirectCase cases[] = {
      {2, 3, 32, 33, 31, 3, 2, 0, 0, 1, 1, k::Layout::nchw},  // the stem: float32 NCHW in, half NHWC out
      {1, 3, 6, 9, 8, 3, 1, 1, 1, 1, 1, k::Layout::nchw},     // 6 output channels: element-wise stores
      {2, 8, 16, 7, 9, 3, 1, 1, 1, 1, 1, k::Layout::nhwc},    // half NHWC in
      {1, 5, 7, 6, 6, 2, 2, 0, 1, 1, 0, k::Layout::nhwc},     // odd everything
  };
  for (const DirectCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " in " << c.in_c << " out " << c.out_c << " map " << c.h << "x" << c.w << " kernel "
         << c.kernel << " stride " << c.stride << " layout " << (c.layout == k::Layout::nchw ? "nchw" : "nhwc")
         << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    const bool nchw = c.layout == k::Layout::nchw;
    const int oh = out_extent(c.h, c.pad_top, c.pad_bottom, c.kernel, c.stride);
    const int ow = out_extent(c.w, c.pad_left, c.pad_right, c.kernel, c.stride);
    std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch) * c.in_c * c.h * c.w);
    if (!nchw) x = TypedArray::rounded(kHalf, x);  // an NHWC input is a half map
    const std::vector<float> w = random_vector(gen, static_cast<size_t>(c.kernel * c.kernel * c.in_c * c.out_c));
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.out_c));
    const k::Clip clip{true, 0.0f, 6.0f};
    auto x_at = [&](int n, int ch, int y, int xx) {
      return nchw ? x[((static_cast<size_t>(n) * c.in_c + ch) * c.h + y) * c.w + xx]
                  : x[((static_cast<size_t>(n) * c.h + y) * c.w + xx) * c.in_c + ch];
    };
    std::vector<double> ref(static_cast<size_t>(c.batch) * oh * ow * c.out_c), bound(ref.size());
    for (int n = 0; n < c.batch; ++n)
      for (int y = 0; y < oh; ++y)
        for (int xo = 0; xo < ow; ++xo)
          for (int co = 0; co < c.out_c; ++co) {
            double s = bias[static_cast<size_t>(co)], abs_sum = std::fabs(s);
            for (int r = 0; r < c.kernel; ++r)
              for (int q = 0; q < c.kernel; ++q)
                for (int ci = 0; ci < c.in_c; ++ci) {
                  const int ih = y * c.stride - c.pad_top + r, iw = xo * c.stride - c.pad_left + q;
                  if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                  const double prod = double(x_at(n, ci, ih, iw)) *
                                      double(w[((static_cast<size_t>(r) * c.kernel + q) * c.in_c + ci) * c.out_c + co]);
                  s += prod;
                  abs_sum += std::fabs(prod);
                }
            s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
            const size_t at = ((static_cast<size_t>(n) * oh + y) * ow + xo) * c.out_c + co;
            ref[at] = s;
            bound[at] = half_bound(s, abs_sum, c.kernel * c.kernel * c.in_c + 1);
          }
    TypedArray dx(nchw ? k::DType::f32 : kHalf, x), dy(kHalf, ref.size());
    DeviceArray dw(w), db(bias);
    k::DirectConvParams p;
    p.batch = c.batch;
    p.in_channels = c.in_c;
    p.in_h = c.h;
    p.in_w = c.w;
    p.out_channels = c.out_c;
    p.out_h = oh;
    p.out_w = ow;
    p.kernel_h = p.kernel_w = c.kernel;
    p.stride_h = p.stride_w = c.stride;
    p.pad_top = c.pad_top;
    p.pad_left = c.pad_left;
    p.input_layout = c.layout;
    p.dtype = kHalf;
    p.input = dx.get();
    p.weight = dw.get();
    p.bias = db.get();
    p.clip = clip;
    p.output = dy.get();
    std::vector<k::DirectConvVariant> variants{k::choose_direct_conv_variant(p, 132), {1, false}};
    if (c.out_c % 4 == 0) variants.push_back({4, false});
    for (const k::DirectConvVariant& v : variants) {
      SCOPED_TRACE(k::to_string(v, c.layout, kHalf));
      dy.poison();
      k::launch_direct_conv(p, v, nullptr);
      const BoundCheck check = check_within(dy.download(), ref, bound);
      EXPECT_TRUE(check.ok()) << check.str();
    }
  }
}

TEST(KernelHalf, GlobalAvgPoolClipAndAddWithinTheirBounds) {
  MNV2_SKIP_WITHOUT_GPU();
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  for (const auto& [batch, channels, plane] : {std::tuple{3, 1280, 49}, std::tuple{2, 12, 15}, std::tuple{1, 7, 4}}) {
    SCOPED_TRACE("pool batch " + std::to_string(batch) + " channels " + std::to_string(channels) + " plane " +
                 std::to_string(plane));
    const std::vector<float> x =
        TypedArray::rounded(kHalf, random_vector(gen, static_cast<size_t>(batch) * plane * channels, 0.0f, 6.0f));
    std::vector<double> ref(static_cast<size_t>(batch) * channels), bound(ref.size());
    for (int n = 0; n < batch; ++n)
      for (int ch = 0; ch < channels; ++ch) {
        double s = 0, abs_sum = 0;
        for (int i = 0; i < plane; ++i) {
          const double v = x[(static_cast<size_t>(n) * plane + i) * channels + ch];
          s += v;
          abs_sum += std::fabs(v);
        }
        ref[static_cast<size_t>(n) * channels + ch] = s / plane;
        bound[static_cast<size_t>(n) * channels + ch] = half_bound(s / plane, abs_sum / plane, plane + 1);
      }
    TypedArray dx(kHalf, x), dy(kHalf, ref.size());
    dy.poison();
    k::GlobalAvgPoolParams p;
    p.batch = batch;
    p.channels = channels;
    p.plane = plane;
    p.layout = k::Layout::nhwc;
    p.dtype = kHalf;
    p.input = dx.get();
    p.output = dy.get();
    k::launch_global_avg_pool(p, nullptr);
    const BoundCheck check = check_within(dy.download(), ref, bound);
    EXPECT_TRUE(check.ok()) << check.str();
  }
  for (int64_t count : {int64_t{4096}, int64_t{1003}}) {  // 16-byte accesses, and the element-wise fallback
    SCOPED_TRACE("elementwise count " + std::to_string(count));
    const std::vector<float> a = TypedArray::rounded(kHalf, random_vector(gen, static_cast<size_t>(count)));
    const std::vector<float> b = TypedArray::rounded(kHalf, random_vector(gen, static_cast<size_t>(count)));
    std::vector<double> clipped(a.size()), sum(a.size()), exact(a.size(), kTinyHalf), sum_bound(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      clipped[i] = std::min(std::max<double>(a[i], -0.5), 0.75);  // bounds exact in half: no rounding
      sum[i] = double(a[i]) + double(b[i]);
      sum_bound[i] = half_bound(sum[i], std::fabs(a[i]) + std::fabs(b[i]), 1);
    }
    TypedArray da(kHalf, a), db(kHalf, b), dy(kHalf, a.size());
    dy.poison();
    k::launch_clip(k::ClipParams{count, da.get(), dy.get(), k::Clip{true, -0.5f, 0.75f}, kHalf}, nullptr);
    BoundCheck check = check_within(dy.download(), clipped, exact);
    EXPECT_TRUE(check.ok()) << "clip: " << check.str();
    dy.poison();
    k::launch_add(k::AddParams{count, da.get(), db.get(), dy.get(), kHalf}, nullptr);
    check = check_within(dy.download(), sum, sum_bound);
    EXPECT_TRUE(check.ok()) << "add: " << check.str();
  }
}

TEST(KernelHalf, TransposeAndConvertBetweenFloatAndHalf) {
  MNV2_SKIP_WITHOUT_GPU();
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  const int64_t batch = 2, rows = 37, cols = 45;
  const std::vector<float> x = random_vector(gen, static_cast<size_t>(batch * rows * cols), -3.0f, 3.0f);
  const std::vector<float> x_half = TypedArray::rounded(kHalf, x);
  std::vector<double> t_ref(x.size()), t_bound(x.size()), exact(x.size(), 0.0);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t from = static_cast<size_t>((n * rows + r) * cols + c),
                     to = static_cast<size_t>((n * cols + c) * rows + r);
        t_ref[to] = x[from];
        t_bound[to] = half_bound(x[from], 0.0, 0);
      }
  // float32 -> half, transposed (the network input in fp16): one rounding.
  TypedArray dx(k::DType::f32, x), dh(kHalf, x.size());
  dh.poison();
  k::launch_transpose(k::TransposeParams{batch, rows, cols, dx.get(), dh.get(), k::DType::f32, kHalf}, nullptr);
  BoundCheck check = check_within(dh.download(), t_ref, t_bound);
  EXPECT_TRUE(check.ok()) << "transpose f32->f16: " << check.str();
  // half -> float32, transposed back (a layer output downloaded for a diff): exact.
  TypedArray dback(k::DType::f32, x.size());
  dback.poison();
  k::launch_transpose(k::TransposeParams{batch, cols, rows, dh.get(), dback.get(), kHalf, k::DType::f32}, nullptr);
  check = check_within(dback.download(), std::vector<double>(x_half.begin(), x_half.end()), exact);
  EXPECT_TRUE(check.ok()) << "transpose f16->f32: " << check.str();
  // Plain conversions, both ways.
  TypedArray dc(kHalf, x.size()), dd(k::DType::f32, x.size());
  dc.poison();
  dd.poison();
  k::launch_convert(k::ConvertParams{static_cast<int64_t>(x.size()), dx.get(), dc.get(), k::DType::f32, kHalf},
                    nullptr);
  k::launch_convert(k::ConvertParams{static_cast<int64_t>(x.size()), dc.get(), dd.get(), kHalf, k::DType::f32},
                    nullptr);
  check = check_within(dd.download(), std::vector<double>(x_half.begin(), x_half.end()), exact);
  EXPECT_TRUE(check.ok()) << "convert f32->f16->f32 against host rounding: " << check.str();
  EXPECT_THROW(k::launch_convert(k::ConvertParams{4, dx.get(), dd.get(), k::DType::f32, k::DType::f32}, nullptr),
               Error);
}

// Host rounding (weights uploaded in half) against the device's __float2half_rn on values that probe ties,
// subnormals, overflow and NaN.
TEST(KernelHalf, HostHalfRoundingMatchesTheDevice) {
  MNV2_SKIP_WITHOUT_GPU();
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          1.0f + 1.0f / 2048,
                          1.0f + 3.0f / 2048,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          1e-8f,
                          3e-8f,
                          6.0e-5f,
                          6.1e-5f,
                          -2.5e-6f,
                          1e9f,
                          -1e9f,
                          NAN,
                          0.3f,
                          -7.77f};
  std::mt19937_64 gen(kernel_test_seed());
  for (float x : random_vector(gen, 1000, -100.0f, 100.0f)) v.push_back(x);
  TypedArray df(k::DType::f32, v), dh(kHalf, v.size()), dback(k::DType::f32, v.size());
  k::launch_convert(k::ConvertParams{static_cast<int64_t>(v.size()), df.get(), dh.get(), k::DType::f32, kHalf},
                    nullptr);
  k::launch_convert(k::ConvertParams{static_cast<int64_t>(v.size()), dh.get(), dback.get(), kHalf, k::DType::f32},
                    nullptr);
  const std::vector<float> device = dback.download();
  const std::vector<float> host = TypedArray::rounded(kHalf, v);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(device[i]) && std::isnan(host[i])) << i;
      continue;
    }
    EXPECT_EQ(host[i], device[i]) << "value " << v[i];
  }
}

}  // namespace
}  // namespace mnv2::test
#endif  // MNV2_HAVE_KERNELS
