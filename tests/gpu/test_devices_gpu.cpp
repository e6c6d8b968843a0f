// Devices named, not assumed: every visible GPU is found by NVML at its own PCI bus id (NVML's card there has
// CUDA's UUID), a run on device N records device N's card and settings, and an ordinal this machine does not
// show is refused naming the GPUs there are. On a one-GPU machine the loops cover device 0; on the two-GPU kind
// they cover device 1 as well.
#include <gtest/gtest.h>

#include <string>

#include "mnv2/bench.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/profiler.h"
#include "test_support.h"
#include "util/nvml.h"

namespace mnv2::test {
namespace {

class Devices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_environment().devices.empty()) GTEST_SKIP() << "no CUDA device: " << cuda_environment().why_none;
  }
};

TEST_F(Devices, NvmlFindsEachGpuByItsPciBusIdWithCudasUuid) {
  for (const GpuDevice& d : cuda_environment().devices) {
    SCOPED_TRACE("device " + std::to_string(d.index) + " " + d.name);
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_EQ(d.uuid.size(), 40u) << d.uuid;
    EXPECT_FALSE(d.pci_bus_id.empty());
    const NvmlCard card = nvml_card(d.pci_bus_id);
    if (!card.found) GTEST_SKIP() << "NVML: " << card.problem;
    EXPECT_EQ(card.uuid, d.uuid);
    const GpuRecord r = record_gpu(d.index);
    EXPECT_TRUE(r.nvml_problem.empty()) << r.nvml_problem;
    EXPECT_EQ(r.index, d.index);
    EXPECT_EQ(r.uuid, d.uuid);
    EXPECT_EQ(r.name, d.name);
    EXPECT_GT(r.power_limit_w, 0);
    EXPECT_GT(r.sm_clock_max_mhz, 0);
    EXPECT_GT(r.memory_clock_mhz, 0);
    EXPECT_GT(current_sm_clock_mhz(d.index), 0);
    std::printf("device %d: %s %s at %s, power limit %.0f W, SM clock max %d MHz (applications %d), memory %d MHz\n",
                d.index, d.name.c_str(), d.uuid.c_str(), d.pci_bus_id.c_str(), r.power_limit_w, r.sm_clock_max_mhz,
                r.sm_clock_applications_mhz, r.memory_clock_mhz);
  }
}

TEST_F(Devices, ARunOnEachDeviceRecordsThatDevicesCard) {
  const Model model = builtin_mobilenet_v2();
  for (const GpuDevice& d : cuda_environment().devices) {
    for (const char* backend : {"cuda", "cudnn"}) {
      SCOPED_TRACE(std::string(backend) + " on device " + std::to_string(d.index));
      ProfileConfig c;
      c.backend = backend;
      c.height = c.width = 64;
      c.warmup = 1;
      c.iters = 2;
      c.device = d.index;
      const RunReport r = profile(model, c);
      EXPECT_EQ(r.config.device, d.index);
      EXPECT_EQ(r.gpu.index, d.index);
      EXPECT_EQ(r.gpu.uuid, d.uuid);
      EXPECT_EQ(r.device, d.name);
      EXPECT_EQ(r.options.value("device"), std::to_string(d.index));
      BenchConfig b;
      b.backend = backend;
      b.height = b.width = 64;
      b.warmup = 1;
      b.iters = 2;
      b.device = d.index;
      const BenchResult br = run_bench(model, b);
      EXPECT_EQ(br.gpu.uuid, d.uuid);
    }
  }
}

TEST_F(Devices, AnOrdinalThisMachineDoesNotShowIsRefusedNamingTheGpus) {
  const int missing = static_cast<int>(cuda_environment().devices.size());
  ProfileConfig c;
  c.backend = "cuda";
  c.device = missing;
  c.height = c.width = 32;
  try {
    profile(builtin_mobilenet_v2(), c);
    ADD_FAILURE() << "device " << missing << " must be refused";
  } catch (const UsageError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("--device " + std::to_string(missing)), std::string::npos) << text;
    EXPECT_NE(text.find(cuda_environment().devices.front().name), std::string::npos) << text;
  }
  EXPECT_THROW(gpu_device(-1), UsageError);
}

}  // namespace
}  // namespace mnv2::test
