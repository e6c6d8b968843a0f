// The cudnn backend on a GPU: logits against every golden file, every layer against the cpu backend (batch
// 1 and 3, odd input sizes for the asymmetric-pad path), a table of single convolutions, determinism,
// memory, errors and the observer's calls. Every test skips with a message where there is no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cudnn/plan_cache.h"  // the plan cache file and the process's plans
#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

using cudnn_backend::clear_process_plans;
using cudnn_backend::PlanCache;

// Float32 throughout, like the cpu reference; only the summation order differs.
const double kMaxRelL2 = precision_logits_bound(Precision::fp32);

CudnnOptions naive_options() {
  CudnnOptions o;
  o.variant = CudnnOptions::Variant::naive;
  return o;
}
CudnnOptions fused_options() { return CudnnOptions{}; }
const char* variant_text(const CudnnOptions& o) { return to_string(o.variant); }

// The test process keeps its plans in a file of its own (not the user's cache).
std::string test_cache_file() {
  static const std::string path = [] {
    const std::string p =
        (std::filesystem::temp_directory_path() / ("mnv2-test-cudnn-plans-" + std::to_string(fresh_seed()) + ".json"))
            .string();
    synced_setenv("MNV2_CUDNN_PLAN_CACHE", p.c_str(), 1);
    return p;
  }();
  return path;
}

class CudnnBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): cudnn tests skipped";
    backend_ = make_backend("cudnn");
    const Availability a = backend_->availability();
    ASSERT_TRUE(a.available) << "a CUDA device is present but cudnn is unavailable: " << a.reason;
    test_cache_file();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, int batch, int height, int width,
                                       const CudnnOptions& options = {}) const {
    PrepareConfig config;
    config.batch = batch;
    config.height = height;
    config.width = width;
    config.cudnn = options;
    return backend_->prepare(model, config);
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudnnBackendTest, DescribesItselfWithVersionAndGpu) {
  const std::string text = backend_->description();
  EXPECT_NE(text.find("cuDNN"), std::string::npos) << text;
  EXPECT_NE(text.find(cuda_environment().devices.front().name), std::string::npos) << text;
  std::printf("cudnn backend: %s\n", text.c_str());
}

TEST_F(CudnnBackendTest, LogitsMatchEveryGoldenFile) {
  auto net = prepare(main_model(), 1, 224, 224);
  for (const std::string& name : golden_image_names()) {
    SCOPED_TRACE("golden " + name);
    const GoldenRun r = run_golden(*net, name, "cudnn", kMaxRelL2);
    EXPECT_LT(r.rel_l2, kMaxRelL2);
    EXPECT_EQ(r.top5, r.golden.top5);
  }
  auto tv = prepare(torchvision_model(), 1, 224, 224);
  const GoldenRun r = run_golden(*tv, "torchvision_random", "cudnn", kMaxRelL2);
  EXPECT_LT(r.rel_l2, kMaxRelL2);
  EXPECT_EQ(r.top5, r.golden.top5);
}

