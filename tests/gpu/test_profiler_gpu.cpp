// The profiler over the cudnn backend on a real GPU: both timers give a time for every layer, CUPTI's
// GPU-only totals sit within reason of the event totals, reports round-trip, and cudnn agrees with cpu.
#include <gtest/gtest.h>

#include <cstdio>

#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

class ProfilerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_environment().devices.empty()) GTEST_SKIP() << "no CUDA device: " << cuda_environment().why_none;
    ASSERT_TRUE(make_backend("cudnn")->availability().available) << make_backend("cudnn")->availability().reason;
  }
  static const Model& model() {
    static const Model m = load_onnx(main_model_path());
    return m;
  }
  static ProfileConfig config(TimerKind timer, int batch) {
    ProfileConfig c;
    c.backend = "cudnn";
    c.batch = batch;
    c.timer = timer;
    c.warmup = 5;
    c.iters = 20;
    Golden g = read_golden("cat");
    Tensor t(Shape{1, 3, 224, 224});
    t.data = g.input;
    c.input = t;
    c.input_name = "cat.input.f32";
    return c;
  }
};

TEST_F(ProfilerGpu, EventTimesEveryLayer) {
  RunReport r = profile(model(), config(TimerKind::cuda_event, 2));
  EXPECT_EQ(r.timer, "cuda_event");
  ASSERT_EQ(r.steps.size(), 99u);
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.time_ns.n, 20) << s.name;
    EXPECT_GT(s.time_ns.median, 0) << s.name;
  }
  ASSERT_TRUE(r.end_to_end.gpu_ms.has_value());
  EXPECT_GT(r.end_to_end.gpu_ms->median, 0);
  // The layers run inside the measured run, so their sum cannot exceed it by more than noise.
  EXPECT_LT(r.sum_of_steps_ms, r.end_to_end.gpu_ms->median * 1.5);
  EXPECT_GT(r.sm_clock_mhz_start, 0);
}

TEST_F(ProfilerGpu, CuptiTimesEveryLayerWithKernelsAndAgreesWithEvents) {
  RunReport r = profile(model(), config(TimerKind::cupti_kernel, 1));
  ASSERT_EQ(r.timer, "cupti_kernel") << (r.warnings.empty() ? "" : r.warnings.front());
  double cupti_sum = 0, event_sum = 0;
  for (const auto& s : r.steps) {
    EXPECT_GT(s.time_ns.median, 0) << s.name;
    EXPECT_GE(s.kernels_per_iter, 1.0) << s.name;
    EXPECT_FALSE(s.kernel_names.empty()) << s.name;
    ASSERT_TRUE(s.event_ns.has_value());
    cupti_sum += s.time_ns.median;
    event_sum += s.event_ns->median;
    // GPU-only busy time cannot exceed the event span around the same work by more than the resolution.
    EXPECT_LE(s.time_ns.median, s.event_ns->median + 1000.0) << s.name;
  }
  EXPECT_GT(cupti_sum, 0.3 * event_sum);
  EXPECT_LE(cupti_sum, event_sum * 1.02);
  EXPECT_FALSE(r.trace.empty());
  for (const auto& w : r.warnings) ADD_FAILURE() << "unexpected warning: " << w;

  TempDir tmp;
  write_json_report(tmp.file("r.json"), {r});
  auto back = read_reports_file(tmp.file("r.json"));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].trace.size(), r.trace.size());
  EXPECT_EQ(report_csv(back), report_csv({r}));
  json::Json trace = json::parse(trace_json({r}));
  int kernels = 0;
  for (const auto& e : trace.at("traceEvents"))
    if (e.contains("cat") && e.at("cat").get<std::string>() == "kernel") ++kernels;
  EXPECT_GE(kernels, 99);
}

// --exec graph: the cuda backend's graph replay profiled per step by CUPTI (graph node ids); events and
// backends without a graph are refused.
TEST_F(ProfilerGpu, CudaGraphReplayIsProfiledPerStepWithCupti) {
  if (!make_backend("cuda")->availability().available) GTEST_SKIP() << make_backend("cuda")->availability().reason;
  ProfileConfig c = config(TimerKind::cupti_kernel, 2);
  c.backend = "cuda";
  c.graph_replay = true;
  RunReport r = profile(model(), c);
  ASSERT_EQ(r.timer, "cupti_kernel") << (r.warnings.empty() ? "" : r.warnings.front());
  EXPECT_EQ(r.execution, "graph replay");
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.time_ns.n, 20) << s.name;
    EXPECT_GT(s.time_ns.median, 0) << s.name;
    EXPECT_GE(s.kernels_per_iter, 1.0) << s.name;
    EXPECT_FALSE(s.event_ns.has_value()) << s.name;  // events cannot time steps inside a replay
  }
  ASSERT_TRUE(r.end_to_end.gpu_ms.has_value());
  // GPU-only kernel time of the steps fits inside the whole replay (which also uploads the input).
  EXPECT_LT(r.sum_of_steps_ms, r.end_to_end.gpu_ms->median);
  for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  c.timer = TimerKind::cuda_event;
  EXPECT_THROW(profile(model(), c), UsageError);
  c.timer = TimerKind::cupti_kernel;
  c.backend = "cudnn";
  EXPECT_THROW(profile(model(), c), UsageError);
}

TEST_F(ProfilerGpu, CudnnAgreesWithCpuLayerByLayer) {
  Golden g = read_golden("grace_hopper");
  Tensor input(Shape{1, 3, 224, 224});
  input.data = g.input;
  DiffReport d = diff_backends(model(), "cudnn", "cpu-ref", PrepareConfig{1, 224, 224}, input);
  EXPECT_TRUE(d.top5_agree);
  EXPECT_LT(d.logits.rel_l2, 1e-5);
  EXPECT_EQ(d.first_divergent_layer, -1);
  ASSERT_EQ(d.layers.size(), 99u);
  for (const auto& l : d.layers) {
    EXPECT_TRUE(l.compared) << l.layer;
    EXPECT_LT(l.error.rel_l2, 1e-5) << l.layer;
    EXPECT_GT(l.error.cosine, 0.9999999) << l.layer;
  }
}

}  // namespace
}  // namespace mnv2::test
