// Expansion 1x1 + depthwise 3x3 in one kernel (kernels/expand_depthwise.cu) against the cpu backend's two
// convolutions and clips: stride 1 and 2, symmetric, asymmetric and oversized pads, odd maps, batch > 1,
// expanded channel counts that are not multiples of the block's slice, with and without biases and clips;
// the chosen tile and smaller forced ones (more halo recomputation, partial tiles at the edges).
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include "backends/cpu/cpu_ops.h"
#include "kernels/expand_depthwise.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct ExpandDwCase {
  int batch, in_channels, expanded, h, w, stride;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool bias, clip;
};

// The cpu reference: conv 1x1 + bias, clip, depthwise 3x3 + bias, clip (NCHW).
std::vector<float> reference(const ExpandDwCase& c, const std::vector<float>& x, const std::vector<float>& we,
                             const std::vector<float>& eb, const std::vector<float>& dw, const std::vector<float>& db,
                             int out_h, int out_w) {
  cpu::ConvShape e;
  e.batch = c.batch;
  e.in_channels = c.in_channels;
  e.out_channels = c.expanded;
  e.groups = 1;
  e.in_h = e.out_h = c.h;
  e.in_w = e.out_w = c.w;
  e.kernel_h = e.kernel_w = 1;
  std::vector<float> mid(static_cast<size_t>(c.batch) * c.expanded * c.h * c.w);
  const cpu::ConvVariant ev = cpu::choose_conv_variant(e);
  std::vector<float> ws(static_cast<size_t>(std::max<int64_t>(1, cpu::conv_workspace_floats(e, ev))));
  cpu::conv2d(e, ev, x.data(), we.data(), c.bias ? eb.data() : nullptr, mid.data(), ws.data(), 2);
  if (c.clip) cpu::clip(mid.data(), mid.data(), static_cast<int64_t>(mid.size()), 0.0f, 6.0f, 2);

  cpu::ConvShape d;
  d.batch = c.batch;
  d.in_channels = d.out_channels = d.groups = c.expanded;
  d.in_h = c.h;
  d.in_w = c.w;
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = c.stride;
  d.pad_top = c.pad_top;
  d.pad_left = c.pad_left;
  d.out_h = out_h;
  d.out_w = out_w;
  std::vector<float> out(static_cast<size_t>(c.batch) * c.expanded * out_h * out_w);
  const cpu::ConvVariant dv = cpu::choose_conv_variant(d);
  ws.assign(static_cast<size_t>(std::max<int64_t>(1, cpu::conv_workspace_floats(d, dv))), 0.0f);
  cpu::conv2d(d, dv, mid.data(), dw.data(), c.bias ? db.data() : nullptr, out.data(), ws.data(), 2);
  if (c.clip) cpu::clip(out.data(), out.data(), static_cast<int64_t>(out.size()), 0.0f, 6.0f, 2);
  return out;
}

