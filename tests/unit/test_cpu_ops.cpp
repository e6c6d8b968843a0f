// Both cpu backends' ops (cpu: oneDNN, cpu-ref: the reference) against a plain float64 reference written
// here, over tables of shapes, on fresh random data. Each case runs as a one- or few-layer Model through
// each backend with 1, 2 and 3 threads; every layer output a backend materialises is checked, and a layer it
// does not must be fused into a step that names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// Float32 accumulation against the float64 reference: an element may be off by this much relative to
// the sum of the absolute values of the terms that made it (its "magnitude").
constexpr double kRelativeToMagnitude = 1e-5;

// MNV2_TEST_SEED reproduces a failing run; otherwise every run draws new data.
uint32_t fresh_seed() {
  if (const char* env = std::getenv("MNV2_TEST_SEED"); env && *env) return static_cast<uint32_t>(std::stoul(env));
  return std::random_device{}();
}

// The cpu backends' default thread count (what a front end passes from --threads or $MNV2_CPU_THREADS) for as
// long as it lives (the backend reads it when it is made).
class ScopedThreadsEnv {
 public:
  explicit ScopedThreadsEnv(int threads) : settings_([threads](ProcessSettings& s) { s.cpu_threads = threads; }) {}

 private:
  ScopedSettings settings_;
};

std::unique_ptr<Backend> cpu_with_threads(const std::string& name, int threads) {
  ScopedThreadsEnv env(threads);
  return make_backend(name);
}

constexpr int kThreadCounts[] = {1, 2, 3};
const char* const kCpuBackends[] = {"cpu-ref", "cpu"};

std::vector<float> random_floats(std::mt19937& gen, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A float64 tensor with, per element, the sum of absolute values of the terms behind it.
struct RefTensor {
  Shape shape;
  std::vector<double> value;
  std::vector<double> magnitude;
};

RefTensor ref_from(const Tensor& t) {
  RefTensor r{t.shape, {}, {}};
  for (float x : t.data) {
    r.value.push_back(x);
    r.magnitude.push_back(std::fabs(x));
  }
  return r;
}

int extent(int in, int pad_a, int pad_b, int kernel, int stride, int dilation) {
  return (in + pad_a + pad_b - dilation * (kernel - 1) - 1) / stride + 1;
}

RefTensor ref_conv(const RefTensor& x, const Layer& l) {
  const ConvParams& p = l.conv;
  const int64_t n = x.shape.n, h = x.shape.h, w = x.shape.w;
  const int oh = extent(static_cast<int>(h), p.pad_top, p.pad_bottom, p.kernel_h, p.stride_h, p.dilation_h);
  const int ow = extent(static_cast<int>(w), p.pad_left, p.pad_right, p.kernel_w, p.stride_w, p.dilation_w);
  RefTensor y{Shape{n, p.out_channels, oh, ow}, {}, {}};
  y.value.assign(static_cast<size_t>(y.shape.numel()), 0.0);
  y.magnitude.assign(y.value.size(), 0.0);
  const int cin_g = p.in_channels / p.groups, cout_g = p.out_channels / p.groups;
  for (int64_t b = 0; b < n; ++b)
    for (int co = 0; co < p.out_channels; ++co) {
      const int g = co / cout_g;
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          double acc = l.bias.empty() ? 0.0 : l.bias[co];
          double mag = l.bias.empty() ? 0.0 : std::fabs(l.bias[co]);
          for (int ci = 0; ci < cin_g; ++ci)
            for (int ky = 0; ky < p.kernel_h; ++ky)
              for (int kx = 0; kx < p.kernel_w; ++kx) {
                const int64_t iy = int64_t{oy} * p.stride_h - p.pad_top + int64_t{ky} * p.dilation_h;
                const int64_t ix = int64_t{ox} * p.stride_w - p.pad_left + int64_t{kx} * p.dilation_w;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t src = ((b * p.in_channels + g * cin_g + ci) * h + iy) * w + ix;
                const double wv = l.weight[((int64_t{co} * cin_g + ci) * p.kernel_h + ky) * p.kernel_w + kx];
                acc += wv * x.value[src];
                mag += std::fabs(wv) * x.magnitude[src];
              }
          const int64_t dst = ((b * p.out_channels + co) * oh + oy) * ow + ox;
          y.value[dst] = acc;
          y.magnitude[dst] = mag;
        }
    }
  return y;
}

