// The contract every GPU backend keeps, in every variant and precision it runs (one parameterised suite over the
// cuda backend's fast plan, unfused and with each fusion, and its baseline; the cudnn backend's fused variant in
// each layout and its naive one; fp32, tf32 and fp16 where the variant takes them): logits within the precision's
// stated bound of every golden file, every layer it materialises against the cpu reference (batch 1 and 3, odd
// input sizes, the second model, small networks of every op and of layers no fusion takes, a table of single
// convolutions), the steps covering every layer once, the CUDA graph bitwise equal to layer-by-layer runs and to a
// net prepared without one, device-resident runs, the observer's calls, the refusals (per-step events inside a
// replay, a replay without a graph, a wrong input shape, a device ordinal that is not there) and the memory report.
// What only one backend does stays in test_cuda_backend.cpp and test_cudnn_backend.cpp. Every test skips with a
// message where there is no CUDA device, or where the GPU or the build's code lacks the precision.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "mnv2/timing.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// One GPU backend in one variant and precision.
struct GpuVariant {
  const char* backend;  // "cuda", "cudnn"
  const char* name;     // the variant's options in a few words, for test names and messages
  Precision precision;
  CudaOptions cuda;
  CudnnOptions cudnn;
  bool one_step_per_layer = false;  // the cuda baseline and the cudnn naive variant
  // The bound of a materialised layer against the fp32 reference in the reduced modes: the diff's divergence
  // threshold (precision_layer_threshold), or 0.1 where cuDNN's half storage of every intermediate map (the
  // legacy calls round each layer's output) was measured further off on random input.
  double reduced_layer_bound = 0;
};

CudaOptions cuda_options(CudaOptions::Variant v, CudaOptions::Fusion f) {
  CudaOptions o;
  o.variant = v;
  o.fusion = f;
  return o;
}
CudnnOptions cudnn_options(CudnnOptions::Variant v, CudnnOptions::Layout l) {
  CudnnOptions o;
  o.variant = v;
  o.layout = l;
  return o;
}

std::vector<GpuVariant> every_variant() {
  using CV = CudaOptions::Variant;
  using CF = CudaOptions::Fusion;
  using DV = CudnnOptions::Variant;
  using DL = CudnnOptions::Layout;
  std::vector<GpuVariant> v;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
    v.push_back({"cuda", "fast", p, cuda_options(CV::fast, CF::none), {}, false, precision_layer_threshold(p)});
    v.push_back({"cuda", "fast_block", p, cuda_options(CV::fast, CF::block), {}, false, precision_layer_threshold(p)});
    // The default (auto: the rules table's plan for this GPU, block on sm_90 with its code, none elsewhere).
    v.push_back(
        {"cuda", "fast_auto", p, cuda_options(CV::fast, CF::automatic), {}, false, precision_layer_threshold(p)});
    v.push_back({"cudnn", "fused", p, {}, cudnn_options(DV::fused, DL::automatic), false, 0.1});
  }
  // block_split splits the blocks its measured table lists in fp16 only (elsewhere it runs as block).
  v.push_back({"cuda",
               "fast_block_split",
               Precision::fp16,
               cuda_options(CV::fast, CF::block_split),
               {},
               false,
               precision_layer_threshold(Precision::fp16)});
  // expand_dw fuses in fp32 only; the baseline runs strict fp32 only.
  v.push_back({"cuda", "fast_expand_dw", Precision::fp32, cuda_options(CV::fast, CF::expand_dw), {}, false, 0});
  v.push_back({"cuda", "baseline", Precision::fp32, cuda_options(CV::baseline, CF::none), {}, true, 0});
  // The fused variant in the layout its precision does not take by default (auto: NCHW in fp32, NHWC otherwise).
  v.push_back({"cudnn", "fused_nhwc", Precision::fp32, {}, cudnn_options(DV::fused, DL::nhwc), false, 0});
  v.push_back({"cudnn", "fused_nchw", Precision::fp16, {}, cudnn_options(DV::fused, DL::nchw), false, 0.1});
  for (Precision p : {Precision::fp32, Precision::fp16})
    v.push_back({"cudnn", "naive", p, {}, cudnn_options(DV::naive, DL::automatic), true, 0.1});
  return v;
}

void PrintTo(const GpuVariant& v, std::ostream* os) {
  *os << v.backend << " " << v.name << " " << to_string(v.precision);
}

std::string test_name(const ::testing::TestParamInfo<GpuVariant>& info) {
  return std::string(info.param.backend) + "_" + info.param.name + "_" + to_string(info.param.precision);
}

