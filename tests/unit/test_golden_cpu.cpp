// The cpu backend on the real models against the float64 golden logits in shared/golden: relative L2
// below 1e-5 and the same top-5 order; batching, other input sizes and kept layer outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

constexpr double kMaxRelL2 = 1e-5;  // shared/golden/README.md: what a float32 backend should reach

std::vector<int> top5(const float* logits, size_t count) {
  std::vector<int> idx(count);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  idx.resize(5);
  return idx;
}

// Loading a model takes a while; each file is loaded once for the whole program.
const Model& main_model() {
  static const Model m = load_onnx(main_model_path());
  return m;
}
const Model& torchvision_model() {
  static const Model m = load_onnx(torchvision_model_path());
  return m;
}

Tensor golden_tensor(const Golden& g) {
  Tensor t(Shape{1, 3, 224, 224});
  t.data = g.input;
  return t;
}

void check_golden(const Model& model, const std::vector<std::string>& names) {
  auto net = make_backend("cpu")->prepare(model, PrepareConfig{1, 224, 224, Precision::fp32});
  for (const std::string& name : names) {
    const Golden g = read_golden(name);
    const Tensor logits = net->run(golden_tensor(g));
    ASSERT_EQ(logits.shape, (Shape{1, static_cast<int64_t>(g.logits.size()), 1, 1})) << name;
    const double err = rel_l2(logits.data, g.logits);
    std::printf("[  golden  ] %-20s relative L2 %.3e\n", name.c_str(), err);
    EXPECT_LT(err, kMaxRelL2) << name;
    EXPECT_EQ(top5(logits.data.data(), logits.data.size()), g.top5) << name;
  }
}

TEST(GoldenCpu, MainModelMatchesGoldenLogits) { check_golden(main_model(), golden_image_names()); }

TEST(GoldenCpu, TorchvisionModelMatchesGoldenLogits) { check_golden(torchvision_model(), {"torchvision_random"}); }

TEST(GoldenCpu, StackedBatchEqualsSingleImages) {
  const std::vector<std::string> names = golden_image_names();
  const int batch = static_cast<int>(names.size());
  Tensor stacked(Shape{batch, 3, 224, 224});
  std::vector<Tensor> singles;
  auto one = make_backend("cpu")->prepare(main_model(), PrepareConfig{1, 224, 224, Precision::fp32});
  for (int b = 0; b < batch; ++b) {
    const Golden g = read_golden(names[static_cast<size_t>(b)]);
    std::copy(g.input.begin(), g.input.end(), stacked.data.begin() + static_cast<int64_t>(b) * 3 * 224 * 224);
    singles.push_back(one->run(golden_tensor(g)));
  }
  auto many = make_backend("cpu")->prepare(main_model(), PrepareConfig{batch, 224, 224, Precision::fp32});
  const Tensor logits = many->run(stacked);
  const int64_t classes = main_model().num_classes;
  ASSERT_EQ(logits.shape, (Shape{batch, classes, 1, 1}));
  for (int b = 0; b < batch; ++b) {
    const float* row = logits.data.data() + b * classes;
    // Only the classifier GEMM sees a different shape with the batch; everything else runs the same
    // arithmetic per image, so the results agree to float32 rounding.
    const ErrorStats e = compare(row, singles[static_cast<size_t>(b)].data.data(), classes);
    EXPECT_LT(e.rel_l2, 1e-6) << names[static_cast<size_t>(b)] << " in the batch at " << b;
    EXPECT_EQ(top5(row, static_cast<size_t>(classes)),
              top5(singles[static_cast<size_t>(b)].data.data(), static_cast<size_t>(classes)));
  }
}

TEST(GoldenCpu, OtherInputSizesRun) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto [h, w] : {std::pair{160, 160}, std::pair{193, 257}}) {
    auto net = make_backend("cpu")->prepare(main_model(), PrepareConfig{1, h, w, Precision::fp32});
    Tensor input(Shape{1, 3, h, w});
    for (float& x : input.data) x = dist(gen);
    const Tensor logits = net->run(input);
    ASSERT_EQ(logits.shape, (Shape{1, main_model().num_classes, 1, 1})) << h << "x" << w;
    EXPECT_TRUE(std::all_of(logits.data.begin(), logits.data.end(), [](float v) { return std::isfinite(v); }))
        << h << "x" << w;
    EXPECT_GT(std::inner_product(logits.data.begin(), logits.data.end(), logits.data.begin(), 0.0), 0.0);
  }
}

TEST(GoldenCpu, WrongInputShapeIsAUsageError) {
  auto net = make_backend("cpu")->prepare(main_model(), PrepareConfig{1, 224, 224, Precision::fp32});
  EXPECT_THROW(net->run(Tensor(Shape{1, 3, 160, 160})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{2, 3, 224, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 1, 224, 224})), UsageError);
}

TEST(GoldenCpu, KeepsEveryLayerOutput) {
  const Model& model = main_model();
  ASSERT_EQ(model.layers.size(), 99u);
  auto net = make_backend("cpu")->prepare(model, PrepareConfig{1, 224, 224, Precision::fp32});
  ASSERT_EQ(net->steps().size(), 99u);
  RunOptions keep;
  keep.keep_layer_outputs = true;
  const Golden g = read_golden("cat");
  const Tensor logits = net->run(golden_tensor(g), keep);
  const std::vector<LayerStats> stats = analyse(model, 1, 224, 224);
  const std::vector<Tensor>& outputs = net->layer_outputs();
  ASSERT_EQ(outputs.size(), 99u);
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i].shape, stats[i].output) << "layer " << i << " " << describe(model.layers[i]);
    EXPECT_EQ(static_cast<int64_t>(outputs[i].data.size()), stats[i].output.numel()) << "layer " << i;
  }
  EXPECT_EQ(outputs.back().data, logits.data);
  EXPECT_LT(rel_l2(logits.data, g.logits), kMaxRelL2);
  // Every ReLU6 output is its input clipped: the in-place clip did not disturb the kept conv output.
  for (size_t i = 0; i < model.layers.size(); ++i) {
    if (model.layers[i].kind != LayerKind::ReLU6) continue;
    const std::vector<float>& in = outputs[static_cast<size_t>(model.layers[i].inputs[0])].data;
    const std::vector<float>& out = outputs[i].data;
    ASSERT_EQ(in.size(), out.size());
    size_t mismatches = 0;
    for (size_t k = 0; k < in.size(); ++k)
      mismatches += out[k] != std::min(std::max(in[k], model.layers[i].clip_min), model.layers[i].clip_max);
    EXPECT_EQ(mismatches, 0u) << "layer " << i;
  }
}

}  // namespace
}  // namespace mnv2::test
