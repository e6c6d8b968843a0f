// The whole inverted-residual block in one kernel over float32 activations against a float64 reference on fresh
// random data: the FFMA kernel (kernels/fused_block_ffma.cu) and the TF32 one (kernels/fused_block_tf32.cu). The real
// MobileNetV2 block shapes at batch 1 and 3, odd maps (13x13, 9x11, 5x7, 3x3, 1x1), channel counts that are multiples
// of 4 but not of 8 (FFMA; TF32 takes multiples of 8), expanded counts that are not multiples of the 32-channel chunk,
// stride 1 and 2, symmetric and TF-style pads, with and without residual and clips; the variant the chooser picks and
// forced ones: every built FFMA projection micro-tile, every TF32 item count, on tiles with partial edges, a 1x1 tile,
// whole maps and tiles whose depthwise items take a thread several passes.
//
// Tolerance, derived (u = 2^-24; TF32 also rounds each matrix operand to 10 mantissa bits, nearest: a product's
// error <= t |a b| with t = 2 v + v^2, v = 2^-11; t = 0 in FFMA): an expanded value is a float32 sum of cin products
// and the bias, error <= (t + (cin + 2) u) T_ex with T_ex = |bias| + sum |x w| (the clip does not grow it); a
// depthwise value sums 9 taps from the bias, error <= sum_t |w_t| e_ex,t + 11 u T_d with T_d = |bias| +
// sum_t |w_t ex_t|; the output sums E products, the bias and the residual, error <= sum_e |wp_e| e_d,e +
// (t + (E + 3) u) T_y. The check allows twice that per element.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <cmath>

#include "fused_block_test_cases.h"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

enum class Kernel { ffma, tf32 };

int ptx_version() {
  k::KernelImage image;
  if (k::probe_kernel_image(&image) != cudaSuccess) return 0;
  return image.ptx_version;
}

