// Depthwise 3x3 convolution (kernels/depthwise_conv.cu) against the cpu backend's: stride 1 and 2 (and 3,
// the generic-stride code), symmetric, asymmetric and oversized pads, odd maps, batch > 1, channel counts
// with and without float4 alignment; every variant that fits each case, not only the chosen one.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/depthwise_conv.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct DepthwiseCase {
  int batch, channels, h, w, stride_h, stride_w;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool bias, clip;
};

TEST(KernelDepthwiseConv, MatchesCpuConvolutionInEveryVariant) {
  MNV2_SKIP_WITHOUT_GPU();
  const DepthwiseCase cases[] = {
      {1, 32, 112, 112, 1, 1, 1, 1, 1, 1, true, true},  // block1.dw
      {2, 96, 17, 15, 2, 2, 0, 0, 1, 1, true, true},    // stride 2 with TF-style pads [0,0,1,1], odd map
      {3, 144, 14, 14, 2, 2, 0, 0, 1, 1, true, true},   // even map
      {2, 40, 9, 11, 1, 1, 1, 0, 0, 2, true, false},    // asymmetric pads
      {1, 8, 6, 7, 2, 2, 2, 2, 2, 2, false, true},      // pads larger than the kernel needs
      {2, 5, 8, 9, 1, 1, 1, 1, 1, 1, true, true},       // odd channel count: scalar
      {2, 12, 10, 10, 1, 2, 1, 1, 1, 1, true, true},    // different strides per axis: generic code
      {1, 16, 13, 12, 3, 3, 1, 1, 1, 1, true, false},   // stride 3: generic code
      {4, 960, 7, 7, 1, 1, 1, 1, 1, 1, true, true},     // block17.dw at batch 4
      {1, 4, 1, 1, 1, 1, 1, 1, 1, 1, true, true},       // a 1x1 map: only the centre tap
  };
  for (const DepthwiseCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " channels " << c.channels << " map " << c.h << "x" << c.w << " stride "
         << c.stride_h << "x" << c.stride_w << " pads [" << c.pad_top << "," << c.pad_left << "," << c.pad_bottom << ","
         << c.pad_right << "] bias " << c.bias << " clip " << c.clip << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    cpu::ConvShape s;
    s.batch = c.batch;
    s.in_channels = s.out_channels = s.groups = c.channels;
    s.in_h = c.h;
    s.in_w = c.w;
    s.kernel_h = s.kernel_w = 3;
    s.stride_h = c.stride_h;
    s.stride_w = c.stride_w;
    s.pad_top = c.pad_top;
    s.pad_left = c.pad_left;
    s.out_h = cpu::conv_output_extent(c.h, c.pad_top, c.pad_bottom, 3, c.stride_h, 1);
    s.out_w = cpu::conv_output_extent(c.w, c.pad_left, c.pad_right, 3, c.stride_w, 1);
    ASSERT_GT(s.out_h, 0);
    ASSERT_GT(s.out_w, 0);
    const int64_t in_hw = static_cast<int64_t>(c.h) * c.w, out_hw = static_cast<int64_t>(s.out_h) * s.out_w;
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch * c.channels * in_hw));
    const std::vector<float> weight = random_vector(gen, static_cast<size_t>(c.channels * 9));
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.channels));
    std::vector<float> ref(static_cast<size_t>(c.batch * c.channels * out_hw));
    const cpu::ConvVariant cv = cpu::choose_conv_variant(s);
    std::vector<float> ws(static_cast<size_t>(std::max<int64_t>(1, cpu::conv_workspace_floats(s, cv))));
    cpu::conv2d(s, cv, x.data(), weight.data(), c.bias ? bias.data() : nullptr, ref.data(), ws.data(), 2);
    if (c.clip) cpu::clip(ref.data(), ref.data(), static_cast<int64_t>(ref.size()), 0.0f, 6.0f, 2);

    std::vector<float> w_t(weight.size());  // [3][3][C]
    for (int ch = 0; ch < c.channels; ++ch)
      for (int t = 0; t < 9; ++t)
        w_t[static_cast<size_t>(t * c.channels + ch)] = weight[static_cast<size_t>(ch * 9 + t)];
    DeviceArray dx(nchw_to_nhwc(x, c.batch, c.channels, in_hw)), dw(w_t), db(bias), dy(ref.size());
    k::DepthwiseConvParams p;
    p.batch = c.batch;
    p.channels = c.channels;
    p.in_h = c.h;
    p.in_w = c.w;
    p.out_h = s.out_h;
    p.out_w = s.out_w;
    p.stride_h = c.stride_h;
    p.stride_w = c.stride_w;
    p.pad_top = c.pad_top;
    p.pad_left = c.pad_left;
    p.input = dx.get();
    p.weight = dw.get();
    p.bias = c.bias ? db.get() : nullptr;
    p.clip = k::Clip{c.clip, 0.0f, 6.0f};
    p.output = dy.get();

    std::vector<k::DepthwiseVariant> variants{k::choose_depthwise_variant(p, 132)};
    for (int vec : {1, 4}) {
      if (vec == 4 && c.channels % 4 != 0) continue;
      variants.push_back({vec, 1, 0});
      if (c.stride_h == c.stride_w && c.stride_h == 1) {
        variants.push_back({vec, 1, 1});
        variants.push_back({vec, 4, 1});
      }
      if (c.stride_h == c.stride_w && c.stride_h == 2) {
        variants.push_back({vec, 1, 2});
        variants.push_back({vec, 2, 2});
      }
    }
    for (const k::DepthwiseVariant& v : variants) {
      dy.poison();
      k::launch_depthwise_conv3x3(p, v, nullptr);
      const Agreement a = agreement(nhwc_to_nchw(dy.download(), c.batch, c.channels, out_hw), ref);
      EXPECT_TRUE(a.ok()) << a.str() << " variant " << k::to_string(v);
    }
  }
}

TEST(KernelDepthwiseConv, RefusesAVariantThatDoesNotFit) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray buf(4096), out(4096);
  k::DepthwiseConvParams p;
  p.batch = 1;
  p.channels = 6;
  p.in_h = p.in_w = p.out_h = p.out_w = 4;
  p.pad_top = p.pad_left = 1;
  p.input = buf.get();
  p.weight = buf.get();
  p.output = out.get();
  EXPECT_THROW(k::launch_depthwise_conv3x3(p, {4, 1, 1}, nullptr), Error);  // 6 channels: no float4
  EXPECT_THROW(k::launch_depthwise_conv3x3(p, {1, 2, 2}, nullptr), Error);  // stride 1 params, stride-2 code
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelDepthwiseConv, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