// The cpu reference of one input size, kept for the process: every variant compares against the same input and
// the same reference outputs (drawn once, from a fresh seed, printed on failure).
struct Reference {
  uint64_t seed = 0;
  Tensor input;
  Tensor logits;
  std::vector<Tensor> layers;
};
const Reference& cpu_reference(const Model& model, int batch, int height, int width) {
  static std::map<std::tuple<const Model*, int, int, int>, Reference> cache;
  Reference& r = cache[{&model, batch, height, width}];
  if (r.layers.empty()) {
    r.seed = fresh_seed();
    r.input = random_input(Shape{batch, model.input_channels, height, width}, r.seed);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{batch, height, width});
    r.logits = net->run(r.input, keep);
    r.layers = net->layer_outputs();
  }
  return r;
}

class GpuBackendContract : public ::testing::TestWithParam<GpuVariant> {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty())
      GTEST_SKIP() << "no CUDA device (" << env.why_none << "): the GPU backend contract is not run";
    const GpuVariant& v = GetParam();
    backend_ = make_backend(v.backend);
    const Availability a = backend_->availability();
    ASSERT_TRUE(a.available) << "a CUDA device is present but " << v.backend << " is unavailable: " << a.reason;
    if (!backend_->supports(v.precision))
      GTEST_SKIP() << v.backend << " runs no " << to_string(v.precision)
                   << " here (the GPU, or the code this build runs on it, has no TF32 tensor cores)";
    test_cache_file();  // cudnn's plans go to the test process's own file
  }

  const GpuVariant& variant() const { return GetParam(); }
  std::string what() const { return std::string(variant().backend) + " " + variant().name; }

  PrepareConfig config(int batch, int height, int width) const {
    PrepareConfig c{batch, height, width, variant().precision};
    c.cuda = variant().cuda;
    c.cudnn = variant().cudnn;
    return c;
  }
  std::unique_ptr<PreparedNet> prepare(const Model& model, int batch, int height = 224, int width = 224) const {
    return backend_->prepare(model, config(batch, height, width));
  }

  // `model` through this variant and the cpu reference (fp32) on the same random input, keeping every layer
  // output: the logits within the precision's stated bound, every layer the backend materialises within 1e-5 (fp32)
  // or the variant's reduced-mode bound; the steps cover every layer once, in order; each step's last layer is
  // materialised (the others may be fused away).
  void expect_layers_match_cpu(const Model& model, int batch, int height, int width, const std::string& label,
                               const Reference* shared = nullptr) const {
    Reference local;
    if (shared == nullptr) {  // a model of the test's own: its reference here
      local.seed = fresh_seed();
      local.input = random_input(Shape{batch, model.input_channels, height, width}, local.seed);
      RunOptions keep;
      keep.keep_layer_outputs = true;
      auto net = make_backend("cpu-ref")->prepare(model, PrepareConfig{batch, height, width});
      local.logits = net->run(local.input, keep);
      local.layers = net->layer_outputs();
    }
    const Reference& ref = shared != nullptr ? *shared : local;
    const Precision p = variant().precision;
    const std::string where = what() + " " + to_string(p) + ", " + label + ", batch " + std::to_string(batch) + ", " +
                              std::to_string(height) + "x" + std::to_string(width) +
                              ", MNV2_TEST_SEED=" + std::to_string(ref.seed);
    SCOPED_TRACE(where);
    const double logits_bound = precision_logits_bound(p);
    const double layer_bound = p == Precision::fp32 ? precision_logits_bound(p) : variant().reduced_layer_bound;

    auto net = prepare(model, batch, height, width);
    RunOptions keep;
    keep.keep_layer_outputs = true;
    const Tensor logits = net->run(ref.input, keep);

    const std::vector<ExecStep>& steps = net->steps();
    expect_steps_cover_layers(steps, model.layers.size());
    if (variant().one_step_per_layer) EXPECT_EQ(steps.size(), model.layers.size());
    std::vector<size_t> step_of(model.layers.size(), 0);
    for (size_t s = 0; s < steps.size(); ++s)
      for (int l : steps[s].layers) step_of[static_cast<size_t>(l)] = s;

    ASSERT_EQ(logits.shape, ref.logits.shape);
    EXPECT_LT(rel_l2_of(logits, ref.logits), logits_bound) << "logits";
    const std::vector<Tensor>& out = net->layer_outputs();
    ASSERT_EQ(out.size(), model.layers.size());
    ASSERT_EQ(ref.layers.size(), model.layers.size());
    double worst = 0;
    size_t worst_layer = 0;
    int compared = 0;
    for (size_t i = 0; i < model.layers.size(); ++i) {
      const ExecStep& step = steps[step_of[i]];
      const bool last_of_step = step.layers.back() == static_cast<int>(i);
      if (out[i].empty()) {
        EXPECT_FALSE(last_of_step) << "layer " << i << ", the last of step '" << step.name << "', has no output";
        continue;  // fused away inside the step
      }
      ASSERT_EQ(out[i].shape, ref.layers[i].shape) << "layer " << i;
      const double err = rel_l2_of(out[i], ref.layers[i]);
      ++compared;
      if (!(err <= worst)) {
        worst = err;
        worst_layer = i;
      }
      EXPECT_LT(err, layer_bound) << "layer " << i << " '" << model.layers[i].name << "' " << describe(model.layers[i])
                                  << ", step '" << step.name << "' variant '" << step.variant << "'";
    }
    std::printf("%s: %zu steps, %d layers compared, logits rel L2 %.3g, worst layer %zu '%s' rel L2 %.3g\n",
                where.c_str(), steps.size(), compared, rel_l2_of(logits, ref.logits), worst_layer,
                model.layers[worst_layer].name.c_str(), worst);
  }

  std::unique_ptr<Backend> backend_;
};