// Runs `model` through cpu and cudnn on the same random input, keeping every layer output, and checks
// each layer and the logits.
void expect_layers_match_cpu(const Backend& cudnn, const Model& model, int batch, int height, int width,
                             const std::string& what, const CudnnOptions& options) {
  const uint64_t seed = fresh_seed();
  const std::string where = what + " (" + variant_text(options) + "), batch " + std::to_string(batch) + ", " +
                            std::to_string(height) + "x" + std::to_string(width) +
                            ", MNV2_TEST_SEED=" + std::to_string(seed);
  SCOPED_TRACE(where);
  PrepareConfig config;
  config.batch = batch;
  config.height = height;
  config.width = width;
  config.cudnn = options;
  const Tensor input = random_input(Shape{batch, model.input_channels, height, width}, seed);
  RunOptions keep;
  keep.keep_layer_outputs = true;

  auto cpu_net = make_backend("cpu-ref")->prepare(model, config);
  const Tensor cpu_logits = cpu_net->run(input, keep);
  auto gpu_net = cudnn.prepare(model, config);
  const Tensor gpu_logits = gpu_net->run(input, keep);

  // Naive: one step per layer, in order. Fused: the steps cover every layer once, in order, and each step's
  // last layer is materialised.
  const std::vector<ExecStep>& steps = gpu_net->steps();
  std::vector<int> covered;
  std::vector<size_t> step_of(model.layers.size(), 0);
  for (size_t s = 0; s < steps.size(); ++s)
    for (int l : steps[s].layers) {
      covered.push_back(l);
      step_of[static_cast<size_t>(l)] = s;
    }
  std::vector<int> all(model.layers.size());
  std::iota(all.begin(), all.end(), 0);
  ASSERT_EQ(covered, all);
  if (options.variant == CudnnOptions::Variant::naive) ASSERT_EQ(steps.size(), model.layers.size());

  ASSERT_EQ(gpu_logits.shape, cpu_logits.shape);
  EXPECT_LT(rel_l2_of(gpu_logits, cpu_logits), kMaxRelL2) << "logits";

  const std::vector<Tensor>& gpu_out = gpu_net->layer_outputs();
  const std::vector<Tensor>& cpu_out = cpu_net->layer_outputs();
  ASSERT_EQ(gpu_out.size(), model.layers.size());
  ASSERT_EQ(cpu_out.size(), model.layers.size());
  double worst = 0;
  size_t worst_layer = 0;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& layer = model.layers[i];
    const ExecStep& step = steps[step_of[i]];
    if (gpu_out[i].empty() && static_cast<int>(i) != step.layers.back() &&
        options.variant == CudnnOptions::Variant::fused)
      continue;  // fused away inside the step's operation graph
    ASSERT_EQ(gpu_out[i].shape, cpu_out[i].shape) << "layer " << i;
    const double err = rel_l2_of(gpu_out[i], cpu_out[i]);
    if (!(err <= worst)) {
      worst = err;
      worst_layer = i;
    }
    EXPECT_LT(err, kMaxRelL2) << "layer " << i << " '" << layer.name << "' " << describe(layer) << " output "
                              << cpu_out[i].shape.str() << ", step '" << step.name << "' variant '" << step.variant
                              << "'";
  }
  std::printf("%s: logits rel L2 %.3g, worst layer %zu '%s' rel L2 %.3g\n", where.c_str(),
              rel_l2_of(gpu_logits, cpu_logits), worst_layer, model.layers[worst_layer].name.c_str(), worst);
}

TEST_F(CudnnBackendTest, EveryLayerMatchesCpuBatch1) {
  for (const CudnnOptions& o : {fused_options(), naive_options()})
    expect_layers_match_cpu(*backend_, main_model(), 1, 224, 224, "main", o);
}
TEST_F(CudnnBackendTest, EveryLayerMatchesCpuBatch3) {
  for (const CudnnOptions& o : {fused_options(), naive_options()})
    expect_layers_match_cpu(*backend_, main_model(), 3, 224, 224, "main", o);
}
TEST_F(CudnnBackendTest, EveryLayerMatchesCpuOddInputSize) {
  // Odd sizes: every stride-2 convolution with pads [0,0,1,1] sees odd and even maps, so the padded copy
  // meets both parities.
  for (const CudnnOptions& o : {fused_options(), naive_options()}) {
    expect_layers_match_cpu(*backend_, main_model(), 1, 193, 257, "main", o);
    expect_layers_match_cpu(*backend_, main_model(), 2, 97, 131, "main", o);
  }
  // The fused variant in NHWC too (fp32 keeps FMA engines; the default there is NCHW).
  CudnnOptions nhwc;
  nhwc.layout = CudnnOptions::Layout::nhwc;
  expect_layers_match_cpu(*backend_, main_model(), 3, 97, 131, "main nhwc", nhwc);
}
TEST_F(CudnnBackendTest, EveryLayerMatchesCpuTorchvisionModel) {
  for (const CudnnOptions& o : {fused_options(), naive_options()})
    expect_layers_match_cpu(*backend_, torchvision_model(), 2, 224, 224, "torchvision", o);
}

