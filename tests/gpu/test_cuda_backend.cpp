// What only the cuda backend (our own kernels) does, on a GPU; the contract every GPU backend keeps in every variant
// and precision (logits, every layer against the cpu reference, the graph against layer-by-layer runs, observers,
// refusals, memory) is test_gpu_backend_contract.cpp. Here: the plans' steps as the fast path, the baseline, the
// op fusions and the reduced precisions make them (names, variants, counts, what is not fused and why), CUPTI's
// attribution of graph replays to steps, the kernels per run against the plan's prediction, PDL and in-kernel
// split-K bit for bit, the profiler over fused steps, the precisions each variant takes. Every test skips where there
// is no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/tensor.h"
#include "mnv2/timing.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// The options every cuda network of the current scope is prepared with, as a front end passes them
// (PrepareConfig::cuda); ScopedOption sets one of them for one scope. These tests are of the per-layer plan unless a
// scope asks for a fusion (the default plan, auto, is tested where it says so: the contract's fast_auto variants, and
// DefaultPlanIsTheRulesTablesChoice below).
CudaOptions per_layer_options() {
  CudaOptions o;
  o.fusion = CudaOptions::Fusion::none;
  return o;
}
CudaOptions g_options = per_layer_options();

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

// The cuda backend, handed g_options in every prepare().
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

