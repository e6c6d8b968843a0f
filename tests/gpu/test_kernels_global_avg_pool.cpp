// Global average pooling (kernels/global_avg_pool.cu) against the cpu backend's, NHWC and NCHW, batch > 1,
// maps of one pixel and of many, channel counts with and without float4 alignment.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/global_avg_pool.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

TEST(KernelGlobalAvgPool, MatchesCpuInBothLayouts) {
  MNV2_SKIP_WITHOUT_GPU();
  struct Case {
    int batch, channels, h, w;
  };
  for (const Case& c :
       {Case{1, 1280, 7, 7}, Case{3, 1280, 7, 7}, Case{2, 5, 9, 11}, Case{4, 12, 1, 1}, Case{2, 64, 56, 56}}) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    SCOPED_TRACE("batch " + std::to_string(c.batch) + " channels " + std::to_string(c.channels) + " map " +
                 std::to_string(c.h) + "x" + std::to_string(c.w) + " MNV2_TEST_SEED=" + std::to_string(seed));
    const int64_t hw = static_cast<int64_t>(c.h) * c.w;
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch * c.channels * hw));
    std::vector<float> ref(static_cast<size_t>(c.batch * c.channels));
    cpu::global_average_pool(x.data(), ref.data(), c.batch * c.channels, hw, 2);
    for (k::Layout layout : {k::Layout::nchw, k::Layout::nhwc}) {
      DeviceArray dx(layout == k::Layout::nchw ? x : nchw_to_nhwc(x, c.batch, c.channels, hw)), dy(ref.size());
      dy.poison();
      k::launch_global_avg_pool(k::GlobalAvgPoolParams{c.batch, c.channels, hw, layout, dx.get(), dy.get()}, nullptr);
      const Agreement a = agreement(dy.download(), ref);
      EXPECT_TRUE(a.ok()) << (layout == k::Layout::nchw ? "nchw " : "nhwc ") << a.str();
    }
  }
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelGlobalAvgPool, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
