// Both cpu backends (cpu: oneDNN, cpu-ref: the reference) on the real models against the float64 golden
// logits in shared/golden: relative L2 below 1e-5 and the same top-5 order; batching, other input sizes and
// kept layer outputs; and every layer the oneDNN backend materialises against the reference's, on fresh
// random data at several batch and input sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
const char* const kCpuBackends[] = {"cpu", "cpu-ref"};

// MNV2_TEST_SEED reproduces a failing run; otherwise every run draws new data.
uint32_t fresh_seed() {
  if (const char* env = std::getenv("MNV2_TEST_SEED"); env && *env) return static_cast<uint32_t>(std::stoul(env));
  return std::random_device{}();
}

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

void check_golden(const std::string& backend, const Model& model, const std::vector<std::string>& names) {
  auto net = make_backend(backend)->prepare(model, PrepareConfig{1, 224, 224, Precision::fp32});
  for (const std::string& name : names) {
    const Golden g = read_golden(name);
    const Tensor logits = net->run(golden_tensor(g));
    ASSERT_EQ(logits.shape, (Shape{1, static_cast<int64_t>(g.logits.size()), 1, 1})) << backend << " " << name;
    const double err = rel_l2(logits.data, g.logits);
    std::printf("[  golden  ] %-7s %-20s relative L2 %.3e\n", backend.c_str(), name.c_str(), err);
    EXPECT_LT(err, kMaxRelL2) << backend << " " << name;
    EXPECT_EQ(top5(logits.data.data(), logits.data.size()), g.top5) << backend << " " << name;
  }
}

TEST(GoldenCpu, MainModelMatchesGoldenLogits) {
  for (const char* backend : kCpuBackends) check_golden(backend, main_model(), golden_image_names());
}

TEST(GoldenCpu, TorchvisionModelMatchesGoldenLogits) {
  for (const char* backend : kCpuBackends) check_golden(backend, torchvision_model(), {"torchvision_random"});
}

TEST(GoldenCpu, StackedBatchEqualsSingleImages) {
  for (const char* backend : kCpuBackends) {
    SCOPED_TRACE(backend);
    const std::vector<std::string> names = golden_image_names();
    const int batch = static_cast<int>(names.size());
    Tensor stacked(Shape{batch, 3, 224, 224});
    std::vector<Tensor> singles;
    auto one = make_backend(backend)->prepare(main_model(), PrepareConfig{1, 224, 224, Precision::fp32});
    for (int b = 0; b < batch; ++b) {
      const Golden g = read_golden(names[static_cast<size_t>(b)]);
      std::copy(g.input.begin(), g.input.end(), stacked.data.begin() + static_cast<int64_t>(b) * 3 * 224 * 224);
      singles.push_back(one->run(golden_tensor(g)));
    }
    auto many = make_backend(backend)->prepare(main_model(), PrepareConfig{batch, 224, 224, Precision::fp32});
    const Tensor logits = many->run(stacked);
    const int64_t classes = main_model().num_classes;
    ASSERT_EQ(logits.shape, (Shape{batch, classes, 1, 1}));
    for (int b = 0; b < batch; ++b) {
      const float* row = logits.data.data() + b * classes;
      // Each image of the batch is as close to the float64 logits as it is alone (the promise of a float32
      // backend), and its row is that image's, not a neighbour's (a mixed-up row is off by O(1)). Not bit-equal
      // to the single run: oneDNN picks its convolution kernels and their blocking by the batch too, so the sums
      // run in another order (a Xeon with AMX, also capped to AVX512_CORE: 1.3e-6 between batch 5 and batch 1).
      const Golden g = read_golden(names[static_cast<size_t>(b)]);
      EXPECT_LT(rel_l2(std::vector<float>(row, row + classes), g.logits), kMaxRelL2)
          << names[static_cast<size_t>(b)] << " in the batch at " << b;
      const ErrorStats e = compare(row, singles[static_cast<size_t>(b)].data.data(), classes);
      EXPECT_LT(e.rel_l2, kMaxRelL2) << names[static_cast<size_t>(b)] << " in the batch at " << b;
      EXPECT_EQ(top5(row, static_cast<size_t>(classes)),
                top5(singles[static_cast<size_t>(b)].data.data(), static_cast<size_t>(classes)));
    }
  }
}

