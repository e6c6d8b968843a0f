// The cuda backend (our own kernels) on a GPU, in both variants (fast: NHWC + fused epilogues; baseline:
// im2col + GEMM, one step per layer): logits against every golden file, every materialised layer against
// the cpu backend (batch 1 and 3, odd input sizes, the second model), a table of single convolutions, small
// networks that exercise every fallback, fused-step attribution, the CUDA graph against layer-by-layer runs,
// observers, the profiler with both timers, and errors. Every test skips where there is no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/tensor.h"
#include "mnv2/timing.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// Float32 (FFMA) like the cpu reference; only the order of summation differs.
const double kMaxRelL2 = precision_logits_bound(Precision::fp32);

// The options every cuda network of the current scope is prepared with, as a front end passes them
// (PrepareConfig::cuda); ScopedOption sets one of them for one scope.
CudaOptions g_options;

class ScopedOption {
 public:
  // name: "variant", "fusion", "graph", "gemm_tile", "pdl" or "splitk"; the value as the flags take it.
  ScopedOption(const std::string& name, const std::string& value) : saved_(g_options) {
    if (name == "variant") {
      g_options.variant = parse_cuda_variant(value);
    } else if (name == "fusion") {
      g_options.fusion = parse_cuda_fusion(value);
    } else if (name == "graph") {
      g_options.graph = parse_cuda_graph(value);
    } else if (name == "gemm_tile") {
      g_options.gemm_tile = value;
    } else if (name == "pdl") {
      g_options.pdl = parse_cuda_pdl(value);
    } else if (name == "splitk") {
      g_options.splitk = parse_cuda_splitk(value);
    } else {
      throw std::logic_error("no cuda option " + name);
    }
  }
  ~ScopedOption() { g_options = saved_; }
  ScopedOption(const ScopedOption&) = delete;
  ScopedOption& operator=(const ScopedOption&) = delete;

 private:
  CudaOptions saved_;
};

// The cuda backend, handed g_options in every prepare() (expect_layers_match_cpu prepares through it too).
class OptionedBackend final : public Backend {
 public:
  explicit OptionedBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::string description() const override { return inner_->description(); }
  Availability availability() const override { return inner_->availability(); }
  std::optional<std::string> unsupported_reason(const Layer& l) const override { return inner_->unsupported_reason(l); }
  bool supports(Precision p) const override { return inner_->supports(p); }
  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    PrepareConfig c = config;
    c.cuda = g_options;
    return inner_->prepare(model, c);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

const char* const kVariants[] = {"fast", "baseline"};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): cuda backend tests skipped";
    backend_ = std::make_unique<OptionedBackend>(make_backend("cuda"));
    const Availability a = backend_->availability();
    ASSERT_TRUE(a.available) << "a CUDA device is present but the cuda backend is unavailable: " << a.reason;
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, int batch, int height, int width,
                                       Precision precision = Precision::fp32) const {
    PrepareConfig config;
    config.batch = batch;
    config.height = height;
    config.width = width;
    config.precision = precision;
    return backend_->prepare(model, config);
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaBackendTest, DescribesItself) {
  const std::string text = backend_->description();
  EXPECT_NE(text.find("custom CUDA kernels"), std::string::npos) << text;
  EXPECT_NE(text.find(cuda_environment().devices.front().name), std::string::npos) << text;
  std::printf("cuda backend: %s\n", text.c_str());
}

TEST_F(CudaBackendTest, LogitsMatchEveryGoldenFileInBothVariants) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    SCOPED_TRACE(std::string("variant ") + variant);
    auto net = prepare(main_model(), 1, 224, 224);
    for (const std::string& name : golden_image_names()) {
      SCOPED_TRACE("golden " + name);
      const GoldenRun r = run_golden(*net, name, variant, kMaxRelL2);
      EXPECT_LT(r.rel_l2, kMaxRelL2);
      EXPECT_EQ(r.top5, r.golden.top5);
    }
    auto tv = prepare(torchvision_model(), 1, 224, 224);
    const GoldenRun r = run_golden(*tv, "torchvision_random", variant, kMaxRelL2);
    EXPECT_LT(r.rel_l2, kMaxRelL2);
    EXPECT_EQ(r.top5, r.golden.top5);
  }
}

// Every step covers consecutive layers, each layer exactly once; a fused step's name lists them all.
void expect_steps_cover_layers(const std::vector<ExecStep>& steps, size_t layers) {
  std::vector<int> seen(layers, 0);
  int next = 0;
  for (const ExecStep& s : steps) {
    ASSERT_FALSE(s.layers.empty()) << s.name;
    for (int l : s.layers) {
      ASSERT_EQ(l, next) << "step '" << s.name << "' does not continue at layer " << next;
      ++seen[static_cast<size_t>(l)];
      ++next;
      EXPECT_NE(s.name.find(" " + std::to_string(l)), std::string::npos) << s.name << " does not name layer " << l;
    }
    EXPECT_FALSE(s.variant.empty()) << s.name;
  }
  for (size_t l = 0; l < layers; ++l) EXPECT_EQ(seen[l], 1) << "layer " << l;
}

// A graph replay (no observer) and a layer-by-layer run (a per-step observer: one call before and after each step
// and the run) give bitwise the same logits on the same random input of `shape`.
void expect_graph_equals_layer_by_layer(PreparedNet& net, const Shape& shape) {
  const Tensor input = random_input(shape, fresh_seed());
  const Tensor graph = net.run(input);  // no observer: the graph
  RecordingObserver observer;
  RunOptions per_step;
  per_step.observer = &observer;
  const Tensor layers = net.run(input, per_step);  // a per-step observer: layer by layer
  EXPECT_EQ(observer.calls.size(), 2 * net.steps().size() + 2);
  ASSERT_EQ(graph.data.size(), layers.data.size());
  EXPECT_EQ(std::memcmp(graph.data.data(), layers.data.data(), graph.data.size() * sizeof(float)), 0);
}