TEST_F(CudnnBackendTest, ConvolutionTableMatchesCpu) {
  const ConvCase cases[] = {
      {3, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 16, 16, true},     // the main model's stem
      {8, 8, 3, 3, 2, 2, 0, 0, 1, 1, 8, 15, 17, true},     // its stride-2 depthwise, odd map
      {8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 9, 9, true},       // symmetric depthwise
      {6, 4, 3, 3, 2, 2, 1, 0, 0, 2, 2, 11, 10, true},     // extra rows on top, extra columns on the right
      {4, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 7, 5, false},      // pointwise without bias
      {5, 7, 2, 3, 2, 1, 2, 1, 0, 1, 1, 8, 9, true},       // non-square kernel, mixed strides and pads
      {16, 16, 5, 5, 2, 2, 2, 2, 2, 2, 16, 12, 12, true},  // 5x5 depthwise
      {4, 4, 3, 3, 1, 1, 2, 0, 0, 3, 1, 6, 7, true},       // pads larger than one side needs
  };
  for (const ConvCase& c : cases) {
    const uint64_t seed = fresh_seed();
    std::mt19937_64 gen(seed);
    const Model model = single_conv_model(c, gen);
    SCOPED_TRACE(describe_case(c) + ", MNV2_TEST_SEED=" + std::to_string(seed));
    PrepareConfig config;
    config.batch = 2;
    config.height = c.height;
    config.width = c.width;
    const Tensor input = random_input(Shape{2, c.in_channels, c.height, c.width}, seed + 1);
    const Tensor ref = make_backend("cpu-ref")->prepare(model, config)->run(input);
    for (const CudnnOptions& o : {fused_options(), naive_options()}) {
      config.cudnn = o;
      auto net = backend_->prepare(model, config);
      const Tensor got = net->run(input);
      ASSERT_EQ(got.shape.numel(), ref.shape.numel());
      EXPECT_LT(rel_l2_of(got, ref), kMaxRelL2) << variant_text(o) << " variant '" << net->steps()[0].variant << "'";
      const bool asymmetric = c.pad_top != c.pad_bottom || c.pad_left != c.pad_right;
      if (o.variant == CudnnOptions::Variant::naive)
        EXPECT_EQ(net->steps()[0].variant.find("+padcopy") != std::string::npos, asymmetric) << net->steps()[0].variant;
      else
        std::printf("  fused %s: %s\n", describe_case(c).c_str(), net->steps()[0].variant.c_str());
    }
  }
}

// Every other op kind, including ReLU without an upper bound and a clip other than 6.
TEST_F(CudnnBackendTest, SmallNetworkOfEveryOpMatchesCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  Model m = single_conv_model({3, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 10, 12, true}, gen);
  auto add_layer = [&](LayerKind kind, std::vector<int> inputs) -> Layer& {
    Layer l;
    l.index = static_cast<int>(m.layers.size());
    l.kind = kind;
    l.name = "l" + std::to_string(l.index);
    l.inputs = std::move(inputs);
    m.layers.push_back(l);
    return m.layers.back();
  };
  Layer& relu = add_layer(LayerKind::ReLU, {0});
  relu.clip_min = 0.0f;
  relu.clip_max = std::numeric_limits<float>::infinity();
  Layer& pw = add_layer(LayerKind::Conv2d, {1});
  pw.conv.in_channels = pw.conv.out_channels = 8;
  pw.weight = random_floats(gen, 64, -1.0f, 1.0f);
  pw.bias = random_floats(gen, 8, -1.0f, 1.0f);
  Layer& clip = add_layer(LayerKind::ReLU, {2});
  clip.clip_min = 0.0f;
  clip.clip_max = 3.5f;
  add_layer(LayerKind::ResidualAdd, {1, 3});
  add_layer(LayerKind::GlobalAveragePool, {4});
  Layer& fc = add_layer(LayerKind::Linear, {5});
  fc.in_features = 8;
  fc.out_features = 5;
  fc.weight = random_floats(gen, 40, -1.0f, 1.0f);
  fc.bias = random_floats(gen, 5, -1.0f, 1.0f);
  m.num_classes = 5;
  for (const Layer& l : m.layers) ASSERT_FALSE(backend_->unsupported_reason(l)) << describe(l);
  for (const CudnnOptions& o : {fused_options(), naive_options()})
    expect_layers_match_cpu(*backend_, m, 3, 10, 12, "every op", o);
}