TEST_F(CudaBackendTest, DescribesItself) {
  const std::string text = backend_->description();
  EXPECT_NE(text.find("custom CUDA kernels"), std::string::npos) << text;
  EXPECT_NE(text.find(cuda_environment().devices.front().name), std::string::npos) << text;
  std::printf("cuda backend: %s\n", text.c_str());
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

// The default plan on this GPU is the rules table's choice for it (mnv2/cuda_plan.h): what the net runs, what it
// says it resolved and what its description names agree, at every precision this build runs.
TEST_F(CudaBackendTest, DefaultPlanIsTheRulesTablesChoice) {
  ScopedOption automatic("fusion", "auto");
  const GpuDevice& device = cuda_environment().devices.front();
  // The table measured sm_90 with sm_90 code: block (block_split in fp16 up to batch 8) there; this test's other GPUs
  // take what the table says.
  const bool measured = device.cc_major == 9 && device.cc_minor == 0 && device.code.find("sm_90") != std::string::npos;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
    if (!backend_->supports(p)) continue;
    for (int batch : {1, 8}) {
      SCOPED_TRACE(std::string(to_string(p)) + " batch " + std::to_string(batch) + ", " + device.code);
      auto net = prepare(main_model(), batch, 224, 224, p);
      const std::vector<ResolvedOption> resolved = net->resolved_options();
      ASSERT_EQ(resolved.size(), 1u);
      EXPECT_EQ(resolved[0].option, "cuda-fusion");
      EXPECT_EQ(resolved[0].requested, "auto");
      EXPECT_EQ(resolved[0].why.rfind("auto: ", 0), 0u) << resolved[0].why;
      // fp16 up to batch 8: block_split (the blocks block fuses, split where the stage bench measured it faster).
      if (measured)
        EXPECT_EQ(resolved[0].resolved, p == Precision::fp16 && batch <= 8 ? "block_split" : "block")
            << resolved[0].why;
      EXPECT_NE(net->description().find("fusion auto -> " + resolved[0].resolved), std::string::npos)
          << net->description();
      bool fused = false;
      for (const ExecStep& s : net->steps()) fused = fused || s.layers.size() > 3;
      EXPECT_EQ(fused, resolved[0].resolved.rfind("block", 0) == 0) << resolved[0].why;
      std::printf("default plan, %s batch %d: %s (%s)\n", to_string(p), batch, resolved[0].resolved.c_str(),
                  resolved[0].why.substr(0, 70).c_str());
    }
  }
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

// The fast path fuses the small networks as planned: MobileNetV2's epilogue fusions on the network of every op,
// nothing on the unfusable one but the input's NHWC copy and the Linear layer's permuted weights. (Both against the
// cpu reference in every variant: the contract.)
TEST_F(CudaBackendTest, SmallNetworksFuseAsPlanned) {
  std::mt19937_64 gen(fresh_seed());
  auto every_op = prepare(every_op_model(gen), 1, 10, 12);
  ASSERT_EQ(every_op->steps().size(), 4u);
  EXPECT_EQ(every_op->steps()[0].name, "Conv2d 0 + ReLU 1");
  EXPECT_EQ(every_op->steps()[1].name, "Conv2d 2 + ReLU 3 + ResidualAdd 4");
  auto unfusable = prepare(unfusable_model(gen), 2, 7, 8);
  EXPECT_EQ(unfusable->steps().size(), 7u);
  EXPECT_NE(unfusable->steps()[0].variant.find("nchw->nhwc"), std::string::npos) << unfusable->steps()[0].variant;
  EXPECT_NE(unfusable->steps()[6].variant.find("permuted"), std::string::npos) << unfusable->steps()[6].variant;
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

// Fusion expand_dw: expansion + depthwise in one kernel, every expanding block at batch 1, each fused step named
// after the four layers it covers; its graph bitwise equal to layer-by-layer runs at batch 2. (Its logits and layers
// against the references: the contract.)
TEST_F(CudaBackendTest, FusedExpandDepthwiseIsAttributedAsFused) {
  ScopedOption variant("variant", "fast");
  ScopedOption fuse("fusion", "expand_dw");
  auto net = prepare(main_model(), 1, 224, 224);
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
  auto batch2 = prepare(main_model(), 2, 224, 224);
  expect_graph_equals_layer_by_layer(*batch2, Shape{2, 3, 224, 224});
}

// The kernels a run launches, counted from the CUDA graph's kernel nodes (or a capture of one run without a
// graph), are what the plan predicts: one per step, plus a reduction kernel per split GEMM where the split is not
// reduced in the kernel, plus the input's NHWC copy; the plan's own count (in the description) agrees.
TEST_F(CudaBackendTest, KernelsPerRunIsWhatThePlanPredicts) {
  for (int batch : {1, 3})
    for (Precision precision : {Precision::fp32, Precision::fp16})
      for (const char* splitk : {"in_kernel", "separate", "cluster"})
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
            const bool cluster = step.variant.find(" dsmem") != std::string::npos;
            EXPECT_EQ(in_kernel, split && std::string(splitk) == "in_kernel") << step.variant;
            if (!split || std::string(splitk) != "cluster") EXPECT_FALSE(cluster) << step.variant;
            predicted += 1 + (split && !in_kernel && !cluster ? 1 : 0) +
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
    c.cuda.fusion = CudaOptions::Fusion::none;  // the per-layer plan's steps
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

// PDL and the in-kernel split-K reduction change when kernels start and who adds the partial sums, never the
// arithmetic: the logits are the same bits as a layer-by-layer run with neither, graph replays twice in a row
// included. Where the device has PDL (sm_90 with sm_90 code), auto turns it on. The cluster reduction adds in the
// same order too (KernelSplitK checks its bits against the separate pass at equal splits), but its plan caps the
// split at a portable cluster (8), so a GEMM split 9 or 10 ways elsewhere sums in other pieces: its runs are held
// to its own layer-by-layer run bit for bit, and that run to the separate plan's logits within a loose bound.
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
      Tensor cluster_reference;
      {
        ScopedOption pdl("pdl", "off"), splitk("splitk", "cluster"), graph("graph", "off");
        cluster_reference = prepare(main_model(), batch, 224, 224, precision)->run(input);
      }
      ASSERT_EQ(cluster_reference.data.size(), reference.data.size());
      double largest = 0, worst = 0;
      for (size_t i = 0; i < reference.data.size(); ++i) {
        largest = std::max(largest, std::fabs(double(reference.data[i])));
        worst = std::max(worst, std::fabs(double(cluster_reference.data[i]) - double(reference.data[i])));
      }
      EXPECT_LE(worst, 0.02 * largest) << "the cluster plan's logits against the separate plan's";
      for (const char* pdl : {"auto", "off"})
        for (const char* splitk : {"in_kernel", "separate", "cluster"}) {
          ScopedOption p("pdl", pdl), s("splitk", splitk);
          SCOPED_TRACE(std::string("pdl ") + pdl + " splitk " + splitk);
          auto net = prepare(main_model(), batch, 224, 224, precision);
          const std::string d = net->description();
          if (std::string(pdl) == "off") EXPECT_NE(d.find("PDL off"), std::string::npos) << d;
          if (std::string(pdl) == "auto" && device.cc_major < 9)
            EXPECT_NE(d.find("PDL off (needs"), std::string::npos) << d;
          const Tensor& expected = std::string(splitk) == "cluster" ? cluster_reference : reference;
          for (int replay = 0; replay < 2; ++replay) {
            const Tensor logits = net->run(input);
            ASSERT_EQ(logits.data.size(), expected.data.size());
            EXPECT_EQ(std::memcmp(logits.data.data(), expected.data.data(), logits.data.size() * sizeof(float)), 0)
                << "replay " << replay << ": " << d;
          }
        }
      // pdl on (every kernel's weights loaded before its wait) and late_weights (after it): run where the device and
      // the code have PDL, the same bits, and are refused with the reason elsewhere.
      for (const char* mode : {"on", "late_weights"}) {
        ScopedOption on("pdl", mode);
        SCOPED_TRACE(std::string("pdl ") + mode);
        try {
          auto net = prepare(main_model(), batch, 224, 224, precision);
          const std::string d = net->description();
          EXPECT_NE(d.find(std::string(mode) == "on" ? "PDL on" : "PDL on, weights loaded after the wait"),
                    std::string::npos)
              << d;
          for (int replay = 0; replay < 2; ++replay) {
            const Tensor logits = net->run(input);
            EXPECT_EQ(std::memcmp(logits.data.data(), reference.data.data(), logits.data.size() * sizeof(float)), 0)
                << "replay " << replay << ": " << d;
          }
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("PDL"), std::string::npos) << e.what();
          std::printf("pdl %s refused here: %s\n", mode, e.what());
        }
      }
    }
}