// Runs `model` through cpu (fp32) and cuda (in `precision`) on the same random input, keeping every layer
// output: the logits must stay within the mode's stated bound and every layer the cuda backend materialises
// within 1e-5 (fp32) or the diff's divergence threshold of the mode (precision_layer_threshold); fused-away
// layers must be empty, and only those.
void expect_layers_match_cpu(const Backend& cuda, const Model& model, int batch, int height, int width,
                             const std::string& what, Precision precision = Precision::fp32) {
  const uint64_t seed = fresh_seed();
  const std::string where = what + ", " + to_string(precision) + ", batch " + std::to_string(batch) + ", " +
                            std::to_string(height) + "x" + std::to_string(width) +
                            ", MNV2_TEST_SEED=" + std::to_string(seed);
  const double logits_bound = precision_logits_bound(precision);
  const double layer_bound = precision == Precision::fp32 ? kMaxRelL2 : precision_layer_threshold(precision);
  SCOPED_TRACE(where);
  PrepareConfig config;
  config.batch = batch;
  config.height = height;
  config.width = width;
  const Tensor input = random_input(Shape{batch, model.input_channels, height, width}, seed);
  RunOptions keep;
  keep.keep_layer_outputs = true;

  auto cpu_net = make_backend("cpu-ref")->prepare(model, config);
  const Tensor cpu_logits = cpu_net->run(input, keep);
  config.precision = precision;
  auto gpu_net = cuda.prepare(model, config);
  const Tensor gpu_logits = gpu_net->run(input, keep);

  const std::vector<ExecStep>& steps = gpu_net->steps();
  expect_steps_cover_layers(steps, model.layers.size());
  std::vector<int> step_of(model.layers.size(), -1);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int l : steps[s].layers) step_of[static_cast<size_t>(l)] = static_cast<int>(s);

  ASSERT_EQ(gpu_logits.shape, cpu_logits.shape);
  EXPECT_LT(rel_l2_of(gpu_logits, cpu_logits), logits_bound) << "logits";

  const std::vector<Tensor>& gpu_out = gpu_net->layer_outputs();
  const std::vector<Tensor>& cpu_out = cpu_net->layer_outputs();
  ASSERT_EQ(gpu_out.size(), model.layers.size());
  double worst = 0;
  size_t worst_layer = 0;
  int compared = 0;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& layer = model.layers[i];
    const ExecStep& step = steps[static_cast<size_t>(step_of[i])];
    const bool materialised = step.layers.back() == static_cast<int>(i);
    if (!materialised) {
      EXPECT_TRUE(gpu_out[i].empty()) << "layer " << i << " is fused away in '" << step.name << "' yet has data";
      continue;
    }
    ASSERT_EQ(gpu_out[i].shape, cpu_out[i].shape) << "layer " << i;
    const double err = rel_l2_of(gpu_out[i], cpu_out[i]);
    ++compared;
    if (!(err <= worst)) {
      worst = err;
      worst_layer = i;
    }
    EXPECT_LT(err, layer_bound) << "layer " << i << " '" << layer.name << "' " << describe(layer) << " output "
                                << cpu_out[i].shape.str() << ", step '" << step.name << "' variant '" << step.variant
                                << "'";
  }
  std::printf("%s: %zu steps, %d layers compared, logits rel L2 %.3g, worst layer %zu '%s' rel L2 %.3g\n",
              where.c_str(), steps.size(), compared, rel_l2_of(gpu_logits, cpu_logits), worst_layer,
              model.layers[worst_layer].name.c_str(), worst);
}

TEST_F(CudaBackendTest, EveryLayerMatchesCpuBatch1) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, main_model(), 1, 224, 224, std::string("main ") + variant);
  }
}
TEST_F(CudaBackendTest, EveryLayerMatchesCpuBatch3) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, main_model(), 3, 224, 224, std::string("main ") + variant);
  }
}
TEST_F(CudaBackendTest, EveryLayerMatchesCpuOddInputSize) {
  // Odd sizes: every stride-2 convolution with pads [0,0,1,1] meets odd and even maps, and 7x7 maps become
  // maps with pixel counts that are not multiples of 4.
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, main_model(), 1, 193, 257, std::string("main ") + variant);
    expect_layers_match_cpu(*backend_, main_model(), 2, 97, 131, std::string("main ") + variant);
  }
}
TEST_F(CudaBackendTest, EveryLayerMatchesCpuTorchvisionModel) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, std::string("torchvision ") + variant);
  }
}

TEST_F(CudaBackendTest, FastPathFusesEpiloguesAndNamesEveryCoveredLayer) {
  auto net = prepare(main_model(), 1, 224, 224);
  const std::vector<ExecStep>& steps = net->steps();
  // 99 layers: 35 ReLU6 and 10 residual adds fold into the convolutions before them.
  EXPECT_EQ(steps.size(), 54u);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps[0].name, "Conv2d 0 + ReLU6 1");
  EXPECT_NE(steps[0].variant.find("direct nchw"), std::string::npos) << steps[0].variant;
  bool saw_residual = false, saw_dw_s2 = false;
  for (const ExecStep& s : steps) {
    EXPECT_EQ(s.variant.rfind("fast: ", 0), 0u) << s.variant;
    if (s.name == "Conv2d 14 + ResidualAdd 15") {
      saw_residual = true;
      EXPECT_NE(s.variant.find("+residual"), std::string::npos) << s.variant;
      EXPECT_NE(s.variant.find("gemm"), std::string::npos) << s.variant;
    }
    if (s.name == "Conv2d 7 + ReLU6 8") {
      saw_dw_s2 = true;
      EXPECT_NE(s.variant.find("dw3x3 s2"), std::string::npos) << s.variant;
    }
    std::printf("  %-32s %s\n", s.name.c_str(), s.variant.c_str());
  }
  EXPECT_TRUE(saw_residual);
  EXPECT_TRUE(saw_dw_s2);
  EXPECT_NE(steps[0].variant.find("3x3x3"), std::string::npos) << steps[0].variant;
  EXPECT_NE(steps.back().variant.find("padded to 1004"), std::string::npos) << steps.back().variant;
}

TEST_F(CudaBackendTest, BaselineRunsOneStepPerLayer) {
  ScopedOption env("variant", "baseline");
  auto net = prepare(main_model(), 2, 224, 224);
  const std::vector<ExecStep>& steps = net->steps();
  ASSERT_EQ(steps.size(), main_model().layers.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].layers, std::vector<int>{static_cast<int>(i)});
    EXPECT_EQ(steps[i].variant.rfind("baseline: ", 0), 0u) << steps[i].variant;
  }
  EXPECT_NE(steps[0].variant.find("im2col"), std::string::npos) << steps[0].variant;
  EXPECT_NE(steps[4].variant.find("no im2col"), std::string::npos) << steps[4].variant;  // 1x1 projection
}

TEST_F(CudaBackendTest, UnknownVariantOrGraphModeIsUsageError) {
  EXPECT_THROW(parse_cuda_variant("turbo"), UsageError);
  EXPECT_THROW(parse_cuda_graph("sometimes"), UsageError);
  ScopedOption tile("gemm_tile", "7x7");
  EXPECT_THROW(prepare(main_model(), 1, 224, 224), UsageError);
}

Layer& add_layer(Model& m, LayerKind kind, std::vector<int> inputs) {
  Layer l;
  l.index = static_cast<int>(m.layers.size());
  l.kind = kind;
  l.name = "l" + std::to_string(l.index);
  l.inputs = std::move(inputs);
  m.layers.push_back(l);
  return m.layers.back();
}