TEST_F(CudnnBackendTest, RepeatedRunsAreBitwiseIdentical) {
  auto net = prepare(main_model(), 2, 224, 224);
  const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
  const Tensor first = net->run(input);
  for (int i = 0; i < 3; ++i) {
    RunOptions options;
    options.keep_layer_outputs = i == 1;  // downloading the layers must not change the result either
    const Tensor again = net->run(input, options);
    ASSERT_EQ(again.data.size(), first.data.size());
    EXPECT_EQ(std::memcmp(again.data.data(), first.data.data(), first.data.size() * sizeof(float)), 0) << "run " << i;
  }
}

TEST_F(CudnnBackendTest, ReportsMemory) {
  auto net = prepare(main_model(), 1, 224, 224);
  const MemoryReport m = net->memory();
  int64_t params = 0;
  for (const Layer& l : main_model().layers) params += l.param_count();
  EXPECT_GE(m.weight_bytes, params * static_cast<int64_t>(sizeof(float)));
  EXPECT_GT(m.activation_bytes, 0);
  EXPECT_GE(m.workspace_bytes, 0);
  EXPECT_GT(m.total(), 0);
  std::printf("memory at batch 1, 224x224: weights %lld B, activations %lld B, workspace %lld B\n",
              static_cast<long long>(m.weight_bytes), static_cast<long long>(m.activation_bytes),
              static_cast<long long>(m.workspace_bytes));
}

TEST_F(CudnnBackendTest, WrongInputShapeIsUsageError) {
  auto net = prepare(main_model(), 1, 224, 224);
  EXPECT_THROW(net->run(Tensor(Shape{2, 3, 224, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 3, 225, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 1, 224, 224})), UsageError);
  Tensor short_data(Shape{1, 3, 224, 224});
  short_data.data.pop_back();
  EXPECT_THROW(net->run(short_data), UsageError);
  // The refused calls leave the network usable.
  const Tensor logits = net->run(random_input(Shape{1, 3, 224, 224}, 7));
  EXPECT_EQ(logits.shape, (Shape{1, 1001, 1, 1}));
}

TEST_F(CudnnBackendTest, ReducedPrecisionsStayWithinTheirStatedBoundOfEveryGoldenFile) {
  for (Precision p : {Precision::tf32, Precision::fp16}) {
    SCOPED_TRACE(to_string(p));
    ASSERT_TRUE(backend_->supports(p));
    PrepareConfig config;
    config.precision = p;
    auto net = backend_->prepare(main_model(), config);
    bool mode_named = false;
    for (const ExecStep& s : net->steps()) mode_named = mode_named || s.variant.find(to_string(p)) != std::string::npos;
    EXPECT_TRUE(mode_named) << "the variants name the precision";
    for (const std::string& name : golden_image_names()) {
      SCOPED_TRACE("golden " + name);
      const GoldenRun r = run_golden(*net, name, std::string("cudnn ") + to_string(p), precision_logits_bound(p));
      EXPECT_LT(r.rel_l2, precision_logits_bound(p));
      expect_top_agrees(r.top5, r.golden.top5);
    }
  }
}