TEST(KernelFusedExpandDepthwise, MatchesCpuExpansionThenDepthwise) {
  MNV2_SKIP_WITHOUT_GPU();
  const ExpandDwCase cases[] = {
      {1, 16, 96, 112, 112, 2, 0, 0, 1, 1, true, true},  // block1 (TF pads [0,0,1,1])
      {2, 24, 144, 56, 56, 1, 1, 1, 1, 1, true, true},   // block2 at batch 2
      {3, 32, 192, 28, 28, 2, 1, 1, 1, 1, true, true},   // block6-like, symmetric stride-2 pads
      {1, 160, 960, 7, 7, 1, 1, 1, 1, 1, true, true},    // block15: the whole map in one tile
      {2, 96, 576, 14, 14, 2, 0, 0, 1, 1, true, true},   // block13, stride 2 at batch 2
      {2, 7, 36, 17, 15, 2, 0, 0, 1, 1, true, true},     // odd map, odd k, 36 channels (not a slice multiple)
      {1, 5, 20, 9, 11, 1, 1, 0, 0, 2, false, true},     // asymmetric pads, no bias
      {2, 12, 8, 6, 7, 2, 2, 2, 2, 2, true, false},      // pads larger than needed, no clip, 8 channels
      {3, 3, 4, 1, 1, 1, 1, 1, 1, 1, true, true},        // a 1x1 map: only the centre tap
      {1, 33, 48, 10, 10, 1, 1, 1, 1, 1, true, true},    // odd k (the window's row stride stays odd)
  };
  for (const ExpandDwCase& c : cases) {
    const uint64_t seed = kernel_test_seed();
    std::mt19937_64 gen(seed);
    std::ostringstream what;
    what << "batch " << c.batch << " k " << c.in_channels << " expanded " << c.expanded << " map " << c.h << "x" << c.w
         << " stride " << c.stride << " pads [" << c.pad_top << "," << c.pad_left << "," << c.pad_bottom << ","
         << c.pad_right << "] bias " << c.bias << " clip " << c.clip << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    const int out_h = cpu::conv_output_extent(c.h, c.pad_top, c.pad_bottom, 3, c.stride, 1);
    const int out_w = cpu::conv_output_extent(c.w, c.pad_left, c.pad_right, 3, c.stride, 1);
    ASSERT_GT(out_h, 0);
    ASSERT_GT(out_w, 0);
    const int64_t in_hw = static_cast<int64_t>(c.h) * c.w, out_hw = static_cast<int64_t>(out_h) * out_w;
    const auto x = random_vector(gen, static_cast<size_t>(c.batch * c.in_channels * in_hw));
    // Expansion weights scaled so that the clip at 6 cuts some values but not most.
    const auto we = random_vector(gen, static_cast<size_t>(c.expanded * c.in_channels), -0.5f, 0.5f);
    const auto eb = random_vector(gen, static_cast<size_t>(c.expanded));
    const auto dw = random_vector(gen, static_cast<size_t>(c.expanded * 9));
    const auto db = random_vector(gen, static_cast<size_t>(c.expanded));
    const std::vector<float> ref = reference(c, x, we, eb, dw, db, out_h, out_w);

    std::vector<float> we_t(we.size());  // [k][expanded]
    for (int e = 0; e < c.expanded; ++e)
      for (int i = 0; i < c.in_channels; ++i)
        we_t[static_cast<size_t>(i) * c.expanded + e] = we[static_cast<size_t>(e) * c.in_channels + i];
    std::vector<float> dw_t(dw.size());  // [3][3][expanded]
    for (int e = 0; e < c.expanded; ++e)
      for (int t = 0; t < 9; ++t) dw_t[static_cast<size_t>(t) * c.expanded + e] = dw[static_cast<size_t>(e) * 9 + t];
    DeviceArray dx(nchw_to_nhwc(x, c.batch, c.in_channels, in_hw)), dwe(we_t), deb(eb), ddw(dw_t), ddb(db),
        dy(ref.size());
    k::ExpandDepthwiseParams p;
    p.batch = c.batch;
    p.in_channels = c.in_channels;
    p.expanded = c.expanded;
    p.in_h = c.h;
    p.in_w = c.w;
    p.out_h = out_h;
    p.out_w = out_w;
    p.stride_h = p.stride_w = c.stride;
    p.pad_top = c.pad_top;
    p.pad_left = c.pad_left;
    p.input = dx.get();
    p.expand_weight = dwe.get();
    p.expand_bias = c.bias ? deb.get() : nullptr;
    p.expand_clip = k::Clip{c.clip, 0.0f, 6.0f};
    p.dw_weight = ddw.get();
    p.dw_bias = c.bias ? ddb.get() : nullptr;
    p.dw_clip = k::Clip{c.clip, 0.0f, 6.0f};
    p.output = dy.get();

    std::string why;
    std::vector<k::ExpandDepthwiseVariant> variants{k::choose_expand_depthwise_variant(p, &why)};
    ASSERT_EQ(why, "");
    for (int t : {1, 3, 4})
      if (k::expand_depthwise_smem_bytes(p, {t, t}) <= k::kExpandDwMaxSmem) variants.push_back({t, t});
    for (const k::ExpandDepthwiseVariant& v : variants) {
      dy.poison();
      k::launch_expand_depthwise(p, v, nullptr);
      const Agreement a = agreement(nhwc_to_nchw(dy.download(), c.batch, c.expanded, out_hw), ref);
      EXPECT_TRUE(a.ok()) << a.str() << " variant " << k::to_string(v);
      EXPECT_GE(k::expand_depthwise_recompute_factor(p, v), 1.0 - 1e-12) << k::to_string(v);
    }
  }
}

TEST(KernelFusedExpandDepthwise, RefusesWhatItCannotRun) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray buf(4096), out(4096);
  k::ExpandDepthwiseParams p;
  p.batch = 1;
  p.in_channels = 4;
  p.expanded = 6;  // not a multiple of 4
  p.in_h = p.in_w = p.out_h = p.out_w = 4;
  p.pad_top = p.pad_left = 1;
  p.input = buf.get();
  p.expand_weight = buf.get();
  p.dw_weight = buf.get();
  p.output = out.get();
  std::string why;
  k::choose_expand_depthwise_variant(p, &why);
  EXPECT_NE(why, "");
  EXPECT_THROW(k::launch_expand_depthwise(p, {4, 4}, nullptr), Error);
  p.expanded = 8;
  p.output = buf.get();  // the input as output
  EXPECT_THROW(k::launch_expand_depthwise(p, {4, 4}, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelFusedExpandDepthwise, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