// A single convolution reads the network input (the NCHW direct path); a second one behind a ReLU reads an
// NHWC map (depthwise, pointwise or the NHWC direct fallback). Both variants, every shape of the table.
TEST_F(CudaBackendTest, ConvolutionTableMatchesCpu) {
  const ConvCase cases[] = {
      {3, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 16, 16, true},     // the main model's stem
      {8, 8, 3, 3, 2, 2, 0, 0, 1, 1, 8, 15, 17, true},     // its stride-2 depthwise, odd map
      {8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 9, 9, true},       // symmetric depthwise
      {6, 4, 3, 3, 2, 2, 1, 0, 0, 2, 2, 11, 10, true},     // groups 2, asymmetric pads
      {4, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 7, 5, false},      // pointwise without bias
      {5, 7, 2, 3, 2, 1, 2, 1, 0, 1, 1, 8, 9, true},       // non-square kernel, mixed strides and pads
      {16, 16, 5, 5, 2, 2, 2, 2, 2, 2, 16, 12, 12, true},  // 5x5 depthwise
      {4, 4, 3, 3, 1, 1, 2, 0, 0, 3, 1, 6, 7, true},       // pads larger than one side needs
  };
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    for (const ConvCase& c : cases) {
      const uint64_t seed = fresh_seed();
      std::mt19937_64 gen(seed);
      // The network input feeds a ReLU6 (an NHWC copy in the fast path), which feeds the convolution.
      Model m = single_conv_model(c, gen);
      Model model;
      model.input_channels = c.in_channels;
      model.input_height = c.height;
      model.input_width = c.width;
      Layer& relu = add_layer(model, LayerKind::ReLU6, {kNetworkInput});
      relu.clip_min = 0.0f;
      relu.clip_max = 6.0f;
      Layer conv = m.layers[0];
      conv.index = 1;
      conv.inputs = {0};
      model.layers.push_back(conv);
      model.num_classes = c.out_channels;
      std::ostringstream what;
      what << variant << " in " << c.in_channels << " out " << c.out_channels << " kernel " << c.kernel_h << "x"
           << c.kernel_w << " stride " << c.stride_h << "x" << c.stride_w << " pads [" << c.pad_top << "," << c.pad_left
           << "," << c.pad_bottom << "," << c.pad_right << "] groups " << c.groups << " map " << c.height << "x"
           << c.width;
      expect_layers_match_cpu(*backend_, m, 2, c.height, c.width, what.str() + " (reads the input)");
      expect_layers_match_cpu(*backend_, model, 2, c.height, c.width, what.str() + " (behind a ReLU6)");
    }
  }
}

// Every op kind, fused the way MobileNetV2 is (ReLU without an upper bound, a clip other than 6, a residual
// add whose other operand is an earlier step's output).
Model every_op_model(std::mt19937_64& gen) {
  Model m = single_conv_model({3, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 10, 12, true}, gen);
  Layer& relu = add_layer(m, LayerKind::ReLU, {0});
  relu.clip_min = 0.0f;
  relu.clip_max = std::numeric_limits<float>::infinity();
  Layer& pw = add_layer(m, LayerKind::Conv2d, {1});
  pw.conv.in_channels = pw.conv.out_channels = 8;
  pw.weight = random_floats(gen, 64, -1.0f, 1.0f);
  pw.bias = random_floats(gen, 8, -1.0f, 1.0f);
  Layer& clip = add_layer(m, LayerKind::ReLU, {2});
  clip.clip_min = 0.0f;
  clip.clip_max = 3.5f;
  add_layer(m, LayerKind::ResidualAdd, {1, 3});
  add_layer(m, LayerKind::GlobalAveragePool, {4});
  Layer& fc = add_layer(m, LayerKind::Linear, {5});
  fc.in_features = 8;
  fc.out_features = 5;
  fc.weight = random_floats(gen, 40, -1.0f, 1.0f);
  fc.bias = random_floats(gen, 5, -1.0f, 1.0f);
  m.num_classes = 5;
  return m;
}

TEST_F(CudaBackendTest, SmallNetworkOfEveryOpMatchesCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  const Model m = every_op_model(gen);
  for (const Layer& l : m.layers) ASSERT_FALSE(backend_->unsupported_reason(l)) << describe(l);
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, m, 3, 10, 12, std::string("every op, ") + variant);
  }
  auto net = prepare(m, 1, 10, 12);
  ASSERT_EQ(net->steps().size(), 4u);
  EXPECT_EQ(net->steps()[0].name, "Conv2d 0 + ReLU 1");
  EXPECT_EQ(net->steps()[1].name, "Conv2d 2 + ReLU 3 + ResidualAdd 4");
}

// Layers the fast path cannot fuse: a clip and an add reading the network input (NHWC copy), a clip whose
// input has a second reader, an add of two non-convolution outputs, a stride-2 depthwise with asymmetric
// pads feeding a Linear over a 3x4 map (weights permuted for the NHWC flattening order).
Model unfusable_model(std::mt19937_64& gen) {
  Model m;
  m.input_channels = 4;
  m.input_height = 7;
  m.input_width = 8;
  Layer& in_clip = add_layer(m, LayerKind::ReLU6, {kNetworkInput});  // 0
  in_clip.clip_min = 0.0f;
  in_clip.clip_max = 6.0f;
  add_layer(m, LayerKind::ResidualAdd, {0, kNetworkInput});  // 1
  Layer& pw = add_layer(m, LayerKind::Conv2d, {1});          // 2: pointwise 4 -> 4, two readers
  pw.conv.in_channels = pw.conv.out_channels = 4;
  pw.weight = random_floats(gen, 16, -1.0f, 1.0f);
  Layer& clip = add_layer(m, LayerKind::ReLU6, {2});  // 3: not fused (2 has another reader)
  clip.clip_min = 0.0f;
  clip.clip_max = 6.0f;
  add_layer(m, LayerKind::ResidualAdd, {2, 3});      // 4
  Layer& dw = add_layer(m, LayerKind::Conv2d, {4});  // 5: depthwise 3x3 s2, pads [0,0,1,1]
  dw.conv.in_channels = dw.conv.out_channels = dw.conv.groups = 4;
  dw.conv.kernel_h = dw.conv.kernel_w = 3;
  dw.conv.stride_h = dw.conv.stride_w = 2;
  dw.conv.pad_bottom = dw.conv.pad_right = 1;
  dw.weight = random_floats(gen, 36, -1.0f, 1.0f);
  dw.bias = random_floats(gen, 4, -1.0f, 1.0f);
  Layer& fc = add_layer(m, LayerKind::Linear, {5});  // 6: over the 4-channel 3x4 map
  fc.in_features = 4 * 3 * 4;
  fc.out_features = 6;
  fc.weight = random_floats(gen, 6 * 48, -1.0f, 1.0f);
  fc.bias = random_floats(gen, 6, -1.0f, 1.0f);
  m.num_classes = 6;
  return m;
}

TEST_F(CudaBackendTest, UnfusableLayersMatchCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  const Model m = unfusable_model(gen);
  const std::vector<LayerStats> stats = analyse(m, 2, 7, 8);
  ASSERT_EQ(stats[5].output, (Shape{2, 4, 3, 4}));
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    expect_layers_match_cpu(*backend_, m, 2, 7, 8, std::string("unfusable, ") + variant);
  }
  auto net = prepare(m, 2, 7, 8);
  EXPECT_EQ(net->steps().size(), 7u);
  EXPECT_NE(net->steps()[0].variant.find("nchw->nhwc"), std::string::npos) << net->steps()[0].variant;
  EXPECT_NE(net->steps()[6].variant.find("permuted"), std::string::npos) << net->steps()[6].variant;
}