void run_case(const BlockCase& c, bool every_variant, Kernel kernel = Kernel::ffma) {
  const bool tf32 = kernel == Kernel::tf32;
  const double tmul = tf32 ? 2.0 * kU16 + kU16 * kU16 : 0.0;  // a TF32 product's relative error (kU16 = 2^-11)
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  SCOPED_TRACE(c.str(seed));
  const int oh = c.out_h(), ow = c.out_w();
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  const int E = c.expanded, cin = c.cin, cout = c.cout;
  const int64_t in_px = static_cast<int64_t>(c.batch) * c.h * c.w, out_px = static_cast<int64_t>(c.batch) * oh * ow;
  const float se = 3.0f / std::sqrt(static_cast<float>(cin)), sp = 2.0f / std::sqrt(static_cast<float>(E));
  const std::vector<float> x = random_vector(gen, static_cast<size_t>(in_px * cin));        // NHWC
  const std::vector<float> we = random_vector(gen, static_cast<size_t>(E) * cin, -se, se);  // [E][cin]
  const std::vector<float> eb = random_vector(gen, static_cast<size_t>(E));
  const std::vector<float> dw = random_vector(gen, static_cast<size_t>(E) * 9, -0.5f, 0.5f);  // [E][3][3]
  const std::vector<float> db = random_vector(gen, static_cast<size_t>(E));
  const std::vector<float> wp = random_vector(gen, static_cast<size_t>(cout) * E, -sp, sp);  // [cout][E]
  const std::vector<float> pb = random_vector(gen, static_cast<size_t>(cout));
  auto clip = [&](double v) { return c.clip ? std::min(std::max(v, 0.0), 6.0) : v; };

  // Expansion (NHWC) and each value's error bound.
  std::vector<double> ex(static_cast<size_t>(in_px) * E), eex(ex.size());
  for (int64_t p = 0; p < in_px; ++p)
    for (int e = 0; e < E; ++e) {
      double v = eb[static_cast<size_t>(e)], t = std::fabs(v);
      for (int q = 0; q < cin; ++q) {
        const double term =
            static_cast<double>(x[static_cast<size_t>(p * cin + q)]) * we[static_cast<size_t>(e) * cin + q];
        v += term;
        t += std::fabs(term);
      }
      ex[static_cast<size_t>(p * E + e)] = clip(v);
      eex[static_cast<size_t>(p * E + e)] = (tmul + (cin + 2) * kU32) * t;
    }
  // Depthwise (NHWC).
  std::vector<double> d(static_cast<size_t>(out_px) * E), ed(d.size());
  for (int n = 0; n < c.batch; ++n)
    for (int y = 0; y < oh; ++y)
      for (int xo = 0; xo < ow; ++xo)
        for (int e = 0; e < E; ++e) {
          double v = db[static_cast<size_t>(e)], t = std::fabs(v), carried = 0;
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int ih = y * c.stride - c.pad_top + ky, iw = xo * c.stride - c.pad_left + kx;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              const size_t at = ((static_cast<size_t>(n) * c.h + ih) * c.w + iw) * E + e;
              const double w = dw[static_cast<size_t>(e) * 9 + ky * 3 + kx];
              v += ex[at] * w;
              t += std::fabs(ex[at] * w);
              carried += std::fabs(w) * eex[at];
            }
          const size_t at = ((static_cast<size_t>(n) * oh + y) * ow + xo) * E + e;
          d[at] = clip(v);
          ed[at] = carried + 11 * kU32 * t;
        }
  // Projection + bias (+ residual).
  std::vector<double> ref(static_cast<size_t>(out_px) * cout), bound(ref.size());
  for (int64_t p = 0; p < out_px; ++p)
    for (int o = 0; o < cout; ++o) {
      double v = pb[static_cast<size_t>(o)], t = std::fabs(v), carried = 0;
      for (int e = 0; e < E; ++e) {
        const double w = wp[static_cast<size_t>(o) * E + e], a = d[static_cast<size_t>(p * E + e)];
        v += a * w;
        t += std::fabs(a * w);
        carried += std::fabs(w) * ed[static_cast<size_t>(p * E + e)];
      }
      if (c.residual) {
        const double r = x[static_cast<size_t>(p * cin + o)];  // stride 1, same map: pixel p of the input
        v += r;
        t += std::fabs(r);
      }
      ref[static_cast<size_t>(p * cout + o)] = v;
      bound[static_cast<size_t>(p * cout + o)] = 2.0 * (carried + (tmul + (E + 3) * kU32) * t);
    }

  k::FusedBlockParams p = c.params();
  const k::FusedBlockShape& s = p.shape;
  const k::FusedBlockWeights pw =
      k::fused_block_pack(s, tf32 ? k::fused_block_padding(s) : k::fused_block_ffma_padding(s), we, eb, dw, db, wp, pb);
  DeviceArray dx(x), dy(static_cast<size_t>(out_px) * cout);
  // TF32: the matrices rounded on the host, as the engine uploads them (the kernel reads them as they are).
  DeviceArray dwe(tf32 ? k::to_tf32(pw.expand) : pw.expand), deb(pw.expand_bias), ddw(pw.dw), ddb(pw.dw_bias),
      dwp(tf32 ? k::to_tf32(pw.project) : pw.project), dpb(pw.project_bias);
  set_operands(p, dx.get(), dwe.get(), deb.get(), ddw.get(), ddb.get(), dwp.get(), dpb.get(), dy.get());

  int device = 0;
  MNV2_CHECK_CUDA(cudaGetDevice(&device));
  const k::DeviceCaps caps = device_caps(device);
  std::string why;
  auto check = [&](const std::string& what, double recompute, auto&& launch) {
    SCOPED_TRACE(what);
    MNV2_CHECK_CUDA(cudaMemset(dy.get(), 0xff, dy.size() * sizeof(float)));  // NaN where nothing is written
    launch();
    const std::vector<float> got = dy.download();
    const BoundCheck b = check_within(got, ref, bound);
    EXPECT_TRUE(b.ok()) << b.str();
    const Agreement a = agreement(got, ref);
    EXPECT_EQ(a.non_finite, 0) << a.str();
    // TF32 operands alone give about 3e-4 (FFMA far less).
    EXPECT_LT(a.rel_l2, tf32 ? 2e-3 : kKernelMaxRelL2) << a.str();
    EXPECT_GE(recompute, 1.0 - 1e-12);
  };
  if (tf32) {
    std::vector<k::FusedBlockVariant> variants{
        k::choose_fused_block_variant(s, caps, ptx_version(), &why, k::FusedBlockMath::tf32)};
    ASSERT_EQ(why, "");
    for (const auto& [th, tw] :
         std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {4, 4}, {7, 7}, {12, 11}, {16, 9}, {oh, ow}}) {
      const int items = k::fused_block_items(s, th, tw);
      const k::FusedBlockLayout l = k::fused_block_layout(s, th, tw, k::FusedBlockMath::tf32);
      if (th > 16 || tw > 16 || items > k::kFusedBlockMaxItems || l.m2 > 256 || l.total > caps.smem_per_block_optin)
        continue;
      for (int built : {2, 4, 6})
        if (items <= built && (every_variant || built == (items <= 2 ? 2 : items <= 4 ? 4 : 6)))
          variants.push_back({th, tw, built, k::FusedBlockMath::tf32});
    }
    for (const k::FusedBlockVariant& v : variants)
      check(k::to_string(v), k::fused_block_recompute_factor(s, v), [&] { k::launch_fused_block(p, v, nullptr); });
    return;
  }
  std::vector<k::FusedBlockFfmaVariant> variants{k::choose_fused_block_ffma_variant(s, caps, &why)};
  ASSERT_EQ(why, "");
  if (every_variant) {
    for (const auto& [th, tw] :
         std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {4, 4}, {7, 7}, {8, 8}, {12, 11}, {16, 9}, {oh, ow}})
      for (const k::FusedBlockFfmaTile& t : k::kFusedBlockFfmaTiles) {
        const k::FusedBlockFfmaVariant v{th, tw, t.px, t.nc};
        if (k::fused_block_ffma_variant_refusal(s, v, caps.smem_per_block_optin).empty()) variants.push_back(v);
      }
  }
  for (const k::FusedBlockFfmaVariant& v : variants)
    check(k::to_string(v), k::fused_block_ffma_recompute_factor(s, v),
          [&] { k::launch_fused_block_ffma(p, v, nullptr); });
}

