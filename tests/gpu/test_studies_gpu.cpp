// The studies on a GPU: the memory report's driver reading for the cudnn backend.
#include <gtest/gtest.h>

#include "mnv2/device.h"
#include "mnv2/memory.h"
#include "mnv2/roofline.h"

#include <cstdio>
#include <cstdlib>
#include "test_support.h"

namespace mnv2::test {
namespace {

class StudiesGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_environment().devices.empty()) GTEST_SKIP() << "no CUDA device: " << cuda_environment().why_none;
    ASSERT_TRUE(make_backend("cudnn")->availability().available) << make_backend("cudnn")->availability().reason;
  }
};

TEST_F(StudiesGpu, DriverSeesAtLeastWhatTheCudnnBackendAccounts) {
  const Model m = builtin_mobilenet_v2();
  const MemoryStudy s = memory_study(m, "cudnn", PrepareConfig{32, 224, 224, Precision::fp32});
  ASSERT_GE(s.held.device_used_before_bytes, 0);
  EXPECT_GT(s.held.device_total_bytes, s.held.device_used_peak_bytes);
  // Every weight on the device once; the cudnn backend starts each weight and bias tensor on a 256-byte
  // boundary (cudaMalloc's alignment), so the arena holds up to 255 bytes more per tensor.
  int64_t tensors = 0;
  for (const Layer& l : m.layers) tensors += (l.weight.empty() ? 0 : 1) + (l.bias.empty() ? 0 : 1);
  EXPECT_GE(s.held.weight_bytes, s.model_weight_bytes);
  EXPECT_LT(s.held.weight_bytes - s.model_weight_bytes, 256 * tensors) << tensors << " weight tensors";
  // Allocations round up and library handles take memory of their own: the driver sees more, never much
  // less (another process freeing memory meanwhile would be the only way, on a shared GPU).
  EXPECT_GE(s.held.driver_held_bytes(), s.held.total() * 9 / 10)
      << "driver " << s.held.driver_held_bytes() << " backend " << s.held.total();
}

}  // namespace
}  // namespace mnv2::test

namespace mnv2::test {
namespace {

TEST_F(StudiesGpu, CalibrationGivesPlausibleCeilingsAndIsCached) {
  const Ceilings c = calibrate_gpu(0);
  EXPECT_EQ(c.key.rfind("gpu|", 0), 0u) << c.key;
  EXPECT_NE(c.key.find("|GPU-"), std::string::npos) << c.key;
  // Any NVIDIA GPU that runs this: between a laptop part and well beyond an H200 (4.8 TB/s, ~60 TFLOP/s fp32).
  EXPECT_GT(c.bandwidth_gb_s, 50.0);
  EXPECT_LT(c.bandwidth_gb_s, 20000.0);
  EXPECT_GT(c.gflop_s, 500.0);
  EXPECT_LT(c.gflop_s, 400000.0);
  TempDir d;
  ASSERT_EQ(synced_setenv("MNV2_CACHE_DIR", d.file("cache").c_str(), 1), 0);
  const Ceilings first = device_ceilings("cudnn", false);
  const Ceilings cached = device_ceilings("cudnn", false);
  EXPECT_FALSE(first.from_cache);
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.key, gpu_calibration_key(0));
  // The reduced modes have their own compute roof (tensor cores), cached under their own key; the copy
  // bandwidth is the same device's.
  const Ceilings tf32 = device_ceilings("cuda", false, nullptr, Precision::tf32);
  const Ceilings fp16 = device_ceilings("cuda", false, nullptr, Precision::fp16);
  EXPECT_EQ(tf32.key, gpu_calibration_key(0) + "|tf32");
  EXPECT_EQ(fp16.key, gpu_calibration_key(0) + "|fp16");
  EXPECT_NE(fp16.method.find("GemmEx"), std::string::npos) << fp16.method;
  std::printf("ceilings: fp32 %.0f, tf32 %.0f, fp16 %.0f GFLOP/s; copy %.0f GB/s\n", c.gflop_s, tf32.gflop_s,
              fp16.gflop_s, fp16.bandwidth_gb_s);
  EXPECT_GT(tf32.gflop_s, 1.5 * c.gflop_s);  // tensor cores: several times the FFMA rate on every GPU since Ampere
  EXPECT_GT(fp16.gflop_s, 2.0 * c.gflop_s);
  EXPECT_TRUE(device_ceilings("cuda", false, nullptr, Precision::fp16).from_cache);
  synced_unsetenv("MNV2_CACHE_DIR");
}

}  // namespace
}  // namespace mnv2::test
