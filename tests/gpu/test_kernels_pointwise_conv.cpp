// Pointwise convolution (kernels/pointwise_conv.cu: the GEMM on NHWC maps) against the cpu backend's
// convolution: odd maps, batch > 1, channel counts with and without float4 alignment, every epilogue.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/pointwise_conv.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct PointwiseCase {
  int batch, in_c, out_c, h, w;
  bool bias, clip, residual;
};

TEST(KernelPointwiseConv, MatchesCpuConvolution) {
  MNV2_SKIP_WITHOUT_GPU();
  const PointwiseCase cases[] = {
      {1, 32, 16, 112, 112, true, false, false},                                           // block1.project
      {2, 16, 96, 13, 11, true, true, false},                                              // expand + ReLU6, odd map
      {3, 24, 144, 7, 9, true, true, false},     {2, 144, 24, 9, 7, true, false, true},    // projection + residual
      {1, 960, 160, 7, 7, true, false, true},    {1, 320, 1280, 7, 7, true, true, false},  // head conv
      {3, 5, 7, 5, 3, false, true, true},  // odd channels: scalar accesses
      {4, 6, 10, 1, 1, true, false, false},
  };
  for (const PointwiseCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " in " << c.in_c << " out " << c.out_c << " map " << c.h << "x" << c.w << " bias "
         << c.bias << " clip " << c.clip << " residual " << c.residual << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    const int64_t hw = static_cast<int64_t>(c.h) * c.w;
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch * c.in_c * hw));
    const std::vector<float> weight = random_vector(gen, static_cast<size_t>(c.out_c * c.in_c));
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.out_c));
    const std::vector<float> res = random_vector(gen, static_cast<size_t>(c.batch * c.out_c * hw));

    cpu::ConvShape s;
    s.batch = c.batch;
    s.in_channels = c.in_c;
    s.out_channels = c.out_c;
    s.in_h = s.out_h = c.h;
    s.in_w = s.out_w = c.w;
    std::vector<float> ref(static_cast<size_t>(c.batch * c.out_c * hw));
    std::vector<float> ws(
        static_cast<size_t>(std::max<int64_t>(1, cpu::conv_workspace_floats(s, cpu::choose_conv_variant(s)))));
    cpu::conv2d(s, cpu::choose_conv_variant(s), x.data(), weight.data(), c.bias ? bias.data() : nullptr, ref.data(),
                ws.data(), 2);
    if (c.clip) cpu::clip(ref.data(), ref.data(), static_cast<int64_t>(ref.size()), 0.0f, 6.0f, 2);
    if (c.residual) cpu::add(ref.data(), res.data(), ref.data(), static_cast<int64_t>(ref.size()), 2);

    std::vector<float> w_t(weight.size());  // [in, out]
    for (int o = 0; o < c.out_c; ++o)
      for (int i = 0; i < c.in_c; ++i)
        w_t[static_cast<size_t>(i * c.out_c + o)] = weight[static_cast<size_t>(o * c.in_c + i)];
    DeviceArray dx(nchw_to_nhwc(x, c.batch, c.in_c, hw)), dw(w_t), db(bias),
        dres(nchw_to_nhwc(res, c.batch, c.out_c, hw)), dy(ref.size());
    k::PointwiseConvParams p;
    p.pixels = c.batch * hw;
    p.in_channels = c.in_c;
    p.out_channels = c.out_c;
    p.input = dx.get();
    p.weight = dw.get();
    p.bias = c.bias ? db.get() : nullptr;
    p.clip = k::Clip{c.clip, 0.0f, 6.0f};
    p.residual = c.residual ? dres.get() : nullptr;
    p.output = dy.get();
    const k::GemmVariant v = k::choose_pointwise_variant(p, 132);
    dy.poison();
    k::launch_pointwise_conv(p, v, nullptr);
    const Agreement a = agreement(nhwc_to_nchw(dy.download(), c.batch, c.out_c, hw), ref);
    EXPECT_TRUE(a.ok()) << a.str() << " variant " << k::to_string(v);
  }
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelPointwiseConv, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
