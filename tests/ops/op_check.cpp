// The op harness's judge (see op_check.h).
#include "op_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

#include "precision_bounds.h"

namespace mnv2::ops {

using test::dot_error_factor;
using test::kU16;
using test::kU32;

namespace {

// Half the smallest half subnormal: the absolute error of storing a value below half's normal range.
const double kHalfUnderflow = std::ldexp(1.0, -25);

std::vector<float> abs_values(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

// Largest sum of |weights| of one output (row): how much an absolute input error can grow through the layer.
double max_row_abs_sum(const Layer& l) {
  const int64_t rows = l.kind == LayerKind::Linear ? l.out_features : l.conv.out_channels;
  if (rows <= 0 || l.weight.empty()) return 0;
  const size_t per_row = l.weight.size() / static_cast<size_t>(rows);
  double worst = 0;
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) {
    double s = 0;
    for (size_t i = 0; i < per_row; ++i) s += std::fabs(l.weight[r * per_row + i]);
    worst = std::max(worst, s);
  }
  return worst;
}

}  // namespace

Model magnitude_model(const Model& model) {
  Model m = model;
  for (Layer& l : m.layers) {
    l.weight = abs_values(std::move(l.weight));
    l.bias = abs_values(std::move(l.bias));
    if (l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU) {
      l.kind = LayerKind::ReLU;
      l.clip_min = 0.0f;
      l.clip_max = std::numeric_limits<float>::infinity();
    }
  }
  return m;
}

Tensor abs_of(const Tensor& t) {
  Tensor a = t;
  a.data = abs_values(std::move(a.data));
  return a;
}

std::vector<LayerBound> layer_bounds(const Model& model, Precision precision, int batch, int height, int width) {
  const bool half = precision == Precision::fp16;
  const double u_in = precision == Precision::fp32 ? 0.0 : kU16;
  const double store = half ? 1.01 * kU16 : 0.0;  // rounding a float32 result to half (1.01: the conversion's slack)
  const double store_tiny = half ? kHalfUnderflow : 0.0;
  const std::vector<LayerStats> stats = analyse(model, batch, height, width);
  const LayerBound input{half ? kU16 : 0.0, store_tiny};
  std::vector<LayerBound> b(model.layers.size());
  auto in = [&](const Layer& l, size_t k) -> const LayerBound& {
    return l.inputs[k] == kNetworkInput ? input : b[static_cast<size_t>(l.inputs[k])];
  };
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    LayerBound& o = b[i];
    switch (l.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: {
        const double terms = l.kind == LayerKind::Linear
                                 ? l.in_features
                                 : double(l.conv.in_channels / l.conv.groups) * l.conv.kernel_h * l.conv.kernel_w;
        o.factor = in(l, 0).factor + dot_error_factor(u_in, terms) + dot_error_factor(0.0, terms) + store;
        o.tiny = in(l, 0).tiny * max_row_abs_sum(l) + store_tiny;
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        o = in(l, 0);  // clipping never grows an error
        break;
      case LayerKind::ResidualAdd:
        o.factor = std::max(in(l, 0).factor, in(l, 1).factor) + 2 * kU32 + store;
        o.tiny = in(l, 0).tiny + in(l, 1).tiny + store_tiny;
        break;
      case LayerKind::GlobalAveragePool: {
        const Shape s = l.inputs[0] == kNetworkInput ? Shape{batch, model.input_channels, height, width}
                                                     : stats[static_cast<size_t>(l.inputs[0])].output;
        const double pixels = static_cast<double>(s.h * s.w);
        o.factor = in(l, 0).factor + 2 * dot_error_factor(0.0, pixels) + store;
        o.tiny = in(l, 0).tiny + store_tiny;
        break;
      }
    }
    o.tiny += 1e-30;  // an exact bound still passes an exact result
  }
  return b;
}

Reference run_reference(const Model& model, const Tensor& input, int threads) {
  auto ref = make_backend("cpu-ref");
  PrepareConfig config;
  config.batch = static_cast<int>(input.shape.n);
  config.height = static_cast<int>(input.shape.h);
  config.width = static_cast<int>(input.shape.w);
  config.cpu_threads = threads;
  RunOptions keep;
  keep.keep_layer_outputs = true;
  Reference r;
  auto net = ref->prepare(model, config);
  r.logits = net->run(input, keep);
  r.value = net->layer_outputs();
  r.steps = net->steps();
  auto mag = ref->prepare(magnitude_model(model), config);
  r.logits_magnitude = mag->run(abs_of(input), keep);
  r.magnitude = mag->layer_outputs();
  return r;
}

std::string Verdict::where() const {
  if (index < 0) return "-";
  std::ostringstream s;
  const int64_t plane = shape.h * shape.w;
  s << "[n " << index / shape.per_image() << ", c " << index / plane % shape.c << ", y " << index / shape.w % shape.h
    << ", x " << index % shape.w << "]";
  return s.str();
}

namespace {

// One tensor against its reference; fills `v` when it is worse than what `v` holds.
void compare_tensor(int layer, const Tensor& got, const Tensor& value, const Tensor& magnitude, const LayerBound& b,
                    Verdict& v) {
  if (got.data.size() != value.data.size()) {
    v.ok = false;
    v.layer = layer;
    v.problem = "output " + got.shape.str() + ", reference " + value.shape.str();
    return;
  }
  int64_t outside = 0, worst = -1;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    const double err = std::fabs(double(got.data[i]) - double(value.data[i]));
    const double bound = b.factor * magnitude.data[i] + b.tiny;
    const double ratio = std::isfinite(err) ? err / bound : std::numeric_limits<double>::infinity();
    if (!(ratio <= 1.0)) ++outside;
    if (worst < 0 || !(ratio <= worst_ratio)) {
      worst = static_cast<int64_t>(i);
      worst_ratio = ratio;
    }
  }
  v.compared += static_cast<int64_t>(got.data.size());
  // The verdict names the first failing layer, else the layer closest to its bound.
  const bool report = outside > 0 ? v.outside == 0 : v.outside == 0 && !(worst_ratio <= v.worst_ratio);
  if (!(worst_ratio <= v.worst_ratio)) v.worst_ratio = worst_ratio;
  if (!report || worst < 0) return;
  const size_t w = static_cast<size_t>(worst);
  v.ok = v.ok && outside == 0;
  v.layer = layer;
  v.outside = outside;
  v.index = worst;
  v.shape = value.shape;
  v.got = got.data[w];
  v.expected = value.data[w];
  v.magnitude = magnitude.data[w];
  v.bound = b.factor * magnitude.data[w] + b.tiny;
}

}  // namespace