TEST_F(CudaBackendTest, GraphReplayAndLayerByLayerRunsAreBitwiseIdentical) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    SCOPED_TRACE(variant);
    auto net = prepare(main_model(), 2, 224, 224);
    const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
    const Tensor graph = net->run(input);  // no observer: the graph
    RecordingObserver observer;
    RunOptions per_step;
    per_step.observer = &observer;
    const Tensor layers = net->run(input, per_step);  // a per-step observer: layer by layer
    EXPECT_EQ(observer.calls.size(), 2 * net->steps().size() + 2);
    ASSERT_EQ(graph.data.size(), layers.data.size());
    EXPECT_EQ(std::memcmp(graph.data.data(), layers.data.data(), graph.data.size() * sizeof(float)), 0);
    for (int i = 0; i < 3; ++i) {
      RunOptions options;
      options.keep_layer_outputs = i == 1;  // downloading the layers must not change the result either
      const Tensor again = net->run(input, options);
      EXPECT_EQ(std::memcmp(again.data.data(), graph.data.data(), graph.data.size() * sizeof(float)), 0) << i;
    }
    ScopedOption off("graph", "off");
    auto plain = prepare(main_model(), 2, 224, 224);
    const Tensor no_graph = plain->run(input);
    EXPECT_EQ(std::memcmp(no_graph.data.data(), graph.data.data(), graph.data.size() * sizeof(float)), 0);
  }
}

TEST_F(CudaBackendTest, ObserverSeesEveryStepInOrder) {
  auto net = prepare(main_model(), 1, 224, 224);
  RecordingObserver observer;
  RunOptions options;
  options.observer = &observer;
  net->run(random_input(Shape{1, 3, 224, 224}, 3), options);
  const size_t steps = net->steps().size();
  ASSERT_EQ(observer.calls.size(), 2 * steps + 2);
  EXPECT_EQ(observer.calls.front().what, 'B');
  EXPECT_EQ(observer.calls.back().what, 'E');
  for (size_t i = 0; i < steps; ++i) {
    EXPECT_EQ(observer.calls[1 + 2 * i].what, 's');
    EXPECT_EQ(observer.calls[1 + 2 * i].step, static_cast<int>(i));
    EXPECT_EQ(observer.calls[2 + 2 * i].what, 'e');
    EXPECT_EQ(observer.calls[2 + 2 * i].step, static_cast<int>(i));
  }
  void* stream = observer.calls.front().stream;
  EXPECT_NE(stream, nullptr);
  for (const auto& call : observer.calls) EXPECT_EQ(call.stream, stream);
}

TEST_F(CudaBackendTest, GraphModeOnRefusesPerStepTimingButTimesWholeRuns) {
  ScopedOption env("graph", "on");
  auto net = prepare(main_model(), 1, 224, 224);
  const Tensor input = random_input(Shape{1, 3, 224, 224}, 5);
  RecordingObserver observer;
  RunOptions per_step;
  per_step.observer = &observer;
  try {
    net->run(input, per_step);
    ADD_FAILURE() << "a per-step observer with the graph option on must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("graph"), std::string::npos) << e.what();
  }
  auto timer = make_run_timer(true);
  RunOptions whole;
  whole.observer = timer.get();
  net->run(input, whole);
  EXPECT_GT(timer->last_run_ns(), 0);
  std::printf("graph replay at batch 1: %.3f ms (event pair around the graph launch)\n", timer->last_run_ns() / 1e6);
}

// CUPTI attributes the GPU work of a graph replay to steps through the node map recorded at capture: every
// step gets GPU time and the same kernels, in the same order, as when it runs layer by layer; the upload and
// download are in the run but in no step; the logits do not change.
TEST_F(CudaBackendTest, CuptiAttributesGraphReplayWorkToSteps) {
  const std::pair<const char*, Precision> runs[] = {
      {"fast", Precision::fp32}, {"baseline", Precision::fp32}, {"fast", Precision::fp16}, {"fast", Precision::tf32}};
  for (const auto& [variant, precision] : runs) {
    if (!backend_->supports(precision)) {
      std::printf("%s not run here: %s\n", to_string(precision), tf32_kernels_missing().c_str());
      continue;
    }
    ScopedOption env("variant", variant);
    SCOPED_TRACE(std::string(variant) + " " + to_string(precision));
    auto net = prepare(main_model(), 2, 224, 224, precision);
    ASSERT_TRUE(net->has_graph());
    const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
    const Tensor reference = net->run(input);
    auto cupti = make_timing_source(TimerKind::cupti_kernel);  // falls back to events when CUPTI cannot start
    if (cupti->kind() != TimerKind::cupti_kernel) GTEST_SKIP() << "CUPTI unavailable: " << cupti->warnings().front();
    const int nsteps = static_cast<int>(net->steps().size());
    auto kernels_per_step = [&](bool graph, IterationTiming* timing) {
      RunOptions options;
      options.observer = cupti.get();
      options.graph_replay = graph;
      cupti->begin_iteration(nsteps);
      const Tensor logits = net->run(input, options);
      *timing = cupti->end_iteration();
      EXPECT_EQ(std::memcmp(logits.data.data(), reference.data.data(), reference.data.size() * sizeof(float)), 0);
      std::vector<std::vector<std::string>> names(static_cast<size_t>(nsteps));
      for (const KernelRecord& k : timing->records) {
        if (k.kind != "kernel") continue;
        EXPECT_GE(k.step, 0) << k.name << " is in no step";
        if (k.step >= 0 && k.step < nsteps) names[static_cast<size_t>(k.step)].push_back(k.name);
      }
      return names;
    };
    IterationTiming by_layer_timing, graph_timing, again_timing;
    const auto by_layer = kernels_per_step(false, &by_layer_timing);
    const auto in_graph = kernels_per_step(true, &graph_timing);  // the observed graph is instantiated here
    const auto again = kernels_per_step(true, &again_timing);     // and replayed again here
    EXPECT_FALSE(by_layer_timing.graph_replay);
    EXPECT_TRUE(graph_timing.graph_replay);
    EXPECT_TRUE(again_timing.graph_replay);
    ASSERT_EQ(graph_timing.step_ns.size(), static_cast<size_t>(nsteps));
    for (int s = 0; s < nsteps; ++s) {
      const auto i = static_cast<size_t>(s);
      EXPECT_GT(graph_timing.step_ns[i], 0) << net->steps()[i].name;
      EXPECT_GT(again_timing.step_ns[i], 0) << net->steps()[i].name;
      EXPECT_FALSE(by_layer[i].empty()) << net->steps()[i].name;
      EXPECT_EQ(in_graph[i], by_layer[i]) << net->steps()[i].name;
      EXPECT_EQ(again[i], by_layer[i]) << net->steps()[i].name;
    }
    int copies = 0;
    for (const KernelRecord& k : graph_timing.records) {
      if (k.kind != "memcpy") continue;
      ++copies;
      EXPECT_EQ(k.step, -1) << k.name;
    }
    EXPECT_GE(copies, 2);  // input upload, logits download
    EXPECT_TRUE(cupti->warnings().empty()) << cupti->warnings().front();
  }
}