TEST_F(CudnnBackendTest, Fp16AtBatch3AndAnOddSizeStaysWithinItsBoundOfCpu) {
  // Batch > 1 and an odd size take the input conversion, the half pad copies and the readback per layer.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("MNV2_TEST_SEED=" + std::to_string(seed));
  PrepareConfig config{3, 193, 257, Precision::fp16};
  const Tensor input = random_input(Shape{3, 3, 193, 257}, seed);
  RunOptions keep;
  keep.keep_layer_outputs = true;
  auto gpu = backend_->prepare(main_model(), config);
  const Tensor got = gpu->run(input, keep);
  config.precision = Precision::fp32;
  auto cpu = make_backend("cpu-ref")->prepare(main_model(), config);
  const Tensor ref = cpu->run(input, keep);
  ASSERT_EQ(got.shape, ref.shape);
  const double err = rel_l2_of(got, ref);
  std::printf("fp16 batch 3 193x257: logits rel L2 %.3g against cpu fp32\n", err);
  EXPECT_LT(err, precision_logits_bound(Precision::fp16));
  ASSERT_EQ(gpu->layer_outputs().size(), cpu->layer_outputs().size());
  for (size_t i = 0; i < cpu->layer_outputs().size(); ++i) {
    if (gpu->layer_outputs()[i].empty()) continue;  // fused away (the fused variant's virtual tensors)
    const double e = rel_l2_of(gpu->layer_outputs()[i], cpu->layer_outputs()[i]);
    EXPECT_TRUE(std::isfinite(e)) << "layer " << i;
    EXPECT_LT(e, 0.1) << "layer " << i << " '" << main_model().layers[i].name << "'";
  }
  // No class check here: random pixels give flat logits whose order fp16 rounding may legitimately change.
}

TEST_F(CudnnBackendTest, RefusesUnsupportedLayers) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) EXPECT_TRUE(backend_->supports(p));
  for (const Layer& l : main_model().layers) EXPECT_FALSE(backend_->unsupported_reason(l)) << describe(l);

  Layer dilated = main_model().layers.front();
  dilated.conv.dilation_h = 2;
  EXPECT_TRUE(backend_->unsupported_reason(dilated));
  Layer leaky;
  leaky.kind = LayerKind::ReLU;
  leaky.inputs = {0};
  leaky.clip_min = -1.0f;
  leaky.clip_max = 6.0f;
  EXPECT_TRUE(backend_->unsupported_reason(leaky));
  Model bad = main_model();
  bad.layers.front().conv.dilation_w = 2;
  EXPECT_THROW(backend_->prepare(bad, PrepareConfig{}), Error);
}

TEST_F(CudnnBackendTest, ObserverSeesEveryStepInOrder) {
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

// Prints the algorithm Find chose for each convolution (and checks each is a direct-summation one).
TEST_F(CudnnBackendTest, ReportsTheChosenAlgorithmPerConvolution) {
  for (int batch : {1, 64}) {
    auto net = prepare(main_model(), batch, 224, 224, naive_options());
    std::printf("batch %d:\n", batch);
    const std::vector<ExecStep>& steps = net->steps();
    const std::vector<LayerStats> stats = analyse(main_model(), batch, 224, 224);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Layer& layer = main_model().layers[i];
      if (layer.kind != LayerKind::Conv2d) continue;
      const std::string& v = steps[i].variant;
      const bool known = v.rfind("IMPLICIT_GEMM", 0) == 0 || v.rfind("IMPLICIT_PRECOMP_GEMM", 0) == 0 ||
                         v.rfind("GEMM", 0) == 0 || v.rfind("DIRECT", 0) == 0;
      EXPECT_TRUE(known) << v;
      EXPECT_NE(v.find(" ws="), std::string::npos) << v;
      EXPECT_EQ(v.find("+padcopy") != std::string::npos, !layer.conv.symmetric_pads()) << v;
      std::printf("  %-10s %-28s -> %-14s %s\n", steps[i].name.c_str(), describe(layer).c_str(),
                  stats[i].output.str().c_str(), v.c_str());
    }
    const MemoryReport m = net->memory();
    std::printf("  memory: weights %lld B, activations %lld B, workspace %lld B\n",
                static_cast<long long>(m.weight_bytes), static_cast<long long>(m.activation_bytes),
                static_cast<long long>(m.workspace_bytes));
  }
}

