// The backend registry and the contract of both cpu backends (cpu: oneDNN, cpu-ref: the reference): names,
// availability, refusals, input checks, steps and observer calls, kept layer outputs, memory and threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/options.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// The cpu backends' default thread count as a front end passes it (0: unset) for as long as it lives.
class ScopedThreads {
 public:
  explicit ScopedThreads(int threads) : settings_([threads](ProcessSettings& s) { s.cpu_threads = threads; }) {}

 private:
  ScopedSettings settings_;
};

// Expects `fn` to throw E with `fragment` in its message.
template <typename E, typename Fn>
void expect_throw_with(Fn fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning '" << fragment << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "message: " << e.what();
  }
}

// input [n, 2, h, w] -> Conv2d 1x1 (2 -> 3) -> ReLU6 -> ResidualAdd(ReLU6, Conv) -> GlobalAveragePool ->
// Linear(3 -> 4). Weights are small integers so results are exact.
Model tiny_model() {
  Model m;
  m.input_channels = 2;
  m.num_classes = 4;
  Layer conv;
  conv.kind = LayerKind::Conv2d;
  conv.name = "tiny.conv";
  conv.inputs = {kNetworkInput};
  conv.conv.in_channels = 2;
  conv.conv.out_channels = 3;
  conv.weight = {1, 0, 0, 1, 1, -1};
  conv.bias = {0, 1, 2};
  Layer relu;
  relu.kind = LayerKind::ReLU6;
  relu.inputs = {0};
  Layer add;
  add.kind = LayerKind::ResidualAdd;
  add.inputs = {1, 0};
  Layer gap;
  gap.kind = LayerKind::GlobalAveragePool;
  gap.inputs = {2};
  Layer fc;
  fc.kind = LayerKind::Linear;
  fc.name = "tiny.fc";
  fc.inputs = {3};
  fc.in_features = 3;
  fc.out_features = 4;
  fc.weight = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  fc.bias = {0, 0, 0, 0.5f};
  m.layers = {conv, relu, add, gap, fc};
  for (size_t i = 0; i < m.layers.size(); ++i) m.layers[i].index = static_cast<int>(i);
  return m;
}

Tensor ramp_input(int batch, int h, int w) {
  Tensor t(Shape{batch, 2, h, w});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(i % 7) - 3.0f;
  return t;
}

class RecordingObserver : public StepObserver {
 public:
  void step_begin(int step, void* stream) override {
    events.push_back("begin " + std::to_string(step));
    if (stream) null_streams = false;
  }
  void step_end(int step, void* stream) override {
    events.push_back("end " + std::to_string(step));
    if (stream) null_streams = false;
  }
  std::vector<std::string> events;
  bool null_streams = true;
};

TEST(CpuBackendRegistry, NamesAndUnknownBackend) {
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"cpu", "cpu-ref", "cudnn", "cuda"}));
  for (const std::string& name : backend_names()) {
    auto backend = make_backend(name);
    ASSERT_TRUE(backend);
    EXPECT_EQ(backend->name(), name);
    EXPECT_FALSE(backend->description().empty());
  }
  expect_throw_with<UsageError>([] { make_backend("tpu"); },
                                "unknown backend 'tpu' (choose cpu, cpu-ref, cudnn, cuda)");
  EXPECT_TRUE(is_host_backend("cpu"));
  EXPECT_TRUE(is_host_backend("cpu-ref"));
  EXPECT_FALSE(is_host_backend("cudnn"));
  EXPECT_FALSE(is_host_backend("cuda"));
}

// Without CUDA the GPU names are stand-ins that say why; with CUDA this only checks they are honest.
TEST(CpuBackendRegistry, UnavailableBackendsSayWhyAndRefuseToPrepare) {
  for (const char* name : {"cudnn", "cuda"}) {
    auto backend = make_backend(name);
    const Availability a = backend->availability();
    if (a.available) continue;
    EXPECT_FALSE(a.reason.empty()) << name;
    expect_throw_with<Error>(
        [&] {
          backend->prepare(tiny_model(), PrepareConfig{1, 3, 3, Precision::fp32});
        },
        a.reason);
  }
}

