// GPU timing sources on a real device: cudaEvent step times, CUPTI records tied to the right steps (a
// memset, a memcpy and a hand-written PTX kernel, so no .cu is needed), the one-live-CUPTI rule and the
// MNV2_DISABLE_CUPTI fallback; then both sources over the cudnn backend when it is built.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/timing.h"
#include "test_support.h"

// The CUDA headers reach this program only through mnv2_engine in CUDA builds.
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define MNV2_TEST_HAVE_CUDA 1
#endif

namespace mnv2 {
namespace {

#ifdef MNV2_TEST_HAVE_CUDA

void cuda_ok(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(err));
}
#define TEST_CUDA(call) cuda_ok((call), #call)

// out[i] = value for i < count; one thread per element. Hand-written PTX for sm_80 and later, loaded by the
// driver's JIT, so the test needs no CUDA compiler. The entry name is the C++ mangling of
// mnv2_test_fill(float*, unsigned int, float), so demangling is checked too.
constexpr const char* kFillPtx = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry _Z14mnv2_test_fillPfjf(
    .param .u64 out_param,
    .param .u32 count_param,
    .param .f32 value_param)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [out_param];
    ld.param.u32 %r1, [count_param];
    ld.param.f32 %f1, [value_param];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f32 [%rd4], %f1;
DONE:
    ret;
}
)";
constexpr const char* kFillName = "mnv2_test_fill(float*, unsigned int, float)";
constexpr int kFillBlock = 256;

class FillKernel {
 public:
  FillKernel() {
    error_ = cudaLibraryLoadData(&library_, kFillPtx, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (error_ == cudaSuccess) error_ = cudaLibraryGetKernel(&kernel_, library_, "_Z14mnv2_test_fillPfjf");
    if (error_ != cudaSuccess) cudaGetLastError();
  }
  ~FillKernel() {
    if (library_ != nullptr) cudaLibraryUnload(library_);
  }
  FillKernel(const FillKernel&) = delete;
  FillKernel& operator=(const FillKernel&) = delete;
  bool ok() const { return error_ == cudaSuccess; }
  std::string error() const { return cudaGetErrorString(error_); }
  int blocks(unsigned count) const { return static_cast<int>((count + kFillBlock - 1) / kFillBlock); }
  void launch(float* out, unsigned count, float value, cudaStream_t stream) const {
    void* args[] = {&out, &count, &value};
    TEST_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(blocks(count)), dim3(kFillBlock), args, 0,
                               stream));
  }

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  cudaError_t error_ = cudaSuccess;
};

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { TEST_CUDA(cudaMalloc(&ptr, bytes)); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* ptr = nullptr;
};