RefTensor ref_clip(const RefTensor& x, double lo, double hi) {
  RefTensor y = x;
  for (double& v : y.value) v = std::min(std::max(v, lo), hi);
  return y;  // clipping never grows an error, so the magnitude carries over
}

RefTensor ref_add(const RefTensor& a, const RefTensor& b) {
  RefTensor y = a;
  for (size_t i = 0; i < y.value.size(); ++i) {
    y.value[i] += b.value[i];
    y.magnitude[i] += b.magnitude[i];
  }
  return y;
}

RefTensor ref_gap(const RefTensor& x) {
  const int64_t plane = x.shape.h * x.shape.w;
  RefTensor y{Shape{x.shape.n, x.shape.c, 1, 1}, {}, {}};
  for (int64_t p = 0; p < x.shape.n * x.shape.c; ++p) {
    double sum = 0, mag = 0;
    for (int64_t i = 0; i < plane; ++i) {
      sum += x.value[p * plane + i];
      mag += x.magnitude[p * plane + i];
    }
    y.value.push_back(sum / plane);
    y.magnitude.push_back(mag / plane);
  }
  return y;
}

RefTensor ref_linear(const RefTensor& x, const Layer& l) {
  RefTensor y{Shape{x.shape.n, l.out_features, 1, 1}, {}, {}};
  for (int64_t b = 0; b < x.shape.n; ++b)
    for (int o = 0; o < l.out_features; ++o) {
      double acc = l.bias.empty() ? 0.0 : l.bias[o];
      double mag = l.bias.empty() ? 0.0 : std::fabs(l.bias[o]);
      for (int i = 0; i < l.in_features; ++i) {
        const double wv = l.weight[int64_t{o} * l.in_features + i];
        acc += wv * x.value[b * l.in_features + i];
        mag += std::fabs(wv) * x.magnitude[b * l.in_features + i];
      }
      y.value.push_back(acc);
      y.magnitude.push_back(mag);
    }
  return y;
}

// The reference output of every layer of `model` for `input`.
std::vector<RefTensor> ref_run(const Model& model, const Tensor& input) {
  const RefTensor in = ref_from(input);
  std::vector<RefTensor> out;
  auto arg = [&](const Layer& l, size_t k) -> const RefTensor& {
    return l.inputs[k] == kNetworkInput ? in : out[static_cast<size_t>(l.inputs[k])];
  };
  for (const Layer& l : model.layers) {
    switch (l.kind) {
      case LayerKind::Conv2d:
        out.push_back(ref_conv(arg(l, 0), l));
        break;
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        out.push_back(ref_clip(arg(l, 0), l.clip_min, l.clip_max));
        break;
      case LayerKind::ResidualAdd:
        out.push_back(ref_add(arg(l, 0), arg(l, 1)));
        break;
      case LayerKind::GlobalAveragePool:
        out.push_back(ref_gap(arg(l, 0)));
        break;
      case LayerKind::Linear:
        out.push_back(ref_linear(arg(l, 0), l));
        break;
    }
  }
  return out;
}