Verdict check_outputs(const Model& model, const Reference& ref, const std::vector<LayerBound>& bounds,
                      const Tensor& logits, const std::vector<Tensor>& outputs, const std::vector<ExecStep>& steps) {
  Verdict v;
  const int n = static_cast<int>(model.layers.size());
  if (static_cast<int>(outputs.size()) != n) {
    v.ok = false;
    v.problem = std::to_string(outputs.size()) + " layer outputs for " + std::to_string(n) + " layers";
    return v;
  }
  for (int i = 0; i < n; ++i) {
    const Tensor& got = outputs[static_cast<size_t>(i)];
    if (got.empty()) {
      // Not materialised: allowed only inside a fused step that covers it and ends after it.
      const bool fused = std::any_of(steps.begin(), steps.end(), [&](const ExecStep& s) {
        return s.layers.size() > 1 && s.layers.back() > i &&
               std::find(s.layers.begin(), s.layers.end(), i) != s.layers.end();
      });
      if (!fused) {
        v.ok = false;
        v.layer = i;
        v.problem = "no output, and no fused step covers the layer";
        return v;
      }
      continue;
    }
    const Tensor& value = ref.value[static_cast<size_t>(i)];
    if (!(got.shape == value.shape)) {
      v.ok = false;
      v.layer = i;
      v.problem = "output " + got.shape.str() + ", reference " + value.shape.str();
      return v;
    }
    compare_tensor(i, got, value, ref.magnitude[static_cast<size_t>(i)], bounds[static_cast<size_t>(i)], v);
    if (!v.problem.empty()) return v;
  }
  compare_tensor(n, logits, ref.logits, ref.logits_magnitude, bounds.back(), v);
  return v;
}

}  // namespace mnv2::ops