// ---- the fused variant -----------------------------------------------------------------------------------

// Each convolution and the ReLU6 or residual add after it are one step; strict fp32 plans carry no
// tensor-core, down-conversion, FFT or Winograd note; every step's variant says what runs.
TEST_F(CudnnBackendTest, FusedStepsCoverConvolutionGroupsAndStrictFp32HasNoTensorCoreEngine) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
    SCOPED_TRACE(to_string(p));
    PrepareConfig config;
    config.precision = p;
    auto net = backend_->prepare(main_model(), config);
    const std::vector<ExecStep>& steps = net->steps();
    EXPECT_LT(steps.size(), main_model().layers.size());
    int graphs = 0, groups = 0;
    std::printf("fused %s:\n", to_string(p));
    for (const ExecStep& s : steps) {
      const Layer& first = main_model().layers[static_cast<size_t>(s.layers.front())];
      if (first.kind == LayerKind::Conv2d) {
        ++groups;
        if (s.variant.rfind("graph ", 0) == 0) ++graphs;
        // A conv followed by its ReLU6 is one step.
        const size_t next = static_cast<size_t>(s.layers.front()) + 1;
        if (next < main_model().layers.size() && main_model().layers[next].kind == LayerKind::ReLU6)
          EXPECT_GE(s.layers.size(), 2u) << s.name;
      }
      if (p == Precision::fp32)
        for (const char* note : {"tensor_core", "down_convert", "fft", "winograd", "reduced_precision"})
          EXPECT_EQ(s.variant.find(note), std::string::npos) << s.name << ": " << s.variant;
      std::printf("  %-40s %s\n", s.name.c_str(), s.variant.c_str());
    }
    std::printf("  %d of %d convolution groups run as one cuDNN operation graph\n", graphs, groups);
    EXPECT_GT(graphs, 0);
  }
}

// The graph replay runs exactly the kernels of the layer-by-layer run: bitwise the same logits.
TEST_F(CudnnBackendTest, GraphReplayIsBitwiseIdenticalToLayerByLayer) {
  for (const CudnnOptions& o : {fused_options(), naive_options()}) {
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      SCOPED_TRACE(std::string(variant_text(o)) + " " + to_string(p));
      PrepareConfig config;
      config.batch = 2;
      config.precision = p;
      config.cudnn = o;
      auto net = backend_->prepare(main_model(), config);
      ASSERT_TRUE(net->has_graph());
      ASSERT_TRUE(net->runs_device_resident());
      const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
      const Tensor replayed = net->run(input);  // no observer: the graph
      RecordingObserver observer;               // times steps: layer by layer
      RunOptions layers;
      layers.observer = &observer;
      const Tensor stepped = net->run(input, layers);
      ASSERT_EQ(observer.calls.size(), 2 * net->steps().size() + 2);
      ASSERT_EQ(replayed.data.size(), stepped.data.size());
      EXPECT_EQ(std::memcmp(replayed.data.data(), stepped.data.data(), stepped.data.size() * sizeof(float)), 0);
      // cudaEvent-style observers cannot time steps inside a replay.
      RunOptions replay;
      replay.observer = &observer;
      replay.graph_replay = true;
      EXPECT_THROW(net->run(input, replay), UsageError);

      // Device resident: the input stays on the device; nothing comes back; a per-step observer is refused.
      RunOptions resident;
      resident.device_resident = true;
      EXPECT_TRUE(net->run(input, resident).empty());
      resident.observer = &observer;
      EXPECT_THROW(net->run(input, resident), UsageError);
      const Tensor after = net->run(input);
      EXPECT_EQ(std::memcmp(after.data.data(), replayed.data.data(), replayed.data.size() * sizeof(float)), 0);
    }
  }
  CudnnOptions off;
  off.graph = CudnnOptions::Graph::off;
  auto net = prepare(main_model(), 1, 224, 224, off);
  EXPECT_FALSE(net->has_graph());
  RunOptions resident;
  resident.device_resident = true;
  net->run(random_input(Shape{1, 3, 224, 224}, 5));
  EXPECT_TRUE(net->run(random_input(Shape{1, 3, 224, 224}, 5), resident).empty());
}