TEST_P(GpuBackendContract, LogitsMatchEveryGoldenFile) {
  const Precision p = variant().precision;
  const double bound = precision_logits_bound(p);
  const std::string tag = what() + " " + to_string(p);
  auto check = [&](PreparedNet& net, const std::string& name) {
    SCOPED_TRACE("golden " + name);
    const GoldenRun r = run_golden(net, name, tag, bound);
    EXPECT_LT(r.rel_l2, bound);
    if (p == Precision::fp32)
      EXPECT_EQ(r.top5, r.golden.top5);
    else
      expect_top_agrees(r.top5, r.golden.top5);
  };
  auto net = prepare(main_model(), 1);
  for (const std::string& name : golden_image_names()) check(*net, name);
  auto tv = prepare(torchvision_model(), 1);
  check(*tv, "torchvision_random");
}

TEST_P(GpuBackendContract, EveryLayerMatchesCpu) {
  struct Case {
    const Model* model;
    int batch, height, width;
    const char* label;
    bool reduced;  // also run in tf32 and fp16
  };
  // Odd sizes: every stride-2 convolution with pads [0,0,1,1] meets odd and even maps (the padded copies, partial
  // tiles), and 7x7 maps become maps with pixel counts that are not multiples of 4.
  const Case cases[] = {
      {&main_model(), 1, 224, 224, "main", false}, {&main_model(), 3, 224, 224, "main", false},
      {&main_model(), 1, 193, 257, "main", false}, {&main_model(), 2, 97, 131, "main", false},
      {&main_model(), 3, 193, 257, "main", true},  {&torchvision_model(), 2, 224, 224, "torchvision", true}};
  for (const Case& c : cases) {
    if (variant().precision != Precision::fp32 && !c.reduced) continue;
    expect_layers_match_cpu(*c.model, c.batch, c.height, c.width, c.label,
                            &cpu_reference(*c.model, c.batch, c.height, c.width));
  }
}

TEST_P(GpuBackendContract, SmallNetworksOfEveryOpAndOfUnfusableLayersMatchCpu) {
  const uint64_t seed = fresh_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE("models from MNV2_TEST_SEED=" + std::to_string(seed));
  const Model every_op = every_op_model(gen);
  const Model unfusable = unfusable_model(gen);
  for (const Model* m : {&every_op, &unfusable})
    for (const Layer& l : m->layers) ASSERT_FALSE(backend_->unsupported_reason(l)) << describe(l);
  expect_layers_match_cpu(every_op, 3, 10, 12, "every op");
  expect_layers_match_cpu(unfusable, 2, 7, 8, "unfusable");
}

