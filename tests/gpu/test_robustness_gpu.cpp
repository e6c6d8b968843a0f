// GPU faults on a real device. Out of device memory at an absurd batch or input size: a clear error with
// the sizes, every byte freed, and a smaller run in the same process that still matches the cpu backend.
// CUPTI disabled: the profile falls back to cudaEvent timing and says so in the report. A CUDA error inside
// a run: reported with the step and layer it happened in; after a fault that breaks the context (an
// illegal address, injected with a hand-written PTX kernel, in a child process), every further GPU call
// fails with an error instead of a crash or a hang, and the cpu backend keeps working. Every test skips
// where there is no CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "test_support.h"

// The CUDA headers reach this program only through mnv2_engine in CUDA builds.
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define MNV2_TEST_HAVE_CUDA 1
#endif

namespace mnv2::test {
namespace {

constexpr double kMaxRelL2 = 1e-5;  // float32 throughout, as in test_cudnn_backend.cpp

const Model& main_model() {
  static const Model model = load_onnx(main_model_path());
  return model;
}

// Layers the report's steps cover, counted once per step (a fused step covers several): every layer once.
size_t covered_layers(const RunReport& r) {
  size_t n = 0;
  for (const auto& s : r.steps) n += s.layers.size();
  return n;
}

double rel_l2_of(const Tensor& got, const Tensor& ref) {
  if (got.data.size() != ref.data.size()) return INFINITY;
  return compare(got.data.data(), ref.data.data(), static_cast<int64_t>(ref.data.size())).rel_l2;
}

class RobustnessGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): GPU fault tests skipped";
    const Availability a = make_backend("cudnn")->availability();
    ASSERT_TRUE(a.available) << "a CUDA device is present but cudnn is unavailable: " << a.reason;
  }
};

#ifdef MNV2_TEST_HAVE_CUDA

size_t free_device_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  return free_bytes;
}