std::string first_graph_variant(const PreparedNet& net) {
  for (const ExecStep& s : net.steps())
    if (s.variant.rfind("graph ", 0) == 0) return s.variant;
  return {};
}

// The second prepare takes its plans from the cache file and gives bitwise the same output; a corrupt file is
// ignored with a warning (and rewritten); an entry whose engine no longer finalizes is re-tuned.
TEST_F(CudnnBackendTest, PlanCacheIsReadBackAndBadFilesAreIgnored) {
  const std::string file = test_cache_file();
  std::filesystem::remove(file);
  clear_process_plans();
  const Tensor input = random_input(Shape{1, 3, 224, 224}, fresh_seed());
  auto first = prepare(main_model(), 1, 224, 224);
  const std::string tuned = first_graph_variant(*first);
  EXPECT_EQ(tuned.find("cached"), std::string::npos) << tuned;
  const Tensor a = first->run(input);
  first.reset();
  std::string warning;
  const PlanCache cache = PlanCache::load(file, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_GT(cache.size(), 0u);

  clear_process_plans();
  auto second = prepare(main_model(), 1, 224, 224);
  for (const ExecStep& s : second->steps())
    if (s.variant.rfind("graph ", 0) == 0)
      EXPECT_NE(s.variant.find("cached (plan cache file)"), std::string::npos) << s.variant;
  const Tensor b = second->run(input);
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)), 0);
  second.reset();

  {  // corrupt: ignored, the net still prepares (tuning again), the file is rewritten valid
    std::ofstream(file, std::ios::trunc) << "{\"format\": \"mnv2-cudnn-plan-cache\", \"version\": 1, \"entr";
  }
  clear_process_plans();
  auto third = prepare(main_model(), 1, 224, 224);
  EXPECT_NE(third->description().find("ignored"), std::string::npos) << third->description();
  const Tensor c = third->run(input);
  EXPECT_LT(rel_l2_of(c, a), kMaxRelL2);
  third.reset();
  warning.clear();
  EXPECT_GT(PlanCache::load(file, &warning).size(), 0u);
  EXPECT_TRUE(warning.empty()) << warning;

  {  // every entry names an engine that does not exist: re-tuned
    PlanCache bad = PlanCache::load(file, nullptr);
    PlanCache rewritten = PlanCache::parse(bad.dump());
    std::string text = rewritten.dump();
    for (size_t at = text.find("\"engine\": "); at != std::string::npos; at = text.find("\"engine\": ", at + 1)) {
      const size_t end = text.find_first_of(",\n}", at + 10);
      text.replace(at + 10, end - at - 10, "987654");
    }
    std::ofstream(file, std::ios::trunc) << text;
  }
  clear_process_plans();
  auto fourth = prepare(main_model(), 1, 224, 224);
  const std::string retuned = first_graph_variant(*fourth);
  EXPECT_NE(retuned.find("re-tuned"), std::string::npos) << retuned;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace mnv2::test