TEST(GoldenCpu, OtherInputSizesRun) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const char* backend : kCpuBackends)
    for (auto [h, w] : {std::pair{160, 160}, std::pair{193, 257}}) {
      auto net = make_backend(backend)->prepare(main_model(), PrepareConfig{1, h, w, Precision::fp32});
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
  for (const char* backend : kCpuBackends) {
    auto net = make_backend(backend)->prepare(main_model(), PrepareConfig{1, 224, 224, Precision::fp32});
    EXPECT_THROW(net->run(Tensor(Shape{1, 3, 160, 160})), UsageError) << backend;
    EXPECT_THROW(net->run(Tensor(Shape{2, 3, 224, 224})), UsageError) << backend;
    EXPECT_THROW(net->run(Tensor(Shape{1, 1, 224, 224})), UsageError) << backend;
  }
}

TEST(GoldenCpu, ReferenceKeepsEveryLayerOutput) {
  const Model& model = main_model();
  ASSERT_EQ(model.layers.size(), 99u);
  auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{1, 224, 224, Precision::fp32});
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

namespace mnv2::test {
namespace {

// The oneDNN backend fuses each convolution's ReLU6 and residual add into it (52 convolutions, the pool and
// the classifier: at most 54 steps), and an expansion with its depthwise convolution where oneDNN has a fused
// kernel for the shape (block2 at batch 1 here); the layers fused away have no output of their own.
TEST(GoldenCpu, OnednnStepsNameTheirFusedLayers) {
  const Model& model = main_model();
  auto net = make_backend("cpu")->prepare(model, PrepareConfig{1, 224, 224, Precision::fp32});
  const std::vector<ExecStep>& steps = net->steps();
  ASSERT_LE(steps.size(), 54u);
  std::vector<int> covered;
  for (const ExecStep& step : steps) {
    covered.insert(covered.end(), step.layers.begin(), step.layers.end());
    EXPECT_EQ(step.variant.rfind("onednn ", 0), 0u) << step.name << ": " << step.variant;
    const Layer& first = model.layers[static_cast<size_t>(step.layers.front())];
    if (step.layers.size() > 1) EXPECT_EQ(first.kind, LayerKind::Conv2d) << step.name;
    int convs = 0;
    for (size_t k = 1; k < step.layers.size(); ++k) {
      const Layer& l = model.layers[static_cast<size_t>(step.layers[k])];
      if (l.kind == LayerKind::Conv2d) {  // a depthwise convolution run as the expansion's post-op
        ++convs;
        EXPECT_TRUE(l.conv.depthwise() && first.conv.pointwise()) << step.name;
        EXPECT_NE(step.variant.find("+dw3x3"), std::string::npos) << step.name << ": " << step.variant;
      } else {
        EXPECT_TRUE(l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ResidualAdd) << step.name;
      }
    }
    EXPECT_LE(convs, 1) << step.name;
  }
  std::vector<int> all(99);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(covered, all);  // every layer once, in order
  EXPECT_EQ(steps[0].name, "Conv2d 0 + ReLU6 1");
  EXPECT_TRUE(std::any_of(steps.begin(), steps.end(),
                          [](const ExecStep& s) { return s.name == "Conv2d 14 + ResidualAdd 15"; }));
  // Under a cap on oneDNN's ISA (the CpuIsa* runs of CTest), the kernels are the capped ISA's.
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string isa = cap ? cap : "";
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa == "AVX2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    EXPECT_NE(steps[0].variant.find(":avx2"), std::string::npos) << steps[0].variant;
  if (isa == "SSE41") EXPECT_NE(steps[0].variant.find(":sse41"), std::string::npos) << steps[0].variant;
#endif
  std::printf("[  kernels ] %s%s: %s\n", make_backend("cpu")->description().c_str(),
              isa.empty() ? "" : (" (ONEDNN_MAX_CPU_ISA=" + isa + ")").c_str(), steps[0].variant.c_str());

  RunOptions keep;
  keep.keep_layer_outputs = true;
  const Golden g = read_golden("cat");
  const Tensor logits = net->run(golden_tensor(g), keep);
  const std::vector<LayerStats> stats = analyse(model, 1, 224, 224);
  int materialised = 0;
  for (const ExecStep& step : steps)
    for (int l : step.layers) {
      const Tensor& out = net->layer_outputs()[static_cast<size_t>(l)];
      if (l == step.layers.back()) {
        ++materialised;
        EXPECT_EQ(out.shape, stats[static_cast<size_t>(l)].output) << "layer " << l;
      } else {
        EXPECT_TRUE(out.empty()) << "layer " << l << " is fused away in " << step.name;
      }
    }
  EXPECT_EQ(materialised, static_cast<int>(steps.size()));
  EXPECT_EQ(net->layer_outputs().back().data, logits.data);
  EXPECT_LT(rel_l2(logits.data, g.logits), kMaxRelL2);
}

// Every layer the oneDNN backend materialises, in NCHW as asked for, against the reference's output of the
// same layer, on fresh random data: batch 1 and 8 at 224x224, batch 3 at 193x257, batch 2 at 97x131.
TEST(GoldenCpu, OnednnLayersMatchTheReference) {
  const uint32_t seed = fresh_seed();
  std::printf("[   seed   ] %u (set MNV2_TEST_SEED to repeat)\n", seed);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const Model& model = main_model();
  const double bound = precision_layer_threshold(Precision::fp32);
  struct Size {
    int batch, h, w;
  };
  for (const Size& size : {Size{1, 224, 224}, Size{8, 224, 224}, Size{3, 193, 257}, Size{2, 97, 131}}) {
    const std::string what = "seed " + std::to_string(seed) + ", batch " + std::to_string(size.batch) + " at " +
                             std::to_string(size.h) + "x" + std::to_string(size.w);
    const PrepareConfig config{size.batch, size.h, size.w, Precision::fp32};
    Tensor input(Shape{size.batch, 3, size.h, size.w});
    for (float& x : input.data) x = dist(gen);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    auto reference = make_backend("cpu-ref")->prepare(model, config);
    auto onednn = make_backend("cpu")->prepare(model, config);
    const Tensor ref_logits = reference->run(input, keep);
    const Tensor logits = onednn->run(input, keep);
    double worst = 0;
    int worst_layer = -1, compared = 0;
    for (size_t i = 0; i < model.layers.size(); ++i) {
      const Tensor& got = onednn->layer_outputs()[i];
      if (got.empty()) continue;  // fused away (OnednnStepsNameTheirFusedLayers checks which)
      const Tensor& want = reference->layer_outputs()[i];
      ASSERT_EQ(got.shape, want.shape) << what << ", layer " << i;
      const ErrorStats e = compare(got.data.data(), want.data.data(), static_cast<int64_t>(got.data.size()));
      EXPECT_LT(e.rel_l2, bound) << what << ", layer " << i << " " << describe(model.layers[i]);
      if (e.rel_l2 > worst) {
        worst = e.rel_l2;
        worst_layer = static_cast<int>(i);
      }
      ++compared;
    }
    const ErrorStats e = compare(logits.data.data(), ref_logits.data.data(), static_cast<int64_t>(logits.data.size()));
    std::printf("[  layers  ] %s: %d layers, worst rel L2 %.3e (layer %d %s); logits %.3e\n", what.c_str(), compared,
                worst, worst_layer, worst_layer >= 0 ? model.layers[static_cast<size_t>(worst_layer)].name.c_str() : "",
                e.rel_l2);
    EXPECT_EQ(compared, static_cast<int>(onednn->steps().size())) << what;  // one materialised layer per step
    EXPECT_LT(e.rel_l2, kMaxRelL2) << what;
  }
}

}  // namespace
}  // namespace mnv2::test