// Claims to see inside graph replays, for the refusals below (the backend checks before instantiating).
class GraphClaimingObserver final : public StepObserver {
 public:
  void step_begin(int, void*) override {}
  void step_end(int, void*) override {}
  uint64_t graph_observer_id() const override { return 12345; }
};

TEST_F(CudaBackendTest, GraphReplayIsRefusedToEventsAndWithoutAGraph) {
  auto net = prepare(main_model(), 1, 224, 224);
  const Tensor input = random_input(Shape{1, 3, 224, 224}, fresh_seed());
  auto events = make_timing_source(TimerKind::cuda_event);
  RunOptions options;
  options.observer = events.get();
  options.graph_replay = true;
  events->begin_iteration(static_cast<int>(net->steps().size()));
  try {
    net->run(input, options);
    ADD_FAILURE() << "cudaEvent step timing of a graph replay must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cupti"), std::string::npos) << e.what();
  }
  ScopedOption off("graph", "off");
  auto plain = prepare(main_model(), 1, 224, 224);
  EXPECT_FALSE(plain->has_graph());
  GraphClaimingObserver claiming;
  options.observer = &claiming;
  try {
    plain->run(input, options);
    ADD_FAILURE() << "a graph replay without a graph must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("graph option \"off\""), std::string::npos) << e.what();
  }
}

// Fusion expand_dw: expansion + depthwise in one kernel. Same checks as the unfused fast path:
// golden logits, every materialised layer against cpu (batch 1 and 3, an odd input size, the second model),
// the graph bitwise equal to layer-by-layer runs, and fused steps named after all four layers they cover.
TEST_F(CudaBackendTest, FusedExpandDepthwiseMatchesCpuAndIsAttributedAsFused) {
  ScopedOption variant("variant", "fast");
  ScopedOption fuse("fusion", "expand_dw");
  auto net = prepare(main_model(), 1, 224, 224);
  for (const std::string& name : golden_image_names()) {
    SCOPED_TRACE("golden " + name);
    const GoldenRun r = run_golden(*net, name, "fused", kMaxRelL2);
    EXPECT_LT(r.rel_l2, kMaxRelL2);
    EXPECT_EQ(r.top5, r.golden.top5);
  }
  int fused = 0;
  for (const ExecStep& step : net->steps()) {
    if (step.variant.find("expand1x1+dw3x3") == std::string::npos) continue;
    ++fused;
    EXPECT_EQ(step.layers.size(), 4u) << step.name;
    EXPECT_NE(step.name.find("Conv2d"), step.name.rfind("Conv2d")) << step.name;  // both convolutions named
    EXPECT_NE(step.name.find("ReLU6"), std::string::npos) << step.name;
  }
  EXPECT_EQ(fused, 16) << "at batch 1 every expanding block (1..16) is memory- or latency-bound";
  expect_steps_cover_layers(net->steps(), main_model().layers.size());
  expect_layers_match_cpu(*backend_, main_model(), 1, 224, 224, "fused expand_dw");
  expect_layers_match_cpu(*backend_, main_model(), 3, 224, 224, "fused expand_dw");
  expect_layers_match_cpu(*backend_, main_model(), 2, 193, 257, "fused expand_dw");
  expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, "fused expand_dw torchvision");

  auto batch2 = prepare(main_model(), 2, 224, 224);
  expect_graph_equals_layer_by_layer(*batch2, Shape{2, 3, 224, 224});
}

TEST_F(CudaBackendTest, RepeatedRunsAreBitwiseIdentical) {
  auto net = prepare(main_model(), 2, 224, 224);
  const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
  const Tensor first = net->run(input);
  for (int i = 0; i < 5; ++i) {
    const Tensor again = net->run(input);
    EXPECT_EQ(std::memcmp(again.data.data(), first.data.data(), first.data.size() * sizeof(float)), 0) << "run " << i;
  }
}

// The kernels a run launches, counted from the CUDA graph's kernel nodes (or a capture of one run without a
// graph), are what the plan predicts: one per step, plus a reduction kernel per split GEMM where the split is not
// reduced in the kernel, plus the input's NHWC copy; the plan's own count (in the description) agrees.
TEST_F(CudaBackendTest, KernelsPerRunIsWhatThePlanPredicts) {
  for (int batch : {1, 3})
    for (Precision precision : {Precision::fp32, Precision::fp16})
      for (const char* splitk : {"in_kernel", "separate"})
        for (const char* graph : {"auto", "off"}) {
          ScopedOption s("splitk", splitk), g("graph", graph);
          SCOPED_TRACE(std::string("batch ") + std::to_string(batch) + " " + to_string(precision) + " splitk " +
                       splitk + " graph " + graph);
          auto net = prepare(main_model(), batch, 224, 224, precision);
          int64_t predicted = 0;
          int splits = 0;
          for (const ExecStep& step : net->steps()) {
            const bool split = step.variant.find("splitk") != std::string::npos;
            const bool in_kernel = step.variant.find("in-kernel") != std::string::npos;
            EXPECT_EQ(in_kernel, split && std::string(splitk) == "in_kernel") << step.variant;
            predicted += 1 + (split && !in_kernel ? 1 : 0) +
                         (step.variant.find("input nchw->nhwc") != std::string::npos ? 1 : 0);
            splits += split ? 1 : 0;
          }
          if (batch == 1) EXPECT_GT(splits, 0) << "batch 1 splits the small GEMMs";
          EXPECT_EQ(net->kernels_per_run(), predicted);
          const std::string d = net->description();
          EXPECT_NE(d.find("; " + std::to_string(predicted) + " kernels per run"), std::string::npos) << d;
          std::printf("batch %d %s splitk %s graph %s: %lld kernels per run (%d split GEMMs); %s\n", batch,
                      to_string(precision), splitk, graph, static_cast<long long>(net->kernels_per_run()), splits,
                      d.substr(d.rfind("; ") + 2).c_str());
        }
}

TEST_F(CudaBackendTest, ReportsMemory) {
  for (const char* variant : kVariants) {
    ScopedOption env("variant", variant);
    auto net = prepare(main_model(), 1, 224, 224);
    const MemoryReport m = net->memory();
    int64_t params = 0;
    for (const Layer& l : main_model().layers) params += l.param_count();
    EXPECT_GE(m.weight_bytes, params * static_cast<int64_t>(sizeof(float)));
    EXPECT_GT(m.activation_bytes, 0);
    EXPECT_GE(m.workspace_bytes, 0);
    std::printf("%s memory at batch 1: weights %lld B, activations %lld B, workspace %lld B\n", variant,
                static_cast<long long>(m.weight_bytes), static_cast<long long>(m.activation_bytes),
                static_cast<long long>(m.workspace_bytes));
  }
}

