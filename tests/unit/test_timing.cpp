// Timing sources on the CPU side: timer names, the host clock source and run timer, and the errors GPU
// timing gives where there is no CUDA device (the GPU behaviour is in tests/gpu/test_timing_gpu.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/timing.h"

namespace mnv2 {
namespace {

constexpr int64_t kMillisecond = 1'000'000;  // ns
constexpr int64_t kSecond = 1'000 * kMillisecond;

void sleep_2ms() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

TEST(TimingNames, ParseAcceptsShortAndFullNames) {
  EXPECT_EQ(parse_timer("host"), TimerKind::host_clock);
  EXPECT_EQ(parse_timer("event"), TimerKind::cuda_event);
  EXPECT_EQ(parse_timer("cupti"), TimerKind::cupti_kernel);
  EXPECT_EQ(parse_timer("CUPTI"), TimerKind::cupti_kernel);
  for (TimerKind kind : {TimerKind::host_clock, TimerKind::cuda_event, TimerKind::cupti_kernel})
    EXPECT_EQ(parse_timer(to_string(kind)), kind) << to_string(kind);
  EXPECT_STREQ(to_string(TimerKind::host_clock), "host_clock");
  EXPECT_STREQ(to_string(TimerKind::cuda_event), "cuda_event");
  EXPECT_STREQ(to_string(TimerKind::cupti_kernel), "cupti_kernel");
}

TEST(TimingNames, ParseRejectsOthersWithUsageError) {
  for (const char* bad : {"", "events", "nvtx", "host clock", "cupti_kernels", "gpu"}) {
    try {
      parse_timer(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("choose host, event, cupti"), std::string::npos) << e.what();
    }
  }
}

TEST(HostTiming, MeasuresASleepInOneStepAndLeavesOthersUnmeasured) {
  auto source = make_timing_source(TimerKind::host_clock);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->kind(), TimerKind::host_clock);
  EXPECT_GT(source->resolution_ns(), 0.0);
  EXPECT_LT(source->resolution_ns(), 1e6);

  for (int iteration = 0; iteration < 2; ++iteration) {
    source->begin_iteration(3);
    source->run_begin(nullptr);
    source->step_begin(0, nullptr);
    sleep_2ms();
    source->step_end(0, nullptr);
    source->step_begin(2, nullptr);
    source->step_end(2, nullptr);
    source->run_end(nullptr);
    const IterationTiming timing = source->end_iteration();
    ASSERT_EQ(timing.step_ns.size(), 3u);
    // A sanity check, not a timing assertion: the sleep is at least 2 ms, and nothing takes a second.
    EXPECT_GT(timing.step_ns[0], kMillisecond);
    EXPECT_LT(timing.step_ns[0], kSecond);
    EXPECT_EQ(timing.step_ns[1], -1) << "a step that did not run was measured";
    EXPECT_GE(timing.step_ns[2], 0);
    EXPECT_GE(timing.run_ns, timing.step_ns[0]);
    EXPECT_LT(timing.run_ns, kSecond);
    EXPECT_TRUE(timing.records.empty());
    EXPECT_TRUE(source->warnings().empty());
  }
}

TEST(HostTiming, WithoutRunBoundariesRunIsUnmeasured) {
  auto source = make_host_timing_source();
  source->begin_iteration(1);
  source->step_begin(0, nullptr);
  source->step_end(0, nullptr);
  EXPECT_EQ(source->end_iteration().run_ns, -1);
}

TEST(HostTiming, RejectsStepsOutsideTheIteration) {
  auto source = make_host_timing_source();
  source->begin_iteration(2);
  EXPECT_THROW(source->step_begin(2, nullptr), Error);
  EXPECT_THROW(source->step_begin(-1, nullptr), Error);
  EXPECT_THROW(source->begin_iteration(-1), UsageError);
}

TEST(HostTiming, RunTimerMeasuresTheRun) {
  auto timer = make_run_timer(false);
  ASSERT_NE(timer, nullptr);
  EXPECT_EQ(timer->last_run_ns(), -1) << "nothing has run yet";
  timer->run_begin(nullptr);
  timer->step_begin(0, nullptr);
  sleep_2ms();
  timer->step_end(0, nullptr);
  timer->run_end(nullptr);
  EXPECT_GT(timer->last_run_ns(), kMillisecond);
  EXPECT_LT(timer->last_run_ns(), kSecond);
}

TEST(GpuTimingWithoutDevice, FactoriesSayWhy) {
  if (!cuda_environment().devices.empty()) GTEST_SKIP() << "this machine has a CUDA device; see mnv2_gpu_tests";
  for (TimerKind kind : {TimerKind::cuda_event, TimerKind::cupti_kernel}) {
    try {
      make_timing_source(kind);
      ADD_FAILURE() << to_string(kind) << " timing was made without a device";
    } catch (const UsageError& e) {
      ADD_FAILURE() << "a missing device is not a usage error: " << e.what();
    } catch (const Error& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(std::string(to_string(kind)) + " timing needs a CUDA device ("), std::string::npos) << text;
      EXPECT_NE(text.find(cuda_environment().why_none), std::string::npos) << text;
    }
  }
  EXPECT_THROW(make_run_timer(true), Error);
}

}  // namespace
}  // namespace mnv2
