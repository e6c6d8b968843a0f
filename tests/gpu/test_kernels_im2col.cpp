// im2col (kernels/im2col.cu) against a host unfolding: strides, dilation, asymmetric and oversized pads,
// several images per launch. The columns are exact copies, so they must match bit for bit.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/im2col.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

TEST(KernelIm2col, MatchesHostUnfolding) {
  MNV2_SKIP_WITHOUT_GPU();
  struct Case {
    int images, channels, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  };
  const Case cases[] = {
      {1, 3, 224, 224, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},  // the stem
      {3, 5, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},     {2, 4, 11, 10, 3, 2, 2, 1, 1, 0, 0, 2, 1, 1},
      {2, 2, 13, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},  // dilation 2
      {1, 6, 5, 5, 5, 5, 1, 1, 3, 3, 3, 3, 1, 1},   // pads larger than half the kernel
  };
  for (const Case& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    SCOPED_TRACE("images " + std::to_string(c.images) + " channels " + std::to_string(c.channels) + " map " +
                 std::to_string(c.h) + "x" + std::to_string(c.w) + " kernel " + std::to_string(c.kh) + "x" +
                 std::to_string(c.kw) + " MNV2_TEST_SEED=" + std::to_string(seed));
    const int oh = cpu::conv_output_extent(c.h, c.pt, c.pb, c.kh, c.sh, c.dh);
    const int ow = cpu::conv_output_extent(c.w, c.pl, c.pr, c.kw, c.sw, c.dw);
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.images * c.channels * c.h * c.w));
    const int64_t rows = static_cast<int64_t>(c.channels) * c.kh * c.kw, pixels = static_cast<int64_t>(oh) * ow;
    std::vector<float> ref(static_cast<size_t>(c.images * rows * pixels));
    for (int n = 0; n < c.images; ++n)
      for (int ch = 0; ch < c.channels; ++ch)
        for (int a = 0; a < c.kh; ++a)
          for (int b = 0; b < c.kw; ++b)
            for (int y = 0; y < oh; ++y)
              for (int z = 0; z < ow; ++z) {
                const int ih = y * c.sh - c.pt + a * c.dh, iw = z * c.sw - c.pl + b * c.dw;
                const int64_t row = (static_cast<int64_t>(ch) * c.kh + a) * c.kw + b;
                ref[static_cast<size_t>((n * rows + row) * pixels + y * ow + z)] =
                    (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                        ? x[static_cast<size_t>(((n * c.channels + ch) * c.h + ih) * c.w + iw)]
                        : 0.0f;
              }
    DeviceArray dx(x), dcol(ref.size());
    dcol.poison();
    k::Im2colParams p;
    p.images = c.images;
    p.channels = c.channels;
    p.in_h = c.h;
    p.in_w = c.w;
    p.out_h = oh;
    p.out_w = ow;
    p.kernel_h = c.kh;
    p.kernel_w = c.kw;
    p.stride_h = c.sh;
    p.stride_w = c.sw;
    p.pad_top = c.pt;
    p.pad_left = c.pl;
    p.dilation_h = c.dh;
    p.dilation_w = c.dw;
    p.input = dx.get();
    p.columns = dcol.get();
    k::launch_im2col(p, nullptr);
    const std::vector<float> got = dcol.download();
    ASSERT_EQ(got.size(), ref.size());
    int64_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) mismatches += !(got[i] == ref[i]);
    EXPECT_EQ(mismatches, 0);
  }
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelIm2col, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