TEST_F(CudaBackendTest, WrongInputShapeIsUsageError) {
  auto net = prepare(main_model(), 1, 224, 224);
  EXPECT_THROW(net->run(Tensor(Shape{2, 3, 224, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 3, 225, 224})), UsageError);
  Tensor short_data(Shape{1, 3, 224, 224});
  short_data.data.pop_back();
  EXPECT_THROW(net->run(short_data), UsageError);
  const Tensor logits = net->run(random_input(Shape{1, 3, 224, 224}, 7));
  EXPECT_EQ(logits.shape, (Shape{1, 1001, 1, 1}));
}

TEST_F(CudaBackendTest, RefusesMalformedLayers) {
  for (const Layer& l : main_model().layers) EXPECT_FALSE(backend_->unsupported_reason(l)) << describe(l);
  Layer bad = main_model().layers.front();
  bad.weight.pop_back();
  EXPECT_TRUE(backend_->unsupported_reason(bad));
  Layer inverted;
  inverted.kind = LayerKind::ReLU;
  inverted.inputs = {0};
  inverted.clip_min = 6.0f;
  inverted.clip_max = 0.0f;
  EXPECT_TRUE(backend_->unsupported_reason(inverted));
}

// The profiler over the fast path: fused steps carry their layers, both timers give every step a time,
// and CUPTI names this project's kernels.
TEST_F(CudaBackendTest, ProfilerAttributesFusedStepsWithBothTimers) {
  for (TimerKind timer : {TimerKind::cuda_event, TimerKind::cupti_kernel}) {
    ProfileConfig c;
    c.backend = "cuda";
    c.batch = 2;
    c.timer = timer;
    c.warmup = 3;
    c.iters = 10;
    const RunReport r = profile(main_model(), c);
    SCOPED_TRACE(r.timer);
    ASSERT_EQ(r.steps.size(), 54u);
    EXPECT_EQ(r.layers[1].fused_group, "Conv2d 0 + ReLU6 1");
    EXPECT_EQ(r.layers[15].fused_group, "Conv2d 14 + ResidualAdd 15");
    for (const StepProfile& s : r.steps) {
      EXPECT_GT(s.time_ns.median, 0) << s.name;
      if (r.timer == "cupti_kernel") {
        ASSERT_FALSE(s.kernel_names.empty()) << s.name;
        EXPECT_NE(s.kernel_names.front().find("mnv2::kernels"), std::string::npos) << s.kernel_names.front();
      }
    }
    ASSERT_TRUE(r.end_to_end.gpu_ms.has_value());
    std::printf("%s: end to end (graph) %.3f ms GPU, sum of steps (layer by layer) %.3f ms\n", r.timer.c_str(),
                r.end_to_end.gpu_ms->median, r.sum_of_steps_ms);
  }
}

// ---- reduced precisions (tf32, fp16) ----------------------------------------------------------------------

const Precision kReduced[] = {Precision::tf32, Precision::fp16};

// The reduced modes this GPU and this build's code run: tf32 needs TF32 tensor cores in the code that runs
// (compute_80 or newer; a compute_75 PTX build runs fp16 only, and says so).
std::vector<Precision> reduced_here(const Backend& backend) {
  std::vector<Precision> out;
  for (Precision p : kReduced) {
    if (backend.supports(p))
      out.push_back(p);
    else
      std::printf("%s not run here: %s\n", to_string(p), tf32_kernels_missing().c_str());
  }
  return out;
}

// PDL and the in-kernel split-K reduction change when kernels start and who adds the partial sums, never the
// arithmetic: the logits are the same bits as a layer-by-layer run with neither, graph replays twice in a row
// included. Where the device has PDL (sm_90 with sm_90 code), auto turns it on.
TEST_F(CudaBackendTest, PdlAndInKernelSplitKLeaveTheLogitsBitForBit) {
  std::vector<Precision> precisions = {Precision::fp32};
  for (Precision p : reduced_here(*backend_)) precisions.push_back(p);
  const GpuDevice& device = cuda_environment().devices.front();
  for (int batch : {1, 3})
    for (Precision precision : precisions) {
      SCOPED_TRACE(std::string("batch ") + std::to_string(batch) + " " + to_string(precision));
      const Tensor input = random_input(Shape{batch, 3, 224, 224}, fresh_seed());
      Tensor reference;
      {
        ScopedOption pdl("pdl", "off"), splitk("splitk", "separate"), graph("graph", "off");
        reference = prepare(main_model(), batch, 224, 224, precision)->run(input);
      }
      for (const char* pdl : {"auto", "off"})
        for (const char* splitk : {"in_kernel", "separate"}) {
          ScopedOption p("pdl", pdl), s("splitk", splitk);
          SCOPED_TRACE(std::string("pdl ") + pdl + " splitk " + splitk);
          auto net = prepare(main_model(), batch, 224, 224, precision);
          const std::string d = net->description();
          if (std::string(pdl) == "off") EXPECT_NE(d.find("PDL off"), std::string::npos) << d;
          if (std::string(pdl) == "auto" && device.cc_major < 9)
            EXPECT_NE(d.find("PDL off (needs"), std::string::npos) << d;
          for (int replay = 0; replay < 2; ++replay) {
            const Tensor logits = net->run(input);
            ASSERT_EQ(logits.data.size(), reference.data.size());
            EXPECT_EQ(std::memcmp(logits.data.data(), reference.data.data(), logits.data.size() * sizeof(float)), 0)
                << "replay " << replay << ": " << d;
          }
        }
      // pdl on: runs where the device and the code have it, and is refused with the reason elsewhere.
      ScopedOption on("pdl", "on");
      try {
        auto net = prepare(main_model(), batch, 224, 224, precision);
        EXPECT_NE(net->description().find("PDL on"), std::string::npos);
        const Tensor logits = net->run(input);
        EXPECT_EQ(std::memcmp(logits.data.data(), reference.data.data(), logits.data.size() * sizeof(float)), 0);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("PDL"), std::string::npos) << e.what();
        std::printf("pdl on refused here: %s\n", e.what());
      }
    }
}

TEST_F(CudaBackendTest, FastVariantSupportsEveryPrecisionAndBaselineRefusesReducedOnes) {
  EXPECT_TRUE(backend_->supports(Precision::fp32));
  EXPECT_TRUE(backend_->supports(Precision::fp16));
  // tf32 exactly where the code that runs has TF32 tensor cores; elsewhere prepare() says why.
  const std::string no_tf32 = tf32_kernels_missing();
  EXPECT_EQ(backend_->supports(Precision::tf32), no_tf32.empty()) << no_tf32;
  if (!no_tf32.empty()) {
    try {
      prepare(main_model(), 1, 224, 224, Precision::tf32);
      ADD_FAILURE() << "tf32 must be refused where the kernels have no TF32";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("compute_80"), std::string::npos) << e.what();
    }
  }
  ScopedOption env("variant", "baseline");
  EXPECT_TRUE(backend_->supports(Precision::fp32));
  for (Precision p : kReduced) {
    try {
      prepare(main_model(), 1, 224, 224, p);
      ADD_FAILURE() << "the baseline must refuse " << to_string(p);
    } catch (const UsageError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("baseline"), std::string::npos) << text;
      EXPECT_NE(text.find(to_string(p)), std::string::npos) << text;
    }
  }
}

