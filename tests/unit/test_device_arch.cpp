// What a build's CUDA architecture list means for a GPU and a driver (engine/util/device.cpp), and the
// GPU plugin's loader: pure functions, no GPU needed.
#include <gtest/gtest.h>

#include <string>

#include "gpu/plugin_api.h"
#include "mnv2/device.h"
#include "test_support.h"

namespace mnv2 {
using namespace mnv2::test;
namespace {

std::vector<std::string> names(const std::vector<CudaArch>& archs) {
  std::vector<std::string> out;
  for (const CudaArch& a : archs) out.push_back(a.to_string());
  return out;
}

TEST(DeviceArch, ParsesCMakeArchitectureLists) {
  EXPECT_EQ(names(parse_cuda_architectures("75-real;80-real;86-real;89-real;90-real;100-real;120")),
            (std::vector<std::string>{"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120"}));
  EXPECT_EQ(names(parse_cuda_architectures("75-virtual")), (std::vector<std::string>{"compute_75"}));
  EXPECT_EQ(names(parse_cuda_architectures("75-real,90-real,120-virtual")),
            (std::vector<std::string>{"sm_75", "sm_90", "compute_120"}));
  EXPECT_EQ(names(parse_cuda_architectures("90a-real;90")),
            (std::vector<std::string>{"sm_90a", "sm_90", "compute_90"}));
  // Unreadable entries are skipped, duplicates kept once.
  EXPECT_EQ(names(parse_cuda_architectures("all;native;x;86-real;86-real")), (std::vector<std::string>{"sm_86"}));
  EXPECT_EQ(describe_architectures(parse_cuda_architectures("75-real;90-real;120")),
            "sm_75 sm_90 sm_120, PTX compute_120");
  EXPECT_EQ(describe_architectures(parse_cuda_architectures("75-virtual")), "PTX compute_75");
}

TEST(DeviceArch, TheDriverPicksMachineCodeOfTheSameMajorElsePtx) {
  const auto def = parse_cuda_architectures("75-real;80-real;86-real;89-real;90-real;100-real;120");
  struct Case {
    int major, minor;
    const char* code;
  } cases[] = {
      {7, 5, "sm_75 machine code"},
      {8, 0, "sm_80 machine code"},
      {8, 6, "sm_86 machine code"},
      {8, 7, "sm_86 machine code"},  // Orin: same major, lower minor
      {8, 9, "sm_89 machine code"},
      {9, 0, "sm_90 machine code"},
      {10, 0, "sm_100 machine code"},
      {10, 3, "sm_100 machine code"},  // B300
      {12, 0, "sm_120 machine code"},
      {12, 1, "sm_120 machine code"},
      {11, 0, "compute_120 PTX, JIT-compiled by the driver"} /* no: 11.0 < 12.0 */,
  };
  for (const Case& c : cases) {
    const DeviceCode dc = code_for_device(def, c.major, c.minor);
    if (c.major == 11) {
      // Thor (11.0) has no machine code here and the only PTX is newer than it.
      EXPECT_FALSE(dc.runs) << dc.code;
      EXPECT_NE(dc.why_not.find("11.0"), std::string::npos) << dc.why_not;
      continue;
    }
    EXPECT_TRUE(dc.runs) << c.major << "." << c.minor << ": " << dc.why_not;
    EXPECT_EQ(dc.code, c.code) << c.major << "." << c.minor;
  }
  // A future GPU JIT-compiles the newest PTX.
  const DeviceCode future = code_for_device(def, 13, 0);
  EXPECT_TRUE(future.runs);
  EXPECT_EQ(future.code, "compute_120 PTX, JIT-compiled by the driver");
}

TEST(DeviceArch, PtxOnlyBuildsRunEverywhereAtOrAboveTheirArchitecture) {
  const auto ptx75 = parse_cuda_architectures("75-virtual");
  const DeviceCode h200 = code_for_device(ptx75, 9, 0);
  EXPECT_TRUE(h200.runs);
  EXPECT_EQ(h200.arch.to_string(), "compute_75");
  EXPECT_EQ(h200.code, "compute_75 PTX, JIT-compiled by the driver");
}

TEST(DeviceArch, GpusNoCodeRunsOnAreExplainedInOneLine) {
  const auto def = parse_cuda_architectures("75-real;80-real;86-real;89-real;90-real;100-real;120");
  const DeviceCode volta = code_for_device(def, 7, 0);
  EXPECT_FALSE(volta.runs);
  EXPECT_NE(volta.why_not.find("older than CUDA 13 supports"), std::string::npos) << volta.why_not;
  EXPECT_EQ(volta.why_not.find('\n'), std::string::npos);
  // Machine code only for Hopper: an Ampere GPU cannot run it; the message says what to rebuild with.
  const DeviceCode a100 = code_for_device(parse_cuda_architectures("90-real"), 8, 0);
  EXPECT_FALSE(a100.runs);
  EXPECT_NE(a100.why_not.find("sm_90"), std::string::npos) << a100.why_not;
  EXPECT_NE(a100.why_not.find("-DCMAKE_CUDA_ARCHITECTURES"), std::string::npos) << a100.why_not;
  // sm_90a runs on 9.0 only, not on a later minor or major.
  EXPECT_TRUE(code_for_device(parse_cuda_architectures("90a-real"), 9, 0).runs);
  EXPECT_FALSE(code_for_device(parse_cuda_architectures("90a-real"), 10, 0).runs);
  EXPECT_FALSE(code_for_device({}, 9, 0).runs);
}

TEST(DeviceArch, ADriverOlderThanTheRuntimesMajorVersionIsNamed) {
  EXPECT_EQ(driver_problem(13000, 13000), "");
  EXPECT_EQ(driver_problem(13020, 13000), "");
  EXPECT_EQ(driver_problem(13000, 13010), "");  // minor-version compatibility
  const std::string old = driver_problem(12040, 13000);
  EXPECT_NE(old.find("CUDA up to 12.4"), std::string::npos) << old;
  EXPECT_NE(old.find("580 or newer"), std::string::npos) << old;
  EXPECT_EQ(old.find('\n'), std::string::npos);
  EXPECT_EQ(driver_problem(0, 13000), "");  // no driver at all is said elsewhere
}

TEST(DeviceArch, BuildCarriesPreHopperCodeByDefault) {
  const auto& archs = built_cuda_architectures();
  if (!gpu_plugin_info().built) GTEST_SKIP() << "this build has no CUDA (MNV2_WITH_CUDA=OFF)";
  ASSERT_FALSE(archs.empty());
  // Whatever list this build was configured with, the status line lists it (mnv2 info, the app's status bar).
  EXPECT_EQ(cuda_environment().architectures, describe_architectures(archs));
}

TEST(GpuPluginLoader, ReadsTheLibrariesAnElfObjectNeeds) {
  const GpuPluginInfo info = gpu_plugin_info();
  if (!info.built) GTEST_SKIP() << "this build has no GPU plugin";
  const auto needed = gpu_plugin::elf_needed_libraries(info.path);
  auto has_prefix = [&needed](const std::string& prefix) {
    for (const auto& n : needed)
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(has_prefix("libcudart.so")) << info.path;
  EXPECT_TRUE(has_prefix("libcudnn.so")) << info.path;
  EXPECT_TRUE(has_prefix("libcupti.so")) << info.path;
  EXPECT_TRUE(has_prefix("libmnv2_engine.so")) << info.path;
  // Not an ELF object, a missing file, a truncated header: nothing, no crash.
  TempDir dir;
  write_file(dir.file("text.so"), "not an ELF file");
  write_file(dir.file("short.so"), std::string("\x7f"
                                               "ELF\x02\x01",
                                               6));
  EXPECT_TRUE(gpu_plugin::elf_needed_libraries(dir.file("text.so")).empty());
  EXPECT_TRUE(gpu_plugin::elf_needed_libraries(dir.file("short.so")).empty());
  EXPECT_TRUE(gpu_plugin::elf_needed_libraries(dir.file("missing.so")).empty());
}

}  // namespace
}  // namespace mnv2