TEST(CpuBackendRegistry, PrecisionNames) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_EQ(parse_precision("FP16"), Precision::fp16);
  expect_throw_with<UsageError>([] { parse_precision("int8"); }, "unknown precision 'int8'");
  // The cpu backends run fp32 only, and stay fp32 when they are the reference of a tf32/fp16 comparison.
  for (const char* name : {"cpu", "cpu-ref"}) {
    auto cpu = make_backend(name);
    EXPECT_TRUE(cpu->supports(Precision::fp32)) << name;
    EXPECT_FALSE(cpu->supports(Precision::fp16)) << name;
    EXPECT_EQ(reference_precision(name, Precision::fp16), Precision::fp32) << name;
    EXPECT_EQ(reference_precision(name, Precision::fp32), Precision::fp32) << name;
  }
}

// Each contract test runs on both cpu backends.
class CpuBackend : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Backend> backend() const { return make_backend(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Both, CpuBackend, ::testing::Values("cpu", "cpu-ref"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "cpu" ? std::string("onednn") : std::string("reference");
                         });

TEST_P(CpuBackend, IsAvailableAndDescribesItself) {
  ScopedThreads threads(2);
  auto cpu = backend();
  EXPECT_EQ(cpu->name(), GetParam());
  EXPECT_TRUE(cpu->availability().available);
  // What runs is named: oneDNN's version and the ISA it dispatched to, or the reference's GEMM.
  const std::string expected = GetParam() == "cpu" ? "oneDNN 2." : "oneDNN sgemm";
  EXPECT_NE(cpu->description().find(expected), std::string::npos) << cpu->description();
  if (GetParam() == "cpu") EXPECT_NE(cpu->description().find(", jit "), std::string::npos) << cpu->description();
  EXPECT_NE(cpu->description().find("2 threads"), std::string::npos) << cpu->description();
  for (const Layer& layer : tiny_model().layers) EXPECT_EQ(cpu->unsupported_reason(layer), std::nullopt);
}

TEST_P(CpuBackend, ThreadSettingFromTheFrontEnd) {
  {
    ScopedThreads threads(1);
    EXPECT_NE(backend()->description().find("1 thread"), std::string::npos);
    EXPECT_EQ(backend()->description().find("1 threads"), std::string::npos);
  }
  // $MNV2_CPU_THREADS reaches the engine through the option table, which a front end offers it to: a bad value
  // is a usage error naming the variable.
  for (const char* bad : {"0x", "-2", "two", "3x", "5000"}) {
    OptionValues v;
    expect_throw_with<UsageError>(
        [&] {
          v.offer_environment([bad](const char* n) { return std::string(n) == "MNV2_CPU_THREADS" ? bad : nullptr; });
        },
        "$MNV2_CPU_THREADS");
  }
  OptionValues v;
  v.offer_environment([](const char* n) { return std::string(n) == "MNV2_CPU_THREADS" ? "" : nullptr; });
  EXPECT_EQ(v.at("threads").source, OptionSource::default_value);  // empty means unset
}

TEST_P(CpuBackend, RunsFp32Only) {
  auto cpu = backend();
  for (Precision p : {Precision::tf32, Precision::fp16})
    expect_throw_with<UsageError>(
        [&] {
          cpu->prepare(tiny_model(), PrepareConfig{1, 3, 3, p});
        },
        GetParam() + " backend runs fp32 only");
}

TEST_P(CpuBackend, RefusesMalformedLayersNamingThem) {
  auto cpu = backend();
  Model m = tiny_model();
  m.layers[0].weight.pop_back();
  ASSERT_TRUE(cpu->unsupported_reason(m.layers[0]).has_value());
  EXPECT_NE(cpu->unsupported_reason(m.layers[0])->find("weight holds 5 values, expected 6"), std::string::npos);
  expect_throw_with<Error>([&] { cpu->prepare(m, PrepareConfig{1, 3, 3, Precision::fp32}); }, "layer 0 'tiny.conv'");

  m = tiny_model();
  m.layers[0].conv.groups = 4;  // does not divide 2 -> 3 channels
  EXPECT_TRUE(cpu->unsupported_reason(m.layers[0]).has_value());
  m = tiny_model();
  m.layers[4].bias = {1, 2};
  expect_throw_with<Error>([&] { cpu->prepare(m, PrepareConfig{1, 3, 3, Precision::fp32}); }, "'tiny.fc'");
  m = tiny_model();
  m.layers[2].inputs = {1};
  EXPECT_TRUE(cpu->unsupported_reason(m.layers[2]).has_value());
}

TEST_P(CpuBackend, RefusesInputsTheNetworkCannotTake) {
  auto cpu = backend();
  Model m = tiny_model();
  m.layers[4].in_features = 5;
  m.layers[4].weight.assign(20, 0.0f);
  EXPECT_THROW(cpu->prepare(m, PrepareConfig{1, 3, 3, Precision::fp32}), Error);
  EXPECT_THROW(cpu->prepare(tiny_model(), PrepareConfig{0, 3, 3, Precision::fp32}), UsageError);
}

TEST_P(CpuBackend, WrongInputShapeIsAUsageError) {
  auto net = backend()->prepare(tiny_model(), PrepareConfig{2, 4, 5, Precision::fp32});
  expect_throw_with<UsageError>([&] { net->run(ramp_input(1, 4, 5)); }, "1x2x4x5");
  expect_throw_with<UsageError>([&] { net->run(ramp_input(2, 5, 4)); }, "2x2x4x5");
  Tensor truncated = ramp_input(2, 4, 5);
  truncated.data.pop_back();
  EXPECT_THROW(net->run(truncated), UsageError);
}

TEST_P(CpuBackend, ComputesTheTinyModelExactly) {
  auto net = backend()->prepare(tiny_model(), PrepareConfig{1, 1, 2, Precision::fp32});
  Tensor input(Shape{1, 2, 1, 2});
  input.data = {1, 8, -2, 3};  // channel 0: [1, 8], channel 1: [-2, 3]
  const Tensor logits = net->run(input);
  // conv: c0 = x0 = [1, 8]; c1 = x1 + 1 = [-1, 4]; c2 = x0 - x1 + 2 = [5, 7]
  // relu6: [1, 6], [0, 4], [5, 6]; add: [2, 14], [-1, 8], [10, 13]; mean: 8, 3.5, 11.5
  ASSERT_EQ(logits.shape, (Shape{1, 4, 1, 1}));
  EXPECT_EQ(logits.data, (std::vector<float>{8.0f, 3.5f, 11.5f, 23.5f}));
}

TEST_P(CpuBackend, OneStepPerLayerWithObserverCalls) {
  const Model m = tiny_model();
  auto net = backend()->prepare(m, PrepareConfig{1, 3, 3, Precision::fp32});
  const std::vector<ExecStep>& steps = net->steps();
  ASSERT_EQ(steps.size(), m.layers.size());
  const char* names[] = {"Conv2d 0", "ReLU6 1", "ResidualAdd 2", "GlobalAveragePool 3", "Linear 4"};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].name, names[i]);
    EXPECT_EQ(steps[i].layers, std::vector<int>{static_cast<int>(i)});
    EXPECT_FALSE(steps[i].variant.empty());
  }
  // The conv has two readers (the clip and the add), so the oneDNN backend fuses nothing here either.
  if (GetParam() == "cpu-ref")
    EXPECT_EQ(steps[0].variant, "pointwise-gemm");
  else
    EXPECT_EQ(steps[0].variant.rfind("onednn ", 0), 0u) << steps[0].variant;

  RecordingObserver observer;
  RunOptions options;
  options.observer = &observer;
  net->run(ramp_input(1, 3, 3), options);
  std::vector<std::string> expected;
  for (size_t i = 0; i < steps.size(); ++i) {
    expected.push_back("begin " + std::to_string(i));
    expected.push_back("end " + std::to_string(i));
  }
  EXPECT_EQ(observer.events, expected);
  EXPECT_TRUE(observer.null_streams);
}