// The stated bound of each mode against the float64 golden logits of every photograph (and the torchvision
// export's), the class check of the reduced modes, and variant strings that say what ran.
TEST_F(CudaBackendTest, ReducedPrecisionsStayWithinTheirStatedBoundOfEveryGoldenFile) {
  for (Precision p : reduced_here(*backend_)) {
    SCOPED_TRACE(to_string(p));
    auto net = prepare(main_model(), 1, 224, 224, p);
    int tensor_core_gemms = 0, half_depthwise = 0, ffma_noted = 0;
    for (const ExecStep& s : net->steps()) {
      tensor_core_gemms += s.variant.find(p == Precision::tf32 ? "gemm tc-tf32" : "gemm tc-fp16") != std::string::npos;
      half_depthwise += s.variant.find("dw3x3") != std::string::npos && s.variant.find("half8") != std::string::npos;
      ffma_noted += s.variant.find("(fp32 FFMA)") != std::string::npos;
    }
    EXPECT_EQ(tensor_core_gemms, 35) << "34 pointwise convolutions and the Linear layer";
    EXPECT_EQ(half_depthwise, p == Precision::fp16 ? 17 : 0);
    EXPECT_EQ(ffma_noted, 18) << "the stem and 17 depthwise convolutions stay FFMA";
    if (p == Precision::fp16) {
      EXPECT_NE(net->steps().front().variant.find("nchw->half"), std::string::npos) << net->steps().front().variant;
      EXPECT_NE(net->steps().back().variant.find("padded to 1008"), std::string::npos) << net->steps().back().variant;
    }
    const std::string tag = std::string("cuda ") + to_string(p);
    for (const std::string& name : golden_image_names()) {
      SCOPED_TRACE("golden " + name);
      const GoldenRun r = run_golden(*net, name, tag, precision_logits_bound(p));
      EXPECT_LT(r.rel_l2, precision_logits_bound(p));
      expect_top_agrees(r.top5, r.golden.top5);
    }
    auto tv = prepare(torchvision_model(), 1, 224, 224, p);
    EXPECT_LT(run_golden(*tv, "torchvision_random", tag, precision_logits_bound(p)).rel_l2, precision_logits_bound(p));
  }
}

// Batch 3 at an odd size against the cpu backend (fp32): the logits within the stated bound and every
// materialised layer under the diff's divergence threshold of the mode. No class check: random pixels give
// flat logits whose order rounding may legitimately change.
TEST_F(CudaBackendTest, ReducedPrecisionsAtBatch3AndAnOddSizeMatchCpuLayerByLayer) {
  for (Precision p : reduced_here(*backend_)) expect_layers_match_cpu(*backend_, main_model(), 3, 193, 257, "main", p);
}

TEST_F(CudaBackendTest, ReducedPrecisionsOnSmallNetworksAndTheSecondModelMatchCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  const Model every_op = every_op_model(gen);
  const Model unfusable = unfusable_model(gen);
  for (Precision p : reduced_here(*backend_)) {
    expect_layers_match_cpu(*backend_, every_op, 3, 10, 12, "every op", p);
    expect_layers_match_cpu(*backend_, unfusable, 2, 7, 8, "unfusable", p);
    expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, "torchvision", p);
  }
}

// In every mode the graph replay, layer-by-layer runs (a per-step observer), runs that keep the layer outputs
// and a network prepared without a graph give bitwise the same logits; device-resident runs work too.
TEST_F(CudaBackendTest, ReducedPrecisionGraphReplayEqualsLayerByLayer) {
  for (Precision p : reduced_here(*backend_)) {
    SCOPED_TRACE(to_string(p));
    auto net = prepare(main_model(), 2, 224, 224, p);
    ASSERT_TRUE(net->has_graph());
    const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
    const Tensor graph = net->run(input);
    RecordingObserver observer;
    RunOptions per_step;
    per_step.observer = &observer;
    const Tensor layers = net->run(input, per_step);
    EXPECT_EQ(observer.calls.size(), 2 * net->steps().size() + 2);
    ASSERT_EQ(graph.data.size(), layers.data.size());
    EXPECT_EQ(std::memcmp(graph.data.data(), layers.data.data(), graph.data.size() * sizeof(float)), 0);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    const Tensor kept = net->run(input, keep);
    EXPECT_EQ(std::memcmp(kept.data.data(), graph.data.data(), graph.data.size() * sizeof(float)), 0);
    RunOptions resident;
    resident.device_resident = true;
    EXPECT_TRUE(net->run(input, resident).empty());
    {
      ScopedOption off("graph", "off");
      auto plain = prepare(main_model(), 2, 224, 224, p);
      const Tensor no_graph = plain->run(input);
      EXPECT_EQ(std::memcmp(no_graph.data.data(), graph.data.data(), graph.data.size() * sizeof(float)), 0);
    }
  }
}

// fp16 halves the activation bytes and the GEMM weights; tf32 keeps float32 storage.
TEST_F(CudaBackendTest, ReducedPrecisionMemoryReportsTheRealBytes) {
  const MemoryReport fp32 = prepare(main_model(), 8, 224, 224)->memory();
  // tf32 where this code has it (compute_80 and newer), else its storage is fp32's by definition.
  const MemoryReport tf32 =
      backend_->supports(Precision::tf32) ? prepare(main_model(), 8, 224, 224, Precision::tf32)->memory() : fp32;
  const MemoryReport fp16 = prepare(main_model(), 8, 224, 224, Precision::fp16)->memory();
  std::printf("batch 8 activations: fp32 %lld B, tf32 %lld B, fp16 %lld B; weights %lld / %lld / %lld B\n",
              static_cast<long long>(fp32.activation_bytes), static_cast<long long>(tf32.activation_bytes),
              static_cast<long long>(fp16.activation_bytes), static_cast<long long>(fp32.weight_bytes),
              static_cast<long long>(tf32.weight_bytes), static_cast<long long>(fp16.weight_bytes));
  EXPECT_EQ(tf32.activation_bytes, fp32.activation_bytes);
  // The float32 input (and the float32 logits) stay: a little over half.
  EXPECT_LT(fp16.activation_bytes, fp32.activation_bytes * 0.56);
  EXPECT_GT(fp16.activation_bytes, fp32.activation_bytes * 0.5);
  EXPECT_LT(fp16.weight_bytes, fp32.weight_bytes * 0.6);  // 1x1 and Linear weights are nearly all of them
}

// Fusion expand_dw is fp32 only: the reduced modes keep two steps and say so.
TEST_F(CudaBackendTest, ReducedPrecisionDoesNotFuseExpandDepthwiseAndSaysSo) {
  ScopedOption fuse("fusion", "expand_dw");
  auto net = prepare(main_model(), 1, 224, 224, Precision::fp16);
  EXPECT_EQ(net->steps().size(), 54u);
  int noted = 0;
  for (const ExecStep& s : net->steps()) {
    EXPECT_EQ(s.variant.find("expand1x1+dw3x3"), std::string::npos) << s.variant;
    noted += s.variant.find("not fused in fp16") != std::string::npos;
  }
  EXPECT_GT(noted, 0);
}