// A single convolution reading the network input, and the same behind a ReLU6 (reading a map the backend made):
// every shape of the table, strict fp32.
TEST_P(GpuBackendContract, ConvolutionTableMatchesCpu) {
  if (variant().precision != Precision::fp32) GTEST_SKIP() << "the convolution table runs in fp32";
  const ConvCase cases[] = {
      {3, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 16, 16, true},     // the main model's stem
      {8, 8, 3, 3, 2, 2, 0, 0, 1, 1, 8, 15, 17, true},     // its stride-2 depthwise, odd map
      {8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 9, 9, true},       // symmetric depthwise
      {6, 4, 3, 3, 2, 2, 1, 0, 0, 2, 2, 11, 10, true},     // groups 2, extra rows on top, extra columns on the right
      {4, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 7, 5, false},      // pointwise without bias
      {5, 7, 2, 3, 2, 1, 2, 1, 0, 1, 1, 8, 9, true},       // non-square kernel, mixed strides and pads
      {16, 16, 5, 5, 2, 2, 2, 2, 2, 2, 16, 12, 12, true},  // 5x5 depthwise
      {4, 4, 3, 3, 1, 1, 2, 0, 0, 3, 1, 6, 7, true},       // pads larger than one side needs
  };
  for (const ConvCase& c : cases) {
    const uint64_t seed = fresh_seed();
    std::mt19937_64 gen(seed);
    const Model conv = single_conv_model(c, gen);
    Model behind;  // the network input feeds a ReLU6, which feeds the convolution
    behind.input_channels = c.in_channels;
    behind.input_height = c.height;
    behind.input_width = c.width;
    Layer& relu = add_layer(behind, LayerKind::ReLU6, {kNetworkInput});
    relu.clip_min = 0.0f;
    relu.clip_max = 6.0f;
    Layer moved = conv.layers[0];
    moved.index = 1;
    moved.inputs = {0};
    behind.layers.push_back(moved);
    behind.num_classes = c.out_channels;
    const std::string label = describe_case(c) + " (weights from MNV2_TEST_SEED=" + std::to_string(seed) + ")";
    expect_layers_match_cpu(conv, 2, c.height, c.width, label + " reading the input");
    expect_layers_match_cpu(behind, 2, c.height, c.width, label + " behind a ReLU6");
  }
}

// The graph replay runs exactly the kernels of the layer-by-layer run: bitwise the same logits, with or without the
// layer outputs downloaded, run after run, and as a net prepared without a graph. Device-resident runs take the
// input already on the device and return nothing; per-step observers are refused there, and inside a replay
// unless they see inside it (cudaEvent-style observers do not); a replay is refused where no graph was prepared.
TEST_P(GpuBackendContract, GraphReplayIsBitwiseIdenticalToLayerByLayerRuns) {
  auto net = prepare(main_model(), 2);
  ASSERT_TRUE(net->has_graph());
  ASSERT_TRUE(net->runs_device_resident());
  const Tensor input = random_input(Shape{2, 3, 224, 224}, fresh_seed());
  const Tensor graph = net->run(input);  // no observer: the graph
  RecordingObserver observer;            // times steps: layer by layer
  RunOptions per_step;
  per_step.observer = &observer;
  const Tensor layers = net->run(input, per_step);
  EXPECT_EQ(observer.calls.size(), 2 * net->steps().size() + 2);
  ASSERT_EQ(graph.data.size(), layers.data.size());
  auto same = [&](const Tensor& t) {
    return t.data.size() == graph.data.size() &&
           std::memcmp(t.data.data(), graph.data.data(), graph.data.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(layers)) << "layer by layer";
  for (int i = 0; i < 3; ++i) {
    RunOptions options;
    options.keep_layer_outputs = i == 1;  // downloading the layers must not change the result either
    EXPECT_TRUE(same(net->run(input, options))) << "run " << i;
  }
  RunOptions replay;
  replay.observer = &observer;
  replay.graph_replay = true;
  try {
    net->run(input, replay);
    ADD_FAILURE() << "per-step events inside a graph replay must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cupti"), std::string::npos) << e.what();
  }

  RunOptions resident;
  resident.device_resident = true;
  EXPECT_TRUE(net->run(input, resident).empty());
  resident.observer = &observer;
  EXPECT_THROW(net->run(input, resident), UsageError);
  EXPECT_TRUE(same(net->run(input))) << "after device-resident runs";

  PrepareConfig off = config(2, 224, 224);
  off.cuda.graph = CudaOptions::Graph::off;
  off.cudnn.graph = CudnnOptions::Graph::off;
  auto plain = backend_->prepare(main_model(), off);
  EXPECT_FALSE(plain->has_graph());
  // A net prepared again runs the same kernels where it chose the same ones: bitwise. cuDNN's autotuner times its
  // candidates at each prepare, so a second net may take another engine for a step (its variant names the engine);
  // then its logits are another implementation's, held to the precision's bound.
  bool same_choice = plain->steps().size() == net->steps().size();
  for (size_t i = 0; same_choice && i < net->steps().size(); ++i)
    same_choice = plain->steps()[i].variant == net->steps()[i].variant;
  const Tensor plain_logits = plain->run(input);
  if (same_choice) {
    EXPECT_TRUE(same(plain_logits)) << "a net prepared without a graph";
  } else {
    EXPECT_LT(rel_l2_of(plain_logits, graph), precision_logits_bound(variant().precision))
        << "a net prepared without a graph, on other engines";
  }
  RunOptions plain_resident;
  plain_resident.device_resident = true;
  EXPECT_TRUE(plain->run(input, plain_resident).empty());
  GraphClaimingObserver claiming;
  RunOptions claimed;
  claimed.observer = &claiming;
  claimed.graph_replay = true;
  try {
    plain->run(input, claimed);
    ADD_FAILURE() << "a graph replay without a graph must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("graph option \"off\""), std::string::npos) << e.what();
  }
}