TEST_P(CpuBackend, LayerOutputsOnlyWhenKept) {
  const Model m = tiny_model();
  auto net = backend()->prepare(m, PrepareConfig{2, 3, 4, Precision::fp32});
  ASSERT_EQ(net->layer_outputs().size(), m.layers.size());
  for (const Tensor& t : net->layer_outputs()) EXPECT_TRUE(t.empty());
  net->run(ramp_input(2, 3, 4));
  for (const Tensor& t : net->layer_outputs()) EXPECT_TRUE(t.empty());

  RunOptions keep;
  keep.keep_layer_outputs = true;
  const Tensor logits = net->run(ramp_input(2, 3, 4), keep);
  const std::vector<LayerStats> stats = analyse(m, 2, 3, 4);
  ASSERT_EQ(net->layer_outputs().size(), stats.size());
  for (size_t i = 0; i < stats.size(); ++i) {
    EXPECT_EQ(net->layer_outputs()[i].shape, stats[i].output) << "layer " << i;
    EXPECT_EQ(static_cast<int64_t>(net->layer_outputs()[i].data.size()), stats[i].output.numel());
  }
  EXPECT_EQ(net->layer_outputs().back().data, logits.data);
  // The ReLU6 ran in place over the conv output, yet each layer's kept output is its own.
  const std::vector<float>& conv = net->layer_outputs()[0].data;
  const std::vector<float>& relu = net->layer_outputs()[1].data;
  bool any_clipped = false;
  for (size_t i = 0; i < conv.size(); ++i) {
    EXPECT_EQ(relu[i], std::min(std::max(conv[i], 0.0f), 6.0f));
    any_clipped = any_clipped || relu[i] != conv[i];
  }
  EXPECT_TRUE(any_clipped);
}

