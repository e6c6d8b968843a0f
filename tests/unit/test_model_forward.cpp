// End-to-end check of the importer independent of any backend: a deliberately plain forward pass over the
// imported graph (double accumulation) must reproduce the golden logits, which proves pads, folded weights
// and layer wiring are right. Also checks the built-in synthetic weights keep activations alive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mnv2/model.h"
#include "test_support.h"

namespace mnv2 {
namespace {

struct Map {
  Shape shape;
  std::vector<float> v;
};

Map conv_forward(const Layer& l, const Map& x) {
  const ConvParams& p = l.conv;
  const int64_t oh = (x.shape.h + p.pad_top + p.pad_bottom - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  const int64_t ow = (x.shape.w + p.pad_left + p.pad_right - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  Map y{Shape{x.shape.n, p.out_channels, oh, ow}, {}};
  y.v.resize(static_cast<size_t>(y.shape.numel()));
  const int64_t cg = p.in_channels / p.groups, og = p.out_channels / p.groups;
  for (int64_t n = 0; n < x.shape.n; ++n)
    for (int64_t o = 0; o < p.out_channels; ++o) {
      const int64_t g = o / og;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = l.bias.empty() ? 0.0 : l.bias[static_cast<size_t>(o)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
              const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
              if (iy < 0 || iy >= x.shape.h) continue;
              for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
                if (ix < 0 || ix >= x.shape.w) continue;
                const float xv =
                    x.v[static_cast<size_t>(((n * x.shape.c + g * cg + ci) * x.shape.h + iy) * x.shape.w + ix)];
                const float wv = l.weight[static_cast<size_t>(((o * cg + ci) * p.kernel_h + ky) * p.kernel_w + kx)];
                acc += static_cast<double>(xv) * wv;
              }
            }
          y.v[static_cast<size_t>(((n * p.out_channels + o) * oh + oy) * ow + ox)] = static_cast<float>(acc);
        }
    }
  return y;
}

// Runs the whole graph; returns every layer's output.
std::vector<Map> forward(const Model& m, const Map& input) {
  std::vector<Map> out;
  for (const Layer& l : m.layers) {
    const Map& x = l.inputs[0] == kNetworkInput ? input : out[static_cast<size_t>(l.inputs[0])];
    Map y;
    switch (l.kind) {
      case LayerKind::Conv2d:
        y = conv_forward(l, x);
        break;
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        y = x;
        for (float& v : y.v) v = std::min(std::max(v, l.clip_min), l.clip_max);
        break;
      case LayerKind::ResidualAdd: {
        const Map& b = l.inputs[1] == kNetworkInput ? input : out[static_cast<size_t>(l.inputs[1])];
        y = x;
        for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += b.v[i];
        break;
      }
      case LayerKind::GlobalAveragePool: {
        y.shape = Shape{x.shape.n, x.shape.c, 1, 1};
        const int64_t hw = x.shape.h * x.shape.w;
        for (int64_t i = 0; i < x.shape.n * x.shape.c; ++i) {
          double s = 0;
          for (int64_t j = 0; j < hw; ++j) s += x.v[static_cast<size_t>(i * hw + j)];
          y.v.push_back(static_cast<float>(s / static_cast<double>(hw)));
        }
        break;
      }
      case LayerKind::Linear: {
        y.shape = Shape{x.shape.n, l.out_features, 1, 1};
        for (int64_t n = 0; n < x.shape.n; ++n)
          for (int64_t o = 0; o < l.out_features; ++o) {
            double s = l.bias.empty() ? 0.0 : l.bias[static_cast<size_t>(o)];
            for (int64_t i = 0; i < l.in_features; ++i)
              s += static_cast<double>(x.v[static_cast<size_t>(n * l.in_features + i)]) *
                   l.weight[static_cast<size_t>(o * l.in_features + i)];
            y.v.push_back(static_cast<float>(s));
          }
        break;
      }
    }
    out.push_back(std::move(y));
  }
  return out;
}

void expect_golden(const Model& m, const std::string& name, double tolerance) {
  const test::Golden g = test::read_golden(name);
  const std::vector<Map> outs = forward(m, Map{Shape{1, 3, 224, 224}, g.input});
  const std::vector<float>& logits = outs.back().v;
  ASSERT_EQ(logits.size(), g.logits.size());
  EXPECT_LT(test::rel_l2(logits, g.logits), tolerance) << name;
  const auto top = std::max_element(logits.begin(), logits.end()) - logits.begin();
  EXPECT_EQ(top, g.top5.at(0)) << name;
}

TEST(ModelForward, MainModelReproducesGoldenLogits) {
  const Model m = load_onnx(test::main_model_path());
  expect_golden(m, "cat", 1e-5);
  expect_golden(m, "parrot", 1e-5);
}

TEST(ModelForward, TorchvisionModelReproducesGoldenLogits) {
  const Model m = load_onnx(test::torchvision_model_path());
  expect_golden(m, "torchvision_random", 1e-4);
}

TEST(ModelForward, BuiltinActivationsStayFiniteAndAlive) {
  const Model m = builtin_mobilenet_v2();
  const test::Golden g = test::read_golden("cat");
  const std::vector<Map> outs = forward(m, Map{Shape{1, 3, 224, 224}, g.input});
  for (size_t i = 0; i < outs.size(); ++i) {
    double sum = 0, sq = 0;
    for (float v : outs[i].v) {
      ASSERT_TRUE(std::isfinite(v)) << m.layers[i].name;
      sum += v;
      sq += double(v) * v;
    }
    const double n = static_cast<double>(outs[i].v.size());
    const double rms = std::sqrt(sq / n);
    const double sd = std::sqrt(std::max(0.0, sq / n - (sum / n) * (sum / n)));
    // Neither dead nor exploding, and not a constant map.
    EXPECT_GT(rms, 1e-2) << m.layers[i].name;
    EXPECT_LT(rms, 1e3) << m.layers[i].name;
    EXPECT_GT(sd, 1e-3) << m.layers[i].name;
  }
}

}  // namespace
}  // namespace mnv2