TEST_F(RobustnessGpu, OutOfDeviceMemoryIsClearFreesEverythingAndASmallerRunFollows) {
  auto cudnn = make_backend("cudnn");
  const Tensor input = random_input(Shape{1, 3, 224, 224}, 11);
  // The first prepare creates the context and loads cuDNN's kernels; measure free memory after that.
  {
    auto warm = cudnn->prepare(main_model(), PrepareConfig{1, 224, 224});
    (void)warm->run(input);
  }
  const size_t before = free_device_bytes();
  ASSERT_GT(before, 0u);

  struct Case {
    int batch, height, width;
  };
  // 4096 images at 1024x1024 need tens of TB of activations; 64 at 8192x8192 several TB: far beyond 141 GB.
  for (const Case c : {Case{4096, 1024, 1024}, Case{64, 8192, 8192}}) {
    const std::string config =
        "batch " + std::to_string(c.batch) + " at " + std::to_string(c.height) + "x" + std::to_string(c.width);
    SCOPED_TRACE(config);
    try {
      auto net = cudnn->prepare(main_model(), PrepareConfig{c.batch, c.height, c.width});
      ADD_FAILURE() << "prepared " << net->memory().total() << " bytes; expected out of device memory";
    } catch (const Error& e) {
      const std::string msg = e.what();
      std::printf("[ oom      ] %s\n", msg.c_str());
      EXPECT_NE(msg.find("out of device memory"), std::string::npos) << msg;
      EXPECT_NE(msg.find(config), std::string::npos) << msg;
      EXPECT_NE(msg.find("GiB"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failure left an error behind for the next call to find";
    const size_t after = free_device_bytes();
    const size_t slack = size_t{64} << 20;  // allocator granularity and cuDNN's own caches
    EXPECT_GE(after + slack, before) << "free device memory fell from " << before << " to " << after << " bytes";
  }

  // The same process, the same backend object: a batch-1 run works and still agrees with the reference.
  auto net = cudnn->prepare(main_model(), PrepareConfig{1, 224, 224});
  const Tensor got = net->run(input);
  const Tensor ref = make_backend("cpu-ref")->prepare(main_model(), PrepareConfig{1, 224, 224})->run(input);
  EXPECT_LT(rel_l2_of(got, ref), kMaxRelL2);
  // And so does a larger one that fits.
  const Tensor batch8 = random_input(Shape{8, 3, 224, 224}, 12);
  EXPECT_EQ(cudnn->prepare(main_model(), PrepareConfig{8, 224, 224})->run(batch8).shape, (Shape{8, 1001, 1, 1}));
}

TEST_F(RobustnessGpu, ProfileAtAnImpossibleBatchFailsCleanlyAndTheNextProfileRuns) {
  ProfileConfig c;
  c.backend = "cudnn";
  c.batch = 65536;
  c.warmup = 0;
  c.iters = 1;
  try {
    (void)profile(main_model(), c);
    ADD_FAILURE() << "a batch of 65536 images was profiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of device memory for batch 65536"), std::string::npos) << e.what();
  }
  c.batch = 2;
  c.iters = 3;
  const RunReport r = profile(main_model(), c);
  EXPECT_EQ(covered_layers(r), 99u);
  EXPECT_EQ(r.end_to_end.host_ms.n, 3);
}

#endif  // MNV2_TEST_HAVE_CUDA

TEST_F(RobustnessGpu, DisabledCuptiFallsBackToEventTimingWithAVisibleWarning) {
  // Read when the timing source is made, so setting it here (before profile()) is enough.
  ASSERT_EQ(synced_setenv("MNV2_DISABLE_CUPTI", "1", 1), 0);
  ProfileConfig c;
  c.backend = "cudnn";
  c.timer = TimerKind::cupti_kernel;
  c.warmup = 1;
  c.iters = 3;
  RunReport r;
  try {
    r = profile(main_model(), c);
  } catch (...) {
    synced_unsetenv("MNV2_DISABLE_CUPTI");
    throw;
  }
  synced_unsetenv("MNV2_DISABLE_CUPTI");
  EXPECT_EQ(r.timer, "cuda_event");
  bool warned = false;
  for (const auto& w : r.warnings)
    warned = warned || (w.find("CUPTI unavailable") != std::string::npos &&
                        w.find("MNV2_DISABLE_CUPTI") != std::string::npos && w.find("cudaEvent") != std::string::npos);
  EXPECT_TRUE(warned) << "no CUPTI fallback warning among " << r.warnings.size() << " warnings";
  ASSERT_EQ(covered_layers(r), 99u);
  for (const auto& s : r.steps) {
    EXPECT_EQ(s.time_ns.n, 3) << s.name;
    EXPECT_GT(s.time_ns.median, 0) << s.name;
    EXPECT_TRUE(s.kernel_names.empty()) << s.name;
  }
  // The warning travels with the report.
  const std::vector<RunReport> back = reports_from_json(reports_json({r}));
  EXPECT_EQ(back.at(0).warnings, r.warnings);
}

#ifdef MNV2_TEST_HAVE_CUDA

// At one chosen step, makes a CUDA call on the network's stream fail, as a fault inside that layer would:
// the runtime records the error (cudaErrorInvalidMemcpyDirection, which does not break the context), and
// the backend's check after the step must find it. (Not a bad pointer: with HMM a host pointer can be valid
// device memory, and an unmapped one would fault asynchronously instead.)
class FailAtStep final : public StepObserver {
 public:
  explicit FailAtStep(int step) : step_(step) {}
  void step_begin(int step, void* stream) override {
    if (step != step_) return;
    const auto bad_kind = static_cast<cudaMemcpyKind>(42);
    fired_ = cudaMemcpyAsync(dst_, src_, sizeof src_, bad_kind, static_cast<cudaStream_t>(stream)) != cudaSuccess;
  }
  void step_end(int, void*) override {}
  bool fired() const { return fired_; }

 private:
  int step_;
  bool fired_ = false;
  char src_[4] = {}, dst_[4] = {};
};

TEST_F(RobustnessGpu, AnErrorInsideARunNamesTheLayer) {
  auto net = make_backend("cudnn")->prepare(main_model(), PrepareConfig{1, 224, 224});
  const Tensor input = random_input(Shape{1, 3, 224, 224}, 5);
  const Tensor good = net->run(input);
  for (const int step : {0, 5, static_cast<int>(net->steps().size()) - 1}) {
    const ExecStep& exec = net->steps().at(static_cast<size_t>(step));
    const Layer& layer = main_model().layers.at(static_cast<size_t>(exec.layers.front()));
    SCOPED_TRACE(exec.name);
    FailAtStep observer(step);
    RunOptions options;
    options.observer = &observer;
    try {
      (void)net->run(input, options);
      ADD_FAILURE() << "the run succeeded";
    } catch (const Error& e) {
      const std::string msg = e.what();
      std::printf("[ fault    ] %s\n", msg.c_str());
      EXPECT_NE(msg.find("step '" + exec.name + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'" + layer.name + "'"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_TRUE(observer.fired());
    // Not a sticky error: the same prepared network runs again and gives the same logits.
    EXPECT_EQ(rel_l2_of(net->run(input), good), 0.0);
  }
}

// Stores through the pointer it is given. Hand-written PTX (sm_80 and later, JIT-compiled by the driver), so
// no CUDA compiler is needed; given an unmapped address it faults with an illegal address, which breaks the
// CUDA context for the rest of the process.
constexpr const char* kStorePtx = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry mnv2_test_store(.param .u64 out_param)
{
    .reg .b64 %rd<3>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [out_param];
    cvta.to.global.u64 %rd2, %rd1;
    mov.f32 %f1, 0f3F800000;
    st.global.f32 [%rd2], %f1;
    ret;
}
)";

class FaultAtStep final : public StepObserver {
 public:
  explicit FaultAtStep(int step) : step_(step) {
    if (cudaLibraryLoadData(&library_, kStorePtx, nullptr, nullptr, 0, nullptr, nullptr, 0) != cudaSuccess ||
        cudaLibraryGetKernel(&kernel_, library_, "mnv2_test_store") != cudaSuccess)
      kernel_ = nullptr;
  }
  bool ok() const { return kernel_ != nullptr; }
  void step_begin(int step, void* stream) override {
    if (step != step_) return;
    void* bad = reinterpret_cast<void*>(uintptr_t{64});
    void* args[] = {&bad};
    const auto s = static_cast<cudaStream_t>(stream);
    if (cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(1), dim3(1), args, 0, s) == cudaSuccess)
      fired_ = true;
    // Wait for the fault, so that it surfaces inside this step rather than some steps later; the error it
    // returns is left for the backend to find.
    (void)cudaStreamSynchronize(s);
  }
  void step_end(int, void*) override {}
  bool fired() const { return fired_; }

 private:
  int step_;
  cudaLibrary_t library_ = nullptr;  // never unloaded: the context it lives in is broken on purpose
  cudaKernel_t kernel_ = nullptr;
  bool fired_ = false;
};

// Runs in a child process (the fault poisons the whole CUDA context). Writes what happened to stderr for
// the parent to match; exits 0 only if every expectation held.
[[noreturn]] void fault_and_carry_on() {
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", ok ? "held" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
  };
  const Model& model = main_model();
  auto net = make_backend("cudnn")->prepare(model, PrepareConfig{1, 224, 224});
  const Tensor input = random_input(Shape{1, 3, 224, 224}, 6);
  const Tensor ref = make_backend("cpu-ref")->prepare(model, PrepareConfig{1, 224, 224})->run(input);
  FaultAtStep observer(7);
  if (!observer.ok()) {
    std::fprintf(stderr, "the PTX kernel could not be loaded\n");
    std::exit(3);
  }
  RunOptions options;
  options.observer = &observer;
  try {
    (void)net->run(input, options);
    expect(false, "the faulting run threw");
  } catch (const Error& e) {
    const std::string msg = e.what();
    std::fprintf(stderr, "reported: %s\n", msg.c_str());
    expect(msg.find("step '" + net->steps()[7].name + "'") != std::string::npos, "the error names step 7");
    const int layer = net->steps()[7].layers.front();  // step 7's first layer (steps may fuse layers)
    expect(msg.find("'" + model.layers[static_cast<size_t>(layer)].name + "'") != std::string::npos,
           "the error names step 7's first layer");
  }
  expect(observer.fired(), "the fault was injected");
  // The context is broken: the same network, and a new one, fail with errors (no crash, no hang, no
  // garbage logits).
  try {
    (void)net->run(input);
    expect(false, "a run after the fault threw");
  } catch (const Error& e) {
    std::fprintf(stderr, "next run: %s\n", e.what());
  }
  try {
    (void)make_backend("cudnn")->prepare(model, PrepareConfig{1, 224, 224});
    expect(false, "a prepare after the fault threw");
  } catch (const Error& e) {
    std::fprintf(stderr, "next prepare: %s\n", e.what());
  }
  // Host work carries on: the cpu backend still gives the reference logits.
  const Tensor again = make_backend("cpu-ref")->prepare(model, PrepareConfig{1, 224, 224})->run(input);
  expect(rel_l2_of(again, ref) == 0.0, "the cpu backend still works");
  std::exit(failures == 0 ? 0 : 1);
}

TEST_F(RobustnessGpu, AFaultThatBreaksTheContextIsReportedAndTheProcessCarriesOn) {
  // "threadsafe" re-executes this test program for the child, so the child gets a fresh CUDA context and
  // the fault cannot poison the tests that run after this one in the parent.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_and_carry_on(), ::testing::ExitedWithCode(0), "reported: cudnn: step");
}

#endif  // MNV2_TEST_HAVE_CUDA

}  // namespace
}  // namespace mnv2::test