TEST_P(CpuBackend, MemoryReportCountsHostBuffers) {
  const Model m = tiny_model();
  auto net = backend()->prepare(m, PrepareConfig{2, 8, 8, Precision::fp32});
  const MemoryReport before = net->memory();
  int64_t params = 0;
  for (const Layer& l : m.layers) params += l.param_count();
  if (GetParam() == "cpu-ref")
    EXPECT_EQ(before.weight_bytes, params * 4);
  else  // oneDNN's weight layouts may pad channels to their block
    EXPECT_GE(before.weight_bytes, params * 4);
  EXPECT_GT(before.activation_bytes, 0);
  EXPECT_EQ(before.total(), before.weight_bytes + before.activation_bytes + before.workspace_bytes);
  RunOptions keep;
  keep.keep_layer_outputs = true;
  net->run(ramp_input(2, 8, 8), keep);
  EXPECT_GT(net->memory().activation_bytes, before.activation_bytes);  // the kept copies count too
}

TEST_P(CpuBackend, PreparedNetOutlivesTheModel) {
  std::unique_ptr<PreparedNet> net;
  {
    const Model m = tiny_model();
    net = backend()->prepare(m, PrepareConfig{1, 1, 2, Precision::fp32});
  }
  Tensor input(Shape{1, 2, 1, 2});
  input.data = {1, 8, -2, 3};
  EXPECT_EQ(net->run(input).data, (std::vector<float>{8.0f, 3.5f, 11.5f, 23.5f}));
  EXPECT_EQ(net->config().batch, 1);
  EXPECT_EQ(net->config().width, 2);
}

}  // namespace
}  // namespace mnv2::test
