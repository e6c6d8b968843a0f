// The NCHW <-> NHWC transpose (kernels/layout.cu) against host transposes: sizes on and off the 32-wide
// tiles, one channel, one pixel, batch > 1. A copy, so bit for bit.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "kernels/layout.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

TEST(KernelLayout, TransposesBothWaysExactly) {
  MNV2_SKIP_WITHOUT_GPU();
  struct Case {
    int n, c, h, w;
  };
  for (const Case& s : {Case{1, 3, 224, 224}, Case{3, 32, 112, 112}, Case{2, 5, 7, 9}, Case{4, 1, 6, 5},
                        Case{2, 1280, 1, 1}, Case{1, 33, 31, 1}}) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    SCOPED_TRACE(std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" +
                 std::to_string(s.w) + " MNV2_TEST_SEED=" + std::to_string(seed));
    const int64_t hw = static_cast<int64_t>(s.h) * s.w;
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(s.n * s.c * hw));
    DeviceArray dx(x), dy(x.size()), dz(x.size());
    dy.poison();
    k::launch_transpose(k::TransposeParams{s.n, s.c, hw, dx.get(), dy.get()}, nullptr);  // NCHW -> NHWC
    const std::vector<float> nhwc = dy.download();
    EXPECT_EQ(nhwc, nchw_to_nhwc(x, s.n, s.c, hw));
    dz.poison();
    k::launch_transpose(k::TransposeParams{s.n, hw, s.c, dy.get(), dz.get()}, nullptr);  // and back
    EXPECT_EQ(dz.download(), x);
  }
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelLayout, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