TEST_P(GpuBackendContract, GraphModeOnRefusesPerStepTimingButTimesWholeRuns) {
  PrepareConfig on = config(1, 224, 224);
  on.cuda.graph = CudaOptions::Graph::on;
  on.cudnn.graph = CudnnOptions::Graph::on;
  auto net = backend_->prepare(main_model(), on);
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
  std::printf("%s %s graph replay at batch 1: %.3f ms (event pair around the graph launch)\n", what().c_str(),
              to_string(variant().precision), timer->last_run_ns() / 1e6);
}

TEST_P(GpuBackendContract, ObserverSeesEveryStepInOrderOnTheNetsStream) {
  auto net = prepare(main_model(), 1);
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

TEST_P(GpuBackendContract, ReportsMemory) {
  auto net = prepare(main_model(), 1);
  const MemoryReport m = net->memory();
  int64_t params = 0;
  for (const Layer& l : main_model().layers) params += l.param_count();
  EXPECT_GE(m.weight_bytes, params * storage_bytes(variant().precision));
  EXPECT_GT(m.activation_bytes, 0);
  EXPECT_GE(m.workspace_bytes, 0);
  std::printf("%s %s memory at batch 1: weights %lld B, activations %lld B, workspace %lld B\n", what().c_str(),
              to_string(variant().precision), static_cast<long long>(m.weight_bytes),
              static_cast<long long>(m.activation_bytes), static_cast<long long>(m.workspace_bytes));
}

TEST_P(GpuBackendContract, WrongInputShapeIsUsageErrorAndTheNetStaysUsable) {
  auto net = prepare(main_model(), 1);
  EXPECT_THROW(net->run(Tensor(Shape{2, 3, 224, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 3, 225, 224})), UsageError);
  EXPECT_THROW(net->run(Tensor(Shape{1, 1, 224, 224})), UsageError);
  Tensor short_data(Shape{1, 3, 224, 224});
  short_data.data.pop_back();
  EXPECT_THROW(net->run(short_data), UsageError);
  const Tensor logits = net->run(random_input(Shape{1, 3, 224, 224}, 7));
  EXPECT_EQ(logits.shape, (Shape{1, 1001, 1, 1}));
}

// PrepareConfig::device names the GPU; one that is not visible is refused before anything runs, naming the ordinal
// and the GPUs there are (mnv2/device.h gpu_device, behind the backend's name).
TEST_P(GpuBackendContract, ADeviceThatIsNotThereIsRefusedByName) {
  const int visible = static_cast<int>(cuda_environment().devices.size());
  for (int device : {visible, 7 + visible, -1}) {
    PrepareConfig c = config(1, 224, 224);
    c.device = device;
    try {
      backend_->prepare(main_model(), c);
      ADD_FAILURE() << "device " << device << " was accepted";
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(std::string(variant().backend) + ": --device " + std::to_string(device), 0), 0u) << msg;
      EXPECT_NE(msg.find("shows " + std::to_string(visible) + " GPU"), std::string::npos) << msg;
      EXPECT_NE(msg.find(cuda_environment().devices.front().name), std::string::npos) << msg;
    }
  }
  // The last visible device works (the first, on a machine of one).
  auto net = [&] {
    PrepareConfig c = config(1, 224, 224);
    c.device = cuda_environment().devices.back().index;
    return backend_->prepare(main_model(), c);
  }();
  EXPECT_EQ(net->config().device, cuda_environment().devices.back().index);
  EXPECT_EQ(net->run(random_input(Shape{1, 3, 224, 224}, 9)).shape, (Shape{1, 1001, 1, 1}));
}

INSTANTIATE_TEST_SUITE_P(EveryGpuBackendAndVariant, GpuBackendContract, ::testing::ValuesIn(every_variant()),
                         test_name);

}  // namespace
}  // namespace mnv2::test