// Fusion block (fp16): each inverted-residual block with an expansion in one kernel (expansion, depthwise,
// projection, residual) where the launch fills the GPU. The golden logits within the fp16 bound with the top
// class agreeing, the materialised layers (the blocks' outputs) against cpu at batch 3 and an odd size, graph
// replay bitwise equal to layer-by-layer runs, and each fused step named after every layer it covers. Where the
// code is older than compute_80 nothing is fused and the plan says why.
TEST_F(CudaBackendTest, FusedBlockMatchesGoldenLogitsAndIsAttributedAsFused) {
  ScopedOption variant("variant", "fast");
  ScopedOption fuse("fusion", "block");
  const std::string old_code = tf32_kernels_missing();  // the same condition: compute_80 code on an sm_80+ GPU
  for (int batch : {1, 8}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    auto net = prepare(main_model(), batch, 224, 224, Precision::fp16);
    int fused = 0, residuals = 0, noted = 0;
    for (const ExecStep& step : net->steps()) {
      noted += step.variant.find("fusion block: not fused") != std::string::npos;
      if (step.variant.find("block tile ") == std::string::npos) continue;
      ++fused;
      ASSERT_GE(step.layers.size(), 5u) << step.name;
      EXPECT_LE(step.layers.size(), 6u) << step.name;
      size_t convs = 0;
      for (size_t at = step.name.find("Conv2d"); at != std::string::npos; at = step.name.find("Conv2d", at + 1))
        ++convs;
      EXPECT_EQ(convs, 3u) << step.name;  // expansion, depthwise and projection named
      if (step.layers.size() == 6u) {
        ++residuals;
        EXPECT_NE(step.name.find("ResidualAdd"), std::string::npos) << step.name;
        EXPECT_NE(step.variant.find("+residual"), std::string::npos) << step.variant;
      }
    }
    std::printf("fusion block, fp16 batch %d: %d fused blocks (%d with residual), %zu steps\n", batch, fused, residuals,
                net->steps().size());
    expect_steps_cover_layers(net->steps(), main_model().layers.size());
    if (!old_code.empty()) {
      EXPECT_EQ(fused, 0);
      EXPECT_EQ(noted, 16) << "every expanding block says why it is not fused";
      continue;
    }
    // The stem + block 1 is one fused_stem step in every build (FFMA): 3 steps fewer by 2, as each fused block.
    EXPECT_NE(net->steps().front().variant.find("stem+block1 tile"), std::string::npos) << net->steps().front().variant;
    EXPECT_GT(fused, 0);
    EXPECT_EQ(fused + noted, 16) << "every expanding block is fused or says why not";
    EXPECT_EQ(net->steps().size(), 52u - 2u * static_cast<size_t>(fused));
    if (batch == 1)
      for (const std::string& name : golden_image_names()) {
        SCOPED_TRACE("golden " + name);
        const GoldenRun r = run_golden(*net, name, "cuda fp16 block", precision_logits_bound(Precision::fp16));
        EXPECT_LT(r.rel_l2, precision_logits_bound(Precision::fp16));
        expect_top_agrees(r.top5, r.golden.top5);
      }
  }
  if (!old_code.empty()) GTEST_SKIP() << "fused_block not run: " << old_code;
  expect_layers_match_cpu(*backend_, main_model(), 3, 224, 224, "fused block", Precision::fp16);
  expect_layers_match_cpu(*backend_, main_model(), 3, 193, 257, "fused block", Precision::fp16);
  expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, "fused block torchvision", Precision::fp16);

  auto batch2 = prepare(main_model(), 2, 224, 224, Precision::fp16);
  expect_graph_equals_layer_by_layer(*batch2, Shape{2, 3, 224, 224});
}

// Fusion block in fp32 (fused_stem and fused_block_ffma, FFMA: every architecture) and tf32 (fused_stem's float32
// kernel, fused_block's TF32 kernel, compute_80 and newer): every expanding block fused (fp32: block 2, the
// memory-bound one) or saying why not, the golden logits and every materialised layer within the mode's bounds at
// batch 3, at an odd size whose tiles are partial and on the torchvision export, the graph equal to the steps run one
// by one. (The kernels themselves, on every block shape: test_kernels_fused_block_ffma.cpp.)
TEST_F(CudaBackendTest, BlockFusionRunsInFp32AndTf32) {
  ScopedOption variant("variant", "fast");
  ScopedOption fuse("fusion", "block");
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    if (!backend_->supports(p)) {
      std::printf("%s not run: the backend does not support it here\n", to_string(p));
      continue;
    }
    const bool fp32 = p == Precision::fp32;
    for (int batch : {1, 8}) {
      SCOPED_TRACE(std::string(to_string(p)) + " batch " + std::to_string(batch));
      auto net = prepare(main_model(), batch, 224, 224, p);
      // The stem + block 1 in one FFMA kernel in both.
      EXPECT_NE(net->steps().front().variant.find("stem+block1 tile"), std::string::npos)
          << net->steps().front().variant;
      int fused = 0, noted = 0;
      for (const ExecStep& s : net->steps()) {
        const bool ffma = s.variant.find("block ffma tile") != std::string::npos;
        const bool tc = s.variant.find("block tile") != std::string::npos;
        EXPECT_FALSE(fp32 ? tc : ffma) << s.variant;
        if (tc) EXPECT_NE(s.variant.find(" tf32 "), std::string::npos) << s.variant;
        fused += ffma || tc;
        noted += s.variant.find("fusion block: not fused") != std::string::npos;
      }
      std::printf("fusion block, %s batch %d: %d fused blocks, %zu steps\n", to_string(p), batch, fused,
                  net->steps().size());
      EXPECT_EQ(fused + noted, 16) << "every expanding block is fused or says why not";
      EXPECT_EQ(net->steps().size(), 52u - 2u * static_cast<size_t>(fused));
      if (fp32 && batch == 8) EXPECT_EQ(fused, 1) << "block 2, the memory-bound one (kFusedBlockFfmaMaxIntensity)";
      if (!fp32 && batch == 8) EXPECT_GT(fused, 0);
      if (batch == 1)
        for (const std::string& name : golden_image_names()) {
          SCOPED_TRACE("golden " + name);
          const GoldenRun r =
              run_golden(*net, name, std::string("cuda ") + to_string(p) + " block", precision_logits_bound(p));
          EXPECT_LT(r.rel_l2, precision_logits_bound(p));
          expect_top_agrees(r.top5, r.golden.top5);
        }
    }
    const std::string what = std::string("fused ") + to_string(p) + " blocks";
    expect_layers_match_cpu(*backend_, main_model(), 3, 224, 224, what, p);
    expect_layers_match_cpu(*backend_, main_model(), 2, 193, 257, what, p);
    expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, what + " torchvision", p);
    auto batch8 = prepare(main_model(), 8, 224, 224, p);  // fp32: block 2 fused at batch 8
    expect_graph_equals_layer_by_layer(*batch8, Shape{8, 3, 224, 224});
  }
}

}  // namespace
}  // namespace mnv2::test