// --cuda-fusion block_split (fp16): where the GPU's measured table lists the blocks (sm_90 with its code) the plan
// splits them and says so; the logits are the same bits over 1,000 graph replays, and near the unsplit block plan's
// (the splits' float32 projections summed in another order); elsewhere it runs as block, the same bits as block.
TEST_F(CudaBackendTest, BlockSplitIsTheSameBitsOverReplays) {
  if (!backend_->supports(Precision::fp16)) GTEST_SKIP() << "no fp16 here";
  for (int batch : {1, 8}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Tensor input = random_input(Shape{batch, 3, 224, 224}, fresh_seed());
    Tensor block;
    {
      ScopedOption fusion("fusion", "block");
      block = prepare(main_model(), batch, 224, 224, Precision::fp16)->run(input);
    }
    ScopedOption fusion("fusion", "block_split");
    auto net = prepare(main_model(), batch, 224, 224, Precision::fp16);
    std::string d = net->description();
    bool split = false;
    for (const ExecStep& s : net->steps()) {
      split = split || s.variant.find(" split ") != std::string::npos;
      d += "\n" + s.name + ": " + s.variant;
    }
    const GpuDevice& device = cuda_environment().devices.front();
    if (device.cc_major * 10 + device.cc_minor == 90 && kernel_code_arch(0, nullptr) == 90)
      EXPECT_TRUE(split) << "sm_90 has a measured table: " << d;
    const Tensor first = net->run(input);
    ASSERT_EQ(first.data.size(), block.data.size());
    double largest = 0, worst = 0;
    for (size_t i = 0; i < first.data.size(); ++i) {
      largest = std::max(largest, std::fabs(double(block.data[i])));
      worst = std::max(worst, std::fabs(double(first.data[i]) - double(block.data[i])));
    }
    if (split)
      EXPECT_LE(worst, 0.02 * largest) << "the split plan's logits against the block plan's";
    else
      EXPECT_EQ(worst, 0.0) << "no block split here: the block plan itself";
    for (int replay = 0; replay < 1000; ++replay) {
      const Tensor logits = net->run(input);
      ASSERT_EQ(std::memcmp(logits.data.data(), first.data.data(), logits.data.size() * sizeof(float)), 0)
          << "replay " << replay << ": " << d;
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

// The reduced modes' steps say what ran: the pointwise convolutions and the Linear layer on tensor cores, the stem
// and the depthwise convolutions FFMA (in half storage in fp16), the input's half copy and the padded logits in
// fp16. (Their golden logits and layers: the contract.)
TEST_F(CudaBackendTest, ReducedPrecisionVariantsSayWhatRuns) {
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
// projection, residual) where the launch fills the GPU, each fused step named after every layer it covers, graph
// replay bitwise equal to layer-by-layer runs. Where the code is older than compute_80 nothing is fused and the plan
// says why. (Its golden logits and materialised layers against the references: the contract.)
TEST_F(CudaBackendTest, FusedBlockIsAttributedAsFused) {
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
  }
  if (!old_code.empty()) GTEST_SKIP() << "fused_block not run: " << old_code;

  auto batch2 = prepare(main_model(), 2, 224, 224, Precision::fp16);
  expect_graph_equals_layer_by_layer(*batch2, Shape{2, 3, 224, 224});
}

// Fusion block in fp32 (fused_stem and fused_block_ffma, FFMA: every architecture) and tf32 (fused_stem's float32
// kernel, fused_block's TF32 kernel, compute_80 and newer): every expanding block fused (fp32: block 2, the
// memory-bound one) or saying why not, the graph equal to the steps run one by one. (Golden logits and layers: the
// contract; the kernels themselves, on every block shape: test_kernels_fused_block_ffma.cpp.)
TEST_F(CudaBackendTest, BlockFusionInFp32AndTf32IsAttributedAsFused) {
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
    }
    auto batch8 = prepare(main_model(), 8, 224, 224, p);  // fp32: block 2 fused at batch 8
    expect_graph_equals_layer_by_layer(*batch8, Shape{8, 3, 224, 224});
  }
}

}  // namespace
}  // namespace mnv2::test