TEST(KernelFusedBlockFfma, MatchesTheReferenceOverBlockShapes) {
  MNV2_SKIP_WITHOUT_GPU();
  for (BlockCase c : kMobileNetBlocks) {
    run_case(c, /*every_variant=*/true);
    c.batch = 3;
    run_case(c, /*every_variant=*/false);
  }
  const BlockCase odd[] = {
      {2, 24, 72, 24, 13, 13, 1, 1, 1, 1, 1, true, true},   // odd map, E not a chunk multiple
      {3, 16, 40, 24, 9, 11, 2, 0, 0, 1, 1, false, true},   // odd, non-square, stride 2 TF pads
      {2, 12, 20, 20, 5, 7, 1, 1, 1, 1, 1, false, false},   // channels multiples of 4, not 8; no clips
      {1, 32, 96, 40, 15, 17, 2, 1, 1, 1, 1, false, true},  // symmetric stride-2 pads
      {2, 48, 288, 48, 3, 3, 1, 1, 1, 1, 1, true, true},    // a 3x3 map
      {1, 4, 36, 4, 1, 1, 1, 1, 1, 1, 1, true, true},       // a 1x1 map: only the centre tap; 4 channels
  };
  for (const BlockCase& c : odd) run_case(c, /*every_variant=*/true);
}

TEST(KernelFusedBlockTf32, MatchesTheReferenceOverBlockShapes) {
  MNV2_SKIP_WITHOUT_GPU();
  if (ptx_version() < 80) GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: TF32 needs 80";
  for (BlockCase c : kMobileNetBlocks) {
    run_case(c, /*every_variant=*/true, Kernel::tf32);
    c.batch = 3;
    run_case(c, /*every_variant=*/false, Kernel::tf32);
  }
}

// Small, odd cases alone (what the sanitizers' racecheck and synccheck run: device-run.sh, section tf32).
TEST(KernelFusedBlockTf32, MatchesTheReferenceOnOddShapes) {
  MNV2_SKIP_WITHOUT_GPU();
  if (ptx_version() < 80) GTEST_SKIP() << "the kernels run compute_" << ptx_version() << " code: TF32 needs 80";
  for (const BlockCase& c : kOddTensorCoreBlocks) run_case(c, /*every_variant=*/true, Kernel::tf32);
}

TEST(KernelFusedBlockFfma, RefusesWhatItCannotRun) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray buf(1 << 16), out(1 << 16);
  k::FusedBlockParams p;
  p.shape = k::FusedBlockShape{1, 16, 64, 16, 8, 8, 8, 8, 1, 1, 1, true};
  p.input = buf.get();
  p.expand_weight = buf.get();
  p.expand_bias = buf.get();
  p.dw_weight = buf.get();
  p.dw_bias = buf.get();
  p.project_weight = buf.get();
  p.project_bias = buf.get();
  p.output = out.get();
  const k::FusedBlockFfmaVariant ok{4, 4, 2, 1};
  k::FusedBlockParams bad = p;
  bad.shape.in_channels = bad.shape.out_channels = 6;  // not multiples of 4
  EXPECT_THROW(k::launch_fused_block_ffma(bad, ok, nullptr), Error);
  EXPECT_NE(k::fused_block_ffma_shape_refusal(bad.shape).find("multiples of 4"), std::string::npos);
  bad = p;
  bad.output = buf.get();  // the input itself
  EXPECT_THROW(k::launch_fused_block_ffma(bad, ok, nullptr), Error);
  bad = p;
  bad.shape.stride = 3;
  EXPECT_THROW(k::launch_fused_block_ffma(bad, ok, nullptr), Error);
  bad = p;
  bad.project_bias = buf.get() + 1;  // misaligned
  EXPECT_THROW(k::launch_fused_block_ffma(bad, ok, nullptr), Error);
  // 8x8 pixels x 64 channels with a 2x4 micro-tile: 512 projection threads.
  bad = p;
  bad.shape.out_channels = 64;
  bad.shape.residual = false;
  EXPECT_THROW(k::launch_fused_block_ffma(bad, k::FusedBlockFfmaVariant{8, 8, 2, 1}, nullptr), Error);
  EXPECT_NE(k::fused_block_ffma_variant_refusal(bad.shape, k::FusedBlockFfmaVariant{8, 8, 2, 1}, 1 << 30)
                .find("projection threads"),
            std::string::npos);
  EXPECT_THROW(k::launch_fused_block_ffma(p, k::FusedBlockFfmaVariant{4, 4, 3, 1}, nullptr), Error);  // not built
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  k::launch_fused_block_ffma(p, ok, nullptr);  // the refusals left nothing behind
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelFusedBlockFfma, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