// Compares every element; on failure names the worst element, its position and the case.
::testing::AssertionResult matches_reference(const Tensor& got, const RefTensor& ref, const std::string& what) {
  if (!(got.shape == ref.shape))
    return ::testing::AssertionFailure() << what << ": shape " << got.shape.str() << ", reference " << ref.shape.str();
  int64_t worst = -1, bad = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    const double err = std::fabs(double(got.data[i]) - ref.value[i]);
    const double allowed = kRelativeToMagnitude * ref.magnitude[i] + std::numeric_limits<float>::denorm_min();
    if (!(err <= allowed)) {
      ++bad;
      const double ratio = std::isfinite(err) ? err / allowed : std::numeric_limits<double>::infinity();
      if (worst < 0 || ratio > worst_ratio) {
        worst = static_cast<int64_t>(i);
        worst_ratio = ratio;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const Shape& s = ref.shape;
  const int64_t i = worst;
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << got.data.size()
                                       << " elements off; worst at [n " << i / s.per_image() << ", c "
                                       << i / (s.h * s.w) % s.c << ", y " << i / s.w % s.h << ", x " << i % s.w
                                       << "]: got " << got.data[static_cast<size_t>(i)] << ", reference "
                                       << ref.value[static_cast<size_t>(i)] << ", magnitude "
                                       << ref.magnitude[static_cast<size_t>(i)];
}

Model model_of(std::vector<Layer> layers, int input_channels) {
  Model m;
  m.layers = std::move(layers);
  for (size_t i = 0; i < m.layers.size(); ++i) m.layers[i].index = static_cast<int>(i);
  m.input_channels = input_channels;
  m.source = "test";
  return m;
}

Tensor random_input(std::mt19937& gen, Shape shape) {
  Tensor t(shape);
  t.data = random_floats(gen, static_cast<size_t>(shape.numel()), -1.0f, 1.0f);
  return t;
}

// Runs `model` on both cpu backends and every thread count and checks the logits and every materialised
// layer output against the reference.
void check_model(const Model& model, const Tensor& input, const std::string& what) {
  const std::vector<RefTensor> ref = ref_run(model, input);
  for (const char* name : kCpuBackends)
    for (int threads : kThreadCounts) {
      auto backend = cpu_with_threads(name, threads);
      PrepareConfig config;
      config.batch = static_cast<int>(input.shape.n);
      config.height = static_cast<int>(input.shape.h);
      config.width = static_cast<int>(input.shape.w);
      std::unique_ptr<PreparedNet> net;
      ASSERT_NO_THROW(net = backend->prepare(model, config)) << what;
      RunOptions options;
      options.keep_layer_outputs = true;
      const Tensor logits = net->run(input, options);
      const std::string where = what + ", " + name + ", " + std::to_string(threads) + " thread(s)";
      const RefTensor& last = ref.back();
      RefTensor flat = last;
      flat.shape = Shape{last.shape.n, last.shape.per_image(), 1, 1};
      EXPECT_TRUE(matches_reference(logits, flat, where + ", logits"));
      ASSERT_EQ(net->layer_outputs().size(), model.layers.size()) << where;
      for (size_t i = 0; i < model.layers.size(); ++i) {
        const std::string layer = where + ", layer " + std::to_string(i) + " " + describe(model.layers[i]);
        if (net->layer_outputs()[i].empty()) {
          // Not materialised: allowed only inside a fused step that covers it and ends after it.
          bool fused = false;
          for (const ExecStep& step : net->steps())
            fused =
                fused || (step.layers.size() > 1 && step.layers.back() > static_cast<int>(i) &&
                          std::find(step.layers.begin(), step.layers.end(), static_cast<int>(i)) != step.layers.end());
          EXPECT_TRUE(fused) << layer << ": no output, and no fused step covers it";
          continue;
        }
        EXPECT_TRUE(matches_reference(net->layer_outputs()[i], ref[i], layer));
      }
    }
}

// ---- Conv2d ------------------------------------------------------------------------------------------

struct ConvCase {
  int batch, in_c, h, w, out_c;
  int kh, kw, sh, sw;
  int pt, pl, pb, pr;
  int dh, dw;
  int groups;
  bool bias;
  const char* expect_variant;  // the variant the backend should pick
};

std::string describe_case(const ConvCase& c, uint32_t seed) {
  std::ostringstream s;
  s << "seed " << seed << ": batch " << c.batch << ", in " << c.in_c << "x" << c.h << "x" << c.w << ", out_c "
    << c.out_c << ", kernel " << c.kh << "x" << c.kw << ", stride " << c.sh << "x" << c.sw << ", pads [t " << c.pt
    << ", l " << c.pl << ", b " << c.pb << ", r " << c.pr << "], dilation " << c.dh << "x" << c.dw << ", groups "
    << c.groups << (c.bias ? ", bias" : ", no bias");
  return s.str();
}

Layer conv_layer(std::mt19937& gen, int input, const ConvCase& c) {
  Layer l;
  l.kind = LayerKind::Conv2d;
  l.name = "conv";
  l.inputs = {input};
  l.conv = ConvParams{c.in_c, c.out_c, c.kh, c.kw, c.sh, c.sw, c.pt, c.pl, c.pb, c.pr, c.dh, c.dw, c.groups};
  const int fan_in = c.in_c / c.groups * c.kh * c.kw;
  const float scale = 1.0f / std::sqrt(static_cast<float>(fan_in));
  l.weight = random_floats(gen, static_cast<size_t>(c.out_c) * fan_in, -scale, scale);
  if (c.bias) l.bias = random_floats(gen, static_cast<size_t>(c.out_c), -0.5f, 0.5f);
  return l;
}

const ConvCase kConvCases[] = {
    // pointwise: columns split (large map), rows split (small map), odd sizes, batch > 1, no bias
    {2, 16, 7, 9, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, "pointwise-gemm"},
    {1, 5, 13, 11, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false, "pointwise-gemm"},
    {1, 8, 40, 37, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, "pointwise-gemm"},
    {3, 32, 3, 5, 67, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, "pointwise-gemm"},
    {2, 96, 7, 7, 160, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, "pointwise-gemm"},
    // the stem: 3x3 stride 2 with TensorFlow "SAME" pads [0, 0, 1, 1] and with symmetric pads
    {1, 3, 29, 31, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, true, "im2col-gemm"},
    {2, 3, 17, 17, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true, "im2col-gemm"},
    {1, 3, 64, 48, 32, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, true, "im2col-gemm"},
    // depthwise 3x3 on the fast path: stride 1 and 2, symmetric and asymmetric pads, odd sizes
    {2, 12, 15, 19, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 12, true, "depthwise-direct"},
    {1, 7, 14, 14, 7, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 7, false, "depthwise-direct"},
    {3, 5, 9, 11, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, true, "depthwise-direct"},
    {1, 4, 10, 13, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 4, true, "depthwise-direct"},
    {1, 3, 8, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1, 1, 3, true, "depthwise-direct"},
    {2, 3, 2, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, true, "depthwise-direct"},
    {1, 6, 1, 5, 6, 3, 3, 2, 2, 1, 0, 1, 2, 1, 1, 6, true, "depthwise-direct"},
    {1, 32, 57, 57, 32, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 32, true, "depthwise-direct"},
    // depthwise off the fast path: kernel 5, asymmetric pads, dilation, unequal strides, 1x1
    {1, 6, 11, 10, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6, true, "depthwise-direct"},
    {2, 4, 12, 9, 4, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, 4, false, "depthwise-direct"},
    {1, 3, 12, 12, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3, true, "depthwise-direct"},
    {1, 3, 9, 10, 3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3, true, "depthwise-direct"},
    {1, 5, 6, 7, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5, true, "depthwise-direct"},
    // general grouped convolutions and channel multipliers go through im2col per group
    {2, 8, 9, 10, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, true, "im2col-gemm"},
    {1, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, true, "im2col-gemm"},
    {1, 4, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, false, "im2col-gemm"},
    // general kernels: 5x5 no bias, 1x1 stride 2, a 3x1 kernel with mixed stride and dilation, 7x7 stride 3
    {2, 5, 12, 11, 7, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1, false, "im2col-gemm"},
    {1, 8, 9, 9, 6, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, true, "im2col-gemm"},
    {1, 4, 10, 9, 5, 3, 1, 1, 2, 0, 1, 1, 0, 2, 1, 1, true, "im2col-gemm"},
    {2, 3, 19, 23, 4, 7, 7, 3, 3, 3, 2, 1, 0, 1, 1, 1, true, "im2col-gemm"},
    {1, 16, 31, 33, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, "im2col-gemm"},
};

TEST(CpuOps, Conv2dMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  for (const ConvCase& c : kConvCases) {
    const std::string what = describe_case(c, seed);
    const Model model = model_of({conv_layer(gen, kNetworkInput, c)}, c.in_c);
    const Tensor input = random_input(gen, Shape{c.batch, c.in_c, c.h, c.w});
    check_model(model, input, what);
    auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{c.batch, c.h, c.w, Precision::fp32});
    EXPECT_EQ(net->steps().at(0).variant, c.expect_variant) << what;
    net = make_backend("cpu")->prepare(model, PrepareConfig{c.batch, c.h, c.w, Precision::fp32});
    EXPECT_EQ(net->steps().at(0).variant.rfind("onednn ", 0), 0u) << what << ": " << net->steps().at(0).variant;
  }
}

// ---- ReLU6 / ReLU / Clip -----------------------------------------------------------------------------

TEST(CpuOps, ClipMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  struct ClipCase {
    LayerKind kind;
    float lo, hi;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const ClipCase clips[] = {
      {LayerKind::ReLU6, 0.0f, 6.0f}, {LayerKind::ReLU, 0.0f, inf}, {LayerKind::ReLU, -1.5f, 2.5f}};
  // Odd element counts, and counts large enough to be split over threads.
  const Shape shapes[] = {{1, 1, 1, 1}, {3, 5, 7, 11}, {2, 8, 64, 64}, {1, 96, 112, 112}};
  for (const ClipCase& cc : clips) {
    for (const Shape& s : shapes) {
      std::ostringstream what;
      what << "seed " << seed << ": " << to_string(cc.kind) << " [" << cc.lo << ", " << cc.hi << "] on " << s.str();
      Layer l;
      l.kind = cc.kind;
      l.inputs = {kNetworkInput};
      l.clip_min = cc.lo;
      l.clip_max = cc.hi;
      Tensor input(s);
      input.data = random_floats(gen, static_cast<size_t>(s.numel()), -10.0f, 10.0f);
      check_model(model_of({l}, static_cast<int>(s.c)), input, what.str());
    }
  }
}

// A clip that is its input's last reader runs in place; its result must still be the clip of the conv.
TEST(CpuOps, ClipAfterConvInPlace) {
  const uint32_t seed = fresh_seed();
  std::mt19937 gen(seed);
  const ConvCase c{2, 4, 9, 9, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, "pointwise-gemm"};
  Layer relu;
  relu.kind = LayerKind::ReLU6;
  relu.inputs = {0};
  const Model model = model_of({conv_layer(gen, kNetworkInput, c), relu}, c.in_c);
  Tensor input(Shape{2, 4, 9, 9});
  input.data = random_floats(gen, static_cast<size_t>(input.shape.numel()), -20.0f, 20.0f);
  check_model(model, input, "seed " + std::to_string(seed) + ": conv then ReLU6");
  auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{2, 9, 9, Precision::fp32});
  EXPECT_EQ(net->steps()[1].variant, "clip-in-place");
  // The oneDNN backend runs the clip as the convolution's post-op: one step covering both.
  net = make_backend("cpu")->prepare(model, PrepareConfig{2, 9, 9, Precision::fp32});
  ASSERT_EQ(net->steps().size(), 1u);
  EXPECT_EQ(net->steps()[0].name, "Conv2d 0 + ReLU6 1");
  EXPECT_EQ(net->steps()[0].layers, (std::vector<int>{0, 1}));
}

// ---- ResidualAdd -------------------------------------------------------------------------------------

TEST(CpuOps, ResidualAddMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  const Shape shapes[] = {{1, 3, 1, 1}, {2, 5, 7, 9}, {1, 24, 56, 56}, {3, 16, 33, 35}};
  for (const Shape& s : shapes) {
    const int ch = static_cast<int>(s.c);
    const ConvCase c{static_cast<int>(s.n),
                     ch,
                     static_cast<int>(s.h),
                     static_cast<int>(s.w),
                     ch,
                     1,
                     1,
                     1,
                     1,
                     0,
                     0,
                     0,
                     0,
                     1,
                     1,
                     1,
                     true,
                     "pointwise-gemm"};
    // (input + conv) reads the network input, which must never be overwritten; (conv + input) may write
    // over the conv's output in place.
    for (const std::vector<int>& order : {std::vector<int>{kNetworkInput, 0}, std::vector<int>{0, kNetworkInput}}) {
      Layer add;
      add.kind = LayerKind::ResidualAdd;
      add.inputs = order;
      const Model model = model_of({conv_layer(gen, kNetworkInput, c), add}, ch);
      const Tensor input = random_input(gen, s);
      std::ostringstream what;
      what << "seed " << seed << ": ResidualAdd(" << order[0] << ", " << order[1] << ") on " << s.str();
      check_model(model, input, what.str());
    }
  }
}

// ---- GlobalAveragePool -------------------------------------------------------------------------------

TEST(CpuOps, GlobalAveragePoolMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  const Shape shapes[] = {{1, 1, 1, 1}, {2, 9, 7, 7}, {1, 33, 13, 11}, {3, 1280, 7, 7}, {1, 4, 100, 101}};
  for (const Shape& s : shapes) {
    for (bool from_average_pool : {false, true}) {
      Layer l;
      l.kind = LayerKind::GlobalAveragePool;
      l.inputs = {kNetworkInput};
      if (from_average_pool) {  // an AveragePool whose kernel covers the whole map
        l.pool_kernel_h = static_cast<int>(s.h);
        l.pool_kernel_w = static_cast<int>(s.w);
      }
      std::ostringstream what;
      what << "seed " << seed << ": GlobalAveragePool on " << s.str() << (from_average_pool ? " (AveragePool)" : "");
      check_model(model_of({l}, static_cast<int>(s.c)), random_input(gen, s), what.str());
    }
  }
}

// ---- Linear ------------------------------------------------------------------------------------------

TEST(CpuOps, LinearMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  struct LinearCase {
    Shape input;  // Linear takes the flattened image
    int out_features;
    bool bias;
  };
  const LinearCase cases[] = {{{1, 1280, 1, 1}, 1001, true},
                              {{5, 37, 1, 1}, 19, false},
                              {{3, 4, 2, 2}, 10, true},
                              {{2, 1, 1, 1}, 1, true},
                              {{8, 1280, 1, 1}, 1000, true}};
  for (const LinearCase& c : cases) {
    Layer l;
    l.kind = LayerKind::Linear;
    l.inputs = {kNetworkInput};
    l.in_features = static_cast<int>(c.input.per_image());
    l.out_features = c.out_features;
    const float scale = 1.0f / std::sqrt(static_cast<float>(l.in_features));
    l.weight = random_floats(gen, static_cast<size_t>(l.in_features) * c.out_features, -scale, scale);
    if (c.bias) l.bias = random_floats(gen, static_cast<size_t>(c.out_features), -1.0f, 1.0f);
    std::ostringstream what;
    what << "seed " << seed << ": Linear(" << l.in_features << ", " << c.out_features << ") on " << c.input.str()
         << (c.bias ? ", bias" : ", no bias");
    check_model(model_of({l}, static_cast<int>(c.input.c)), random_input(gen, c.input), what.str());
  }
}

// ---- A small network ---------------------------------------------------------------------------------

// Two inverted-residual blocks and a head, built by hand: exercises buffer reuse (a residual reads an
// output several layers back, elementwise layers run in place), every kind in one run, batch > 1, and a
// second run on the same buffers.
TEST(CpuOps, SmallNetworkMatchesReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  std::vector<Layer> layers;
  auto conv = [&](int input, ConvCase c) {
    layers.push_back(conv_layer(gen, input, c));
    return static_cast<int>(layers.size()) - 1;
  };
  auto act = [&](int input) {
    Layer l;
    l.kind = LayerKind::ReLU6;
    l.inputs = {input};
    layers.push_back(l);
    return static_cast<int>(layers.size()) - 1;
  };
  const int b = 3;
  int x = act(conv(kNetworkInput, {b, 3, 33, 35, 16, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, true, ""}));  // 16x17
  const int block_in = x;
  x = act(conv(x, {b, 16, 16, 17, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""}));
  x = act(conv(x, {b, 48, 16, 17, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 48, true, ""}));
  x = conv(x, {b, 48, 16, 17, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""});
  Layer add;
  add.kind = LayerKind::ResidualAdd;
  add.inputs = {block_in, x};
  layers.push_back(add);
  x = static_cast<int>(layers.size()) - 1;
  x = act(conv(x, {b, 16, 16, 17, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""}));
  x = act(conv(x, {b, 64, 16, 17, 64, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 64, true, ""}));  // 8x8
  x = conv(x, {b, 64, 8, 8, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, false, ""});
  x = act(conv(x, {b, 24, 8, 8, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""}));
  Layer gap;
  gap.kind = LayerKind::GlobalAveragePool;
  gap.inputs = {x};
  layers.push_back(gap);
  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.inputs = {static_cast<int>(layers.size()) - 1};
  fc.in_features = 96;
  fc.out_features = 11;
  fc.weight = random_floats(gen, 96 * 11, -0.1f, 0.1f);
  fc.bias = random_floats(gen, 11, -0.1f, 0.1f);
  layers.push_back(fc);
  const Model model = model_of(std::move(layers), 3);

  const Tensor input = random_input(gen, Shape{b, 3, 33, 35});
  check_model(model, input, "seed " + std::to_string(seed) + ": small network");

  // Running again on the same prepared buffers gives the same logits, with or without kept outputs.
  for (const char* name : kCpuBackends) {
    auto net = make_backend(name)->prepare(model, PrepareConfig{b, 33, 35, Precision::fp32});
    const Tensor first = net->run(input);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    const Tensor second = net->run(input, keep);
    const Tensor third = net->run(input);
    EXPECT_EQ(first.data, second.data) << name;
    EXPECT_EQ(first.data, third.data) << name;
  }
}

// ---- Fusion in the oneDNN backend --------------------------------------------------------------------

// The shapes of graph around a convolution that decide what the oneDNN backend fuses and whether it may
// write over a residual: each must compute what the reference computes, and fuse what it should.
TEST(CpuOps, FusedEpiloguesMatchReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  const int b = 2, ch = 24, h = 11, w = 13;  // 24 channels: padded in 16-channel blocks
  const ConvCase pw{b, ch, h, w, ch, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""};
  const ConvCase dw{b, ch, h, w, ch, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, ch, true, ""};
  auto clip = [](int input, float lo, float hi) {
    Layer l;
    l.kind = lo == 0.0f && hi == 6.0f ? LayerKind::ReLU6 : LayerKind::ReLU;
    l.inputs = {input};
    l.clip_min = lo;
    l.clip_max = hi;
    return l;
  };
  auto add = [](int x, int y) {
    Layer l;
    l.kind = LayerKind::ResidualAdd;
    l.inputs = {x, y};
    return l;
  };
  struct Case {
    std::string what;
    std::vector<Layer> layers;
    std::vector<std::string> fused_steps;  // step names the oneDNN backend must produce
  };
  const std::vector<Case> cases = {
      // conv + clip, conv + add + clip: the residual (layer 1) is read last by the add, so written over.
      {"conv+clip, conv+add(residual)+clip",
       {conv_layer(gen, kNetworkInput, pw), clip(0, 0, 6), conv_layer(gen, 1, dw), add(1, 2), clip(3, -1, 2)},
       {"Conv2d 0 + ReLU6 1", "Conv2d 2 + ResidualAdd 3 + ReLU 4"}},
      // the residual is the convolution's own input: x + conv(x) cannot be computed over x.
      {"x + conv(x)",
       {conv_layer(gen, kNetworkInput, pw), clip(0, 0, 6), conv_layer(gen, 1, pw), add(2, 1)},
       {"Conv2d 0 + ReLU6 1", "Conv2d 2 + ResidualAdd 3"}},
      // the residual is read again after the add: copied, not written over.
      {"residual read later",
       {conv_layer(gen, kNetworkInput, pw), clip(0, 0, 6), conv_layer(gen, 1, dw), add(1, 2), add(3, 1)},
       {"Conv2d 0 + ReLU6 1", "Conv2d 2 + ResidualAdd 3"}},
      // the residual is the network input (never written), the add comes first in the operand order.
      {"input + conv(input)",
       {conv_layer(gen, kNetworkInput, pw), add(kNetworkInput, 0), clip(1, 0, 6)},
       {"Conv2d 0 + ResidualAdd 1 + ReLU6 2"}},
      // two readers of the convolution (clip and add): nothing fused; an add of a value with itself.
      {"no fusion", {conv_layer(gen, kNetworkInput, pw), clip(0, 0, 6), add(0, 1), add(2, 2)}, {}},
  };
  for (const Case& c : cases) {
    const Model model = model_of(c.layers, ch);
    const Tensor input = random_input(gen, Shape{b, ch, h, w});
    check_model(model, input, "seed " + std::to_string(seed) + ": " + c.what);
    auto net = make_backend("cpu")->prepare(model, PrepareConfig{b, h, w, Precision::fp32});
    std::vector<std::string> fused;
    for (const ExecStep& step : net->steps())
      if (step.layers.size() > 1) fused.push_back(step.name);
    EXPECT_EQ(fused, c.fused_steps) << c.what;
  }
}

// An expansion (pointwise) with its depthwise 3x3 after it, as in every inverted-residual block: the oneDNN
// backend runs the pair as one primitive where oneDNN has a fused kernel for the shape (it chooses by shape,
// batch and threads), else as two steps. Either way every materialised layer matches the reference; a fused
// step covers the expansion, its clip, the depthwise convolution and its clip.
TEST(CpuOps, ExpansionAndDepthwiseMatchReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  struct Case {
    int batch, in_c, h, w, mid_c, stride, pt, pl, pb, pr;
    bool dw_bias, dw_clip;
  };
  const Case cases[] = {
      {1, 16, 112, 112, 96, 2, 0, 0, 1, 1, true, true},  // block2 of the network
      {2, 24, 20, 22, 144, 1, 1, 1, 1, 1, true, true},
      {1, 32, 15, 17, 64, 2, 1, 1, 1, 1, false, true},  // odd map, symmetric pads
      {3, 16, 9, 8, 48, 1, 1, 1, 1, 1, true, false},    // no clip after the depthwise convolution
  };
  for (const Case& c : cases) {
    const int oh = extent(c.h, c.pt, c.pb, 3, c.stride, 1), ow = extent(c.w, c.pl, c.pr, 3, c.stride, 1);
    std::vector<Layer> layers;
    layers.push_back(conv_layer(gen, kNetworkInput,
                                {c.batch, c.in_c, c.h, c.w, c.mid_c, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, ""}));
    Layer clip;
    clip.kind = LayerKind::ReLU6;
    clip.inputs = {0};
    layers.push_back(clip);
    layers.push_back(conv_layer(gen, 1,
                                {c.batch, c.mid_c, c.h, c.w, c.mid_c, 3, 3, c.stride, c.stride, c.pt, c.pl, c.pb, c.pr,
                                 1, 1, c.mid_c, c.dw_bias, ""}));
    if (c.dw_clip) {
      clip.inputs = {2};
      layers.push_back(clip);
    }
    Layer gap;  // a reader after the pair, so the pair's output is not the network's
    gap.kind = LayerKind::GlobalAveragePool;
    gap.inputs = {static_cast<int>(layers.size()) - 1};
    layers.push_back(gap);
    const Model model = model_of(std::move(layers), c.in_c);
    std::ostringstream what;
    what << "seed " << seed << ": batch " << c.batch << ", " << c.in_c << "->" << c.mid_c << " at " << c.h << "x" << c.w
         << ", depthwise stride " << c.stride << " pads [" << c.pt << ", " << c.pl << ", " << c.pb << ", " << c.pr
         << "] -> " << oh << "x" << ow << (c.dw_bias ? "" : ", no depthwise bias")
         << (c.dw_clip ? "" : ", no clip after it");
    check_model(model, random_input(gen, Shape{c.batch, c.in_c, c.h, c.w}), what.str());
    auto net = make_backend("cpu")->prepare(model, PrepareConfig{c.batch, c.h, c.w, Precision::fp32});
    const ExecStep& first = net->steps().front();
    const bool fused = first.layers.size() > 2;
    std::printf("[  fusion  ] %s: %s (%s)\n", what.str().c_str(), fused ? "one step" : "two steps",
                first.variant.c_str());
    if (fused) {
      EXPECT_EQ(first.layers, c.dw_clip ? std::vector<int>({0, 1, 2, 3}) : std::vector<int>({0, 1, 2})) << what.str();
      EXPECT_NE(first.variant.find("+dw3x3/s" + std::to_string(c.stride)), std::string::npos) << first.variant;
    } else {
      EXPECT_EQ(first.layers, (std::vector<int>{0, 1})) << what.str();
    }
  }
}

}  // namespace
}  // namespace mnv2::test