struct PinnedBuffer {
  explicit PinnedBuffer(size_t bytes) { TEST_CUDA(cudaMallocHost(&ptr, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(ptr); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* ptr = nullptr;
};

struct Stream {
  Stream() { TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t stream = nullptr;
};

// Calls two observers the way the profiler does: the outer one opens first and closes last.
class Tee final : public StepObserver {
 public:
  Tee(StepObserver& outer, StepObserver& inner) : outer_(outer), inner_(inner) {}
  void run_begin(void* s) override {
    outer_.run_begin(s);
    inner_.run_begin(s);
  }
  void run_end(void* s) override {
    inner_.run_end(s);
    outer_.run_end(s);
  }
  void step_begin(int step, void* s) override {
    outer_.step_begin(step, s);
    inner_.step_begin(step, s);
  }
  void step_end(int step, void* s) override {
    inner_.step_end(step, s);
    outer_.step_end(step, s);
  }

 private:
  StepObserver& outer_;
  StepObserver& inner_;
};

// A pretend network of four steps on one stream. Outside any step: an upload (HtoD) and a download
// (DtoH). Step 0: one memset. Step 1: one memcpy HtoD. Step 2: two fill kernels (or two memsets when
// the PTX cannot be loaded), so the step's time is a sum. Step 3 never runs.
struct FakeNet {
  static constexpr int kSteps = 4;
  static constexpr size_t kUploadBytes = 64 << 10;
  static constexpr size_t kMemsetBytes = 3 << 20;
  static constexpr size_t kCopyBytes = 2 << 20;
  static constexpr unsigned kFillCount = 1 << 20;  // floats
  static constexpr size_t kDownloadBytes = 4096;

  // Warms up before any timing source exists: the module's lazy load happens at the first launch and must
  // not show up inside a timed step.
  FakeNet() : device(kMemsetBytes + kCopyBytes + kFillCount * sizeof(float)), host(kCopyBytes) {
    if (fill.ok()) fill.launch(fill_out(), kFillCount, 0.5f, stream.stream);
    TEST_CUDA(cudaStreamSynchronize(stream.stream));
  }

  float* fill_out() const {
    return reinterpret_cast<float*>(static_cast<char*>(device.ptr) + kMemsetBytes + kCopyBytes);
  }

  void run(StepObserver& observer, float value) {
    char* base = static_cast<char*>(device.ptr);
    observer.run_begin(stream.stream);
    TEST_CUDA(cudaMemcpyAsync(base, host.ptr, kUploadBytes, cudaMemcpyHostToDevice, stream.stream));
    observer.step_begin(0, stream.stream);
    TEST_CUDA(cudaMemsetAsync(base, 1, kMemsetBytes, stream.stream));
    observer.step_end(0, stream.stream);
    observer.step_begin(1, stream.stream);
    TEST_CUDA(cudaMemcpyAsync(base + kMemsetBytes, host.ptr, kCopyBytes, cudaMemcpyHostToDevice, stream.stream));
    observer.step_end(1, stream.stream);
    observer.step_begin(2, stream.stream);
    for (int k = 0; k < 2; ++k) {
      if (fill.ok()) {
        fill.launch(fill_out(), kFillCount, value, stream.stream);
      } else {
        TEST_CUDA(cudaMemsetAsync(fill_out(), 0, kFillCount * sizeof(float), stream.stream));
      }
    }
    observer.step_end(2, stream.stream);
    TEST_CUDA(cudaMemcpyAsync(host.ptr, fill_out(), kDownloadBytes, cudaMemcpyDeviceToHost, stream.stream));
    observer.run_end(stream.stream);
    TEST_CUDA(cudaStreamSynchronize(stream.stream));
  }

  Stream stream;
  DeviceBuffer device;
  PinnedBuffer host;
  FillKernel fill;
};

std::string describe(const KernelRecord& r) {
  return r.kind + " '" + r.name + "' step " + std::to_string(r.step) + " " + std::to_string(r.bytes) + " B " +
         std::to_string(r.duration_ns()) + " ns grid " + std::to_string(r.grid[0]) + " block " +
         std::to_string(r.block[0]);
}

std::string describe(const std::vector<KernelRecord>& records) {
  std::string text;
  for (const auto& r : records) text += "\n  " + describe(r);
  return text;
}

class TimingGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device: " << env.why_none;
    test::synced_unsetenv("MNV2_DISABLE_CUPTI");
  }
};

TEST_F(TimingGpu, EventSourceTimesEveryStepThatRan) {
  FakeNet net;
  auto events = make_timing_source(TimerKind::cuda_event);
  ASSERT_EQ(events->kind(), TimerKind::cuda_event);
  EXPECT_NEAR(events->resolution_ns(), 500.0, 1.0);
  for (int iteration = 0; iteration < 3; ++iteration) {
    events->begin_iteration(FakeNet::kSteps);
    net.run(*events, 1.0f);
    const IterationTiming t = events->end_iteration();
    ASSERT_EQ(t.step_ns.size(), static_cast<size_t>(FakeNet::kSteps));
    for (int s = 0; s < 3; ++s) EXPECT_GT(t.step_ns[s], 0) << "step " << s << " iteration " << iteration;
    EXPECT_EQ(t.step_ns[3], -1) << "step 3 never ran";
    EXPECT_GT(t.run_ns, 0);
    for (int s = 0; s < 3; ++s) EXPECT_LE(t.step_ns[s], t.run_ns + 500);
    EXPECT_TRUE(t.records.empty());
    std::printf("[event] iteration %d: steps %lld %lld %lld ns, run %lld ns\n", iteration,
                static_cast<long long>(t.step_ns[0]), static_cast<long long>(t.step_ns[1]),
                static_cast<long long>(t.step_ns[2]), static_cast<long long>(t.run_ns));
  }
}

TEST_F(TimingGpu, RunTimerTimesTheRunOnTheStream) {
  FakeNet net;
  auto timer = make_run_timer(true);
  EXPECT_EQ(timer->last_run_ns(), -1);
  net.run(*timer, 2.0f);
  EXPECT_GT(timer->last_run_ns(), 0);
  EXPECT_LT(timer->last_run_ns(), 1'000'000'000);
}

TEST_F(TimingGpu, CuptiTiesRecordsToTheirSteps) {
  FakeNet net;
  if (!net.fill.ok())
    std::printf("[cupti] PTX kernel not loaded (%s): step 2 uses memsets\n", net.fill.error().c_str());
  auto events = make_timing_source(TimerKind::cuda_event);
  auto cupti = make_timing_source(TimerKind::cupti_kernel);
  ASSERT_EQ(cupti->kind(), TimerKind::cupti_kernel)
      << "CUPTI fell back: " << (cupti->warnings().empty() ? "" : cupti->warnings().front());
  Tee tee(*events, *cupti);
  size_t first_count = 0;
  for (int iteration = 0; iteration < 4; ++iteration) {
    events->begin_iteration(FakeNet::kSteps);
    cupti->begin_iteration(FakeNet::kSteps);
    const float value = 3.0f + static_cast<float>(iteration);
    net.run(tee, value);
    const IterationTiming c = cupti->end_iteration();
    const IterationTiming e = events->end_iteration();
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ", records:" + describe(c.records));
    if (iteration == 0) std::printf("[cupti] iteration 0 records:%s\n", describe(c.records).c_str());

    // The kernel did what it was asked (its records describe real work).
    if (net.fill.ok()) EXPECT_EQ(static_cast<const float*>(net.host.ptr)[0], value);

    auto in_step = [&](int step) {
      std::vector<KernelRecord> out;
      for (const auto& r : c.records)
        if (r.step == step) out.push_back(r);
      return out;
    };
    const auto step0 = in_step(0), step1 = in_step(1), step2 = in_step(2), outside = in_step(-1);
    ASSERT_EQ(step0.size(), 1u);
    EXPECT_EQ(step0[0].kind, "memset");
    EXPECT_EQ(step0[0].bytes, static_cast<int64_t>(FakeNet::kMemsetBytes));
    ASSERT_EQ(step1.size(), 1u);
    EXPECT_EQ(step1[0].kind, "memcpy");
    EXPECT_EQ(step1[0].name, "memcpy HtoD");
    EXPECT_EQ(step1[0].bytes, static_cast<int64_t>(FakeNet::kCopyBytes));
    ASSERT_EQ(step2.size(), 2u);
    for (const auto& r : step2) {
      EXPECT_FALSE(r.name.empty());
      if (net.fill.ok()) {
        EXPECT_EQ(r.kind, "kernel");
        EXPECT_EQ(r.name, kFillName);
        EXPECT_EQ(r.grid, (std::array<int, 3>{net.fill.blocks(FakeNet::kFillCount), 1, 1}));
        EXPECT_EQ(r.block, (std::array<int, 3>{kFillBlock, 1, 1}));
      }
    }
    EXPECT_TRUE(in_step(3).empty());
    // Upload and download happen outside every step.
    ASSERT_EQ(outside.size(), 2u);
    EXPECT_EQ(outside[0].name, "memcpy HtoD");
    EXPECT_EQ(outside[0].bytes, static_cast<int64_t>(FakeNet::kUploadBytes));
    EXPECT_EQ(outside[1].name, "memcpy DtoH");
    EXPECT_EQ(outside[1].bytes, static_cast<int64_t>(FakeNet::kDownloadBytes));
    // Nothing leaks between iterations.
    if (iteration == 0) first_count = c.records.size();
    EXPECT_EQ(c.records.size(), first_count);

    ASSERT_EQ(c.step_ns.size(), static_cast<size_t>(FakeNet::kSteps));
    EXPECT_EQ(c.step_ns[3], -1) << "step 3 never ran";
    const double slack = events->resolution_ns() + cupti->resolution_ns();
    for (int s = 0; s < 3; ++s) {
      int64_t sum = 0;
      for (const auto& r : in_step(s)) {
        EXPECT_GT(r.end_ns, r.start_ns) << describe(r);
        sum += r.duration_ns();
      }
      EXPECT_EQ(c.step_ns[s], sum) << "step " << s << " is the sum of its records";
      EXPECT_GT(c.step_ns[s], 0) << "step " << s;
      // GPU-only time inside the event pair cannot exceed the pair's stream time by more than resolution.
      EXPECT_LE(static_cast<double>(c.step_ns[s]), static_cast<double>(e.step_ns[s]) + slack)
          << "step " << s << ": CUPTI " << c.step_ns[s] << " ns, event " << e.step_ns[s] << " ns";
    }
    EXPECT_GT(c.run_ns, 0);
    EXPECT_LE(static_cast<double>(c.run_ns), static_cast<double>(e.run_ns) + slack);
    std::printf("[cupti] iteration %d: cupti %lld %lld %lld ns (run span %lld) vs event %lld %lld %lld ns (run %lld)\n",
                iteration, static_cast<long long>(c.step_ns[0]), static_cast<long long>(c.step_ns[1]),
                static_cast<long long>(c.step_ns[2]), static_cast<long long>(c.run_ns),
                static_cast<long long>(e.step_ns[0]), static_cast<long long>(e.step_ns[1]),
                static_cast<long long>(e.step_ns[2]), static_cast<long long>(e.run_ns));
    // Timestamp granularity, to back the resolution the CUPTI source claims.
    int64_t smallest = 0;
    for (const auto& r : c.records)
      if (r.duration_ns() > 0 && (smallest == 0 || r.duration_ns() < smallest)) smallest = r.duration_ns();
    if (iteration == 3) std::printf("[cupti] shortest record: %lld ns\n", static_cast<long long>(smallest));
  }
  for (const auto& w : cupti->warnings()) {
    std::printf("[cupti] warning: %s\n", w.c_str());
    EXPECT_EQ(w.find("dropped"), std::string::npos) << w;
    EXPECT_EQ(w.find("could not"), std::string::npos) << w;
  }
}

TEST_F(TimingGpu, OnlyOneCuptiSourceLivesAtATime) {
  auto first = make_timing_source(TimerKind::cupti_kernel);
  ASSERT_EQ(first->kind(), TimerKind::cupti_kernel);
  try {
    make_timing_source(TimerKind::cupti_kernel);
    ADD_FAILURE() << "a second CUPTI source was made while the first lives";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already live"), std::string::npos) << e.what();
  }
  first.reset();
  auto again = make_timing_source(TimerKind::cupti_kernel);
  EXPECT_EQ(again->kind(), TimerKind::cupti_kernel) << "CUPTI did not start again after the first source went";
}

TEST_F(TimingGpu, CuptiForcedOffFallsBackToEventsWithAWarning) {
  test::synced_setenv("MNV2_DISABLE_CUPTI", "1", 1);
  auto source = make_timing_source(TimerKind::cupti_kernel);
  test::synced_unsetenv("MNV2_DISABLE_CUPTI");
  EXPECT_EQ(source->kind(), TimerKind::cuda_event);
  const auto warnings = source->warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "CUPTI unavailable (disabled by MNV2_DISABLE_CUPTI=1): falling back to cudaEvent timing");
  // The fallback still times.
  FakeNet net;
  source->begin_iteration(FakeNet::kSteps);
  net.run(*source, 1.0f);
  EXPECT_GT(source->end_iteration().step_ns[0], 0);
}

// Both sources over a real network, when the cudnn backend is built and runs here.
TEST_F(TimingGpu, CuptiAndEventsOverTheCudnnBackend) {
  auto backend = make_backend("cudnn");
  if (Availability a = backend->availability(); !a.available) GTEST_SKIP() << "cudnn backend: " << a.reason;
  const Model model = builtin_mobilenet_v2();
  auto net = backend->prepare(model, PrepareConfig{});
  const Tensor input = random_input(Shape{1, model.input_channels, 224, 224}, 7);
  const int steps = static_cast<int>(net->steps().size());
  // Warm-up before CUPTI is on: lazy loading stays out, and an unlabelled run would count as stray records.
  net->run(input, {});
  auto events = make_timing_source(TimerKind::cuda_event);
  auto cupti = make_timing_source(TimerKind::cupti_kernel);
  ASSERT_EQ(cupti->kind(), TimerKind::cupti_kernel);
  Tee tee(*events, *cupti);
  RunOptions options;
  options.observer = &tee;
  for (int iteration = 0; iteration < 3; ++iteration) {
    events->begin_iteration(steps);
    cupti->begin_iteration(steps);
    net->run(input, options);
    const IterationTiming c = cupti->end_iteration();
    const IterationTiming e = events->end_iteration();
    const double slack = events->resolution_ns() + cupti->resolution_ns();
    std::vector<int> kernels(static_cast<size_t>(steps), 0);
    for (const auto& r : c.records) {
      EXPECT_FALSE(r.name.empty());
      if (r.step >= 0 && r.kind == "kernel") ++kernels[static_cast<size_t>(r.step)];
    }
    // A step may legitimately launch nothing (a reshape), but most of MobileNetV2's steps are convolutions.
    const auto with_kernels = std::count_if(kernels.begin(), kernels.end(), [](int n) { return n > 0; });
    EXPECT_GE(with_kernels * 2, steps) << "only " << with_kernels << " of " << steps << " steps have kernels";
    int64_t cupti_sum = 0, event_sum = 0;
    for (int s = 0; s < steps; ++s) {
      const ExecStep& step = net->steps()[static_cast<size_t>(s)];
      if (iteration == 0 && kernels[static_cast<size_t>(s)] == 0)
        std::printf("[cudnn] step %d (%s) has no kernel record\n", s, step.name.c_str());
      EXPECT_GT(e.step_ns[s], 0) << step.name;
      EXPECT_LE(static_cast<double>(c.step_ns[s]), static_cast<double>(e.step_ns[s]) + slack)
          << step.name << ": CUPTI " << c.step_ns[s] << " ns, event " << e.step_ns[s] << " ns";
      cupti_sum += c.step_ns[s];
      event_sum += e.step_ns[s];
    }
    std::printf("[cudnn] iteration %d: %d steps, %zu records, sum CUPTI %.1f us, sum events %.1f us, run %.1f us\n",
                iteration, steps, c.records.size(), cupti_sum / 1e3, event_sum / 1e3, e.run_ns / 1e3);
  }
  for (const auto& w : cupti->warnings()) ADD_FAILURE() << "CUPTI warning: " << w;
}

#else

TEST(TimingGpu, NeedsACudaBuild) { GTEST_SKIP() << "this build has no CUDA support"; }

#endif

}  // namespace
}  // namespace mnv2
