// Direct convolution (kernels/direct_conv.cu) against the cpu backend's: the stem (3 channels, NCHW input,
// 3x3 stride 2, pads [0,0,1,1]) and the general fallback: groups, dilation, non-square kernels, strides,
// asymmetric pads, odd channel counts, batch > 1, both input layouts, every channels-per-thread variant.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/direct_conv.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct DirectCase {
  int batch, in_c, out_c, h, w, kh, kw, sh, sw;
  int pad_top, pad_left, pad_bottom, pad_right;
  int dh, dw, groups;
  bool bias, clip;
};

TEST(KernelDirectConv, MatchesCpuConvolutionInBothLayoutsAndEveryVariant) {
  MNV2_SKIP_WITHOUT_GPU();
  const DirectCase cases[] = {
      {1, 3, 32, 224, 224, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, true, true},   // the stem
      {3, 3, 32, 17, 23, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1, true, true},     // stem, odd map, batch 3
      {2, 6, 4, 11, 10, 3, 3, 2, 2, 1, 0, 0, 2, 1, 1, 2, true, false},     // groups 2, asymmetric pads
      {2, 5, 7, 8, 9, 2, 3, 2, 1, 2, 1, 0, 1, 1, 1, 1, true, true},        // non-square kernel, mixed strides
      {1, 16, 16, 12, 12, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 16, true, false},  // 5x5 depthwise
      {2, 8, 16, 13, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, false, true},     // dilation 2
      {2, 12, 24, 9, 9, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, true, false},     // 1x1 stride 2
      {1, 16, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, true, true},      // groups 4, 8 outputs per group
      {2, 6, 16, 9, 10, 3, 3, 1, 2, 1, 0, 1, 2, 2, 1, 2, true, false},     // 3 channels per group, dilated
  };
  for (const DirectCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " in " << c.in_c << " out " << c.out_c << " map " << c.h << "x" << c.w << " kernel "
         << c.kh << "x" << c.kw << " stride " << c.sh << "x" << c.sw << " pads [" << c.pad_top << "," << c.pad_left
         << "," << c.pad_bottom << "," << c.pad_right << "] dilation " << c.dh << "x" << c.dw << " groups " << c.groups
         << " bias " << c.bias << " clip " << c.clip << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    cpu::ConvShape s;
    s.batch = c.batch;
    s.in_channels = c.in_c;
    s.out_channels = c.out_c;
    s.in_h = c.h;
    s.in_w = c.w;
    s.kernel_h = c.kh;
    s.kernel_w = c.kw;
    s.stride_h = c.sh;
    s.stride_w = c.sw;
    s.pad_top = c.pad_top;
    s.pad_left = c.pad_left;
    s.dilation_h = c.dh;
    s.dilation_w = c.dw;
    s.groups = c.groups;
    s.out_h = cpu::conv_output_extent(c.h, c.pad_top, c.pad_bottom, c.kh, c.sh, c.dh);
    s.out_w = cpu::conv_output_extent(c.w, c.pad_left, c.pad_right, c.kw, c.sw, c.dw);
    ASSERT_GT(s.out_h, 0);
    ASSERT_GT(s.out_w, 0);
    const int cin_g = c.in_c / c.groups;
    const int64_t in_hw = static_cast<int64_t>(c.h) * c.w, out_hw = static_cast<int64_t>(s.out_h) * s.out_w;
    const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch * c.in_c * in_hw));
    const std::vector<float> weight = random_vector(gen, static_cast<size_t>(c.out_c * cin_g * c.kh * c.kw));
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.out_c));
    std::vector<float> ref(static_cast<size_t>(c.batch * c.out_c * out_hw));
    const cpu::ConvVariant cv = cpu::choose_conv_variant(s);
    std::vector<float> ws(static_cast<size_t>(std::max<int64_t>(1, cpu::conv_workspace_floats(s, cv))));
    cpu::conv2d(s, cv, x.data(), weight.data(), c.bias ? bias.data() : nullptr, ref.data(), ws.data(), 2);
    if (c.clip) cpu::clip(ref.data(), ref.data(), static_cast<int64_t>(ref.size()), 0.0f, 6.0f, 2);

    std::vector<float> w_t(weight.size());  // [kh][kw][cin_g][out]
    for (int o = 0; o < c.out_c; ++o)
      for (int ci = 0; ci < cin_g; ++ci)
        for (int a = 0; a < c.kh; ++a)
          for (int b = 0; b < c.kw; ++b)
            w_t[static_cast<size_t>(((a * c.kw + b) * cin_g + ci) * c.out_c + o)] =
                weight[static_cast<size_t>(((o * cin_g + ci) * c.kh + a) * c.kw + b)];
    DeviceArray dw(w_t), db(bias), dy(ref.size());
    for (k::Layout layout : {k::Layout::nchw, k::Layout::nhwc}) {
      DeviceArray dx(layout == k::Layout::nchw ? x : nchw_to_nhwc(x, c.batch, c.in_c, in_hw));
      k::DirectConvParams p;
      p.batch = c.batch;
      p.in_channels = c.in_c;
      p.in_h = c.h;
      p.in_w = c.w;
      p.out_channels = c.out_c;
      p.out_h = s.out_h;
      p.out_w = s.out_w;
      p.kernel_h = c.kh;
      p.kernel_w = c.kw;
      p.stride_h = c.sh;
      p.stride_w = c.sw;
      p.pad_top = c.pad_top;
      p.pad_left = c.pad_left;
      p.dilation_h = c.dh;
      p.dilation_w = c.dw;
      p.groups = c.groups;
      p.input_layout = layout;
      p.input = dx.get();
      p.weight = dw.get();
      p.bias = c.bias ? db.get() : nullptr;
      p.clip = k::Clip{c.clip, 0.0f, 6.0f};
      p.output = dy.get();
      std::vector<k::DirectConvVariant> variants{k::choose_direct_conv_variant(p, 132), {1, false}};
      const int cout_g = c.out_c / c.groups;
      const bool taps27 = c.kh == 3 && c.kw == 3 && c.in_c / c.groups == 3;
      for (int co : {4, 8, 16, 32})
        if (c.out_c % 4 == 0 && cout_g % co == 0) variants.push_back({co, false});
      if (taps27) {  // the unrolled stem kernel, with every channels-per-thread count that fits
        variants.push_back({1, true});
        for (int co : {4, 8, 16, 32})
          if (c.out_c % 4 == 0 && cout_g % co == 0) variants.push_back({co, true});
      }
      for (const k::DirectConvVariant& v : variants) {
        dy.poison();
        k::launch_direct_conv(p, v, nullptr);
        const Agreement a = agreement(nhwc_to_nchw(dy.download(), c.batch, c.out_c, out_hw), ref);
        EXPECT_TRUE(a.ok()) << a.str() << " variant " << k::to_string(v, layout);
      }
    }
  }
}

TEST(KernelDirectConv, RefusesVariantsThatDoNotFit) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray buf(4096), out(4096);
  k::DirectConvParams p;
  p.batch = 1;
  p.in_channels = 4;
  p.out_channels = 6;  // not a multiple of 4
  p.in_h = p.in_w = p.out_h = p.out_w = 4;
  p.input = buf.get();
  p.weight = buf.get();
  p.output = out.get();
  EXPECT_EQ(k::choose_direct_conv_variant(p, 132).co, 1);
  EXPECT_THROW(k::launch_direct_conv(p, {4, false}, nullptr), Error);
  EXPECT_THROW(k::launch_direct_conv(p, {1, true}, nullptr), Error);  // 1x1 kernel: not the 3x3x3 code
  p.groups = 3;                                                       // does not divide 4 input channels
  EXPECT_THROW(k::launch_direct_conv(p, {1, false}, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelDirectConv, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
