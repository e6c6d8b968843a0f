// The stem and the first block in one kernel (kernels/fused_stem.cu) against a float64 reference on fresh random
// data: every channel pair it is built for, half and float32 output, both tiles (8 and 16 rows), the real map
// (224x224, symmetric and TF-style stem pads) at batch 1 and 2, odd maps (partial tiles at the right and bottom
// edges, maps smaller than a tile), a "valid" depthwise (no pads), with and without clips.
//
// Tolerance, derived: the reference rounds the stem's and the depthwise's maps to the activation type T where
// the kernel stores them (u = 2^-11 for half, 2^-24 for float32), and takes the stem's inputs and weights, the
// depthwise's weights and bias and the projection's weights as the kernel does (rounded to half for a half output:
// tensor cores with float32 sums for the 1x1-like parts, half2 for the depthwise). The kernel's
// sums are float32 FMA chains: <= (n + 2) 2^-24 sum |terms| for n terms. A stored map value may then sit on the other
// side of a rounding boundary: one ulp,
// <= 2u |v|. Both are carried through the next layer by the absolute weights (clips are 1-Lipschitz):
//   stem  ds = 2u |s| + 30 u32 ms,              ms = |b| + sum |w x|
//   dw    dd = sum |w| ds + 2u (|d| + sum |w| ds) + 12 u32 md   (float32)
//         dd = sum |w| ds (1 + 2u) + 2u (|d| + 6 md)            (half: half2 accumulation, a rounding per tap)
//   out   dy = sum |wp| dd + (C1 + 2) u32 my + u |y|   (the output's own rounding)
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <cmath>

#include "backends/cpu/cpu_ops.h"  // conv_output_extent
#include "kernels/fused_stem.cuh"
#include "kernels/layout.cuh"  // to_half_bits
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct StemCase {
  int batch, c1, c2, h, w;
  int stem_pad_top, stem_pad_left, stem_pad_bottom, stem_pad_right;
  int dw_pad;  // all four sides
  bool clip;
};

void run_case(const StemCase& c, k::DType dtype) {
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  std::ostringstream what;
  what << "batch " << c.batch << " 3->" << c.c1 << "->" << c.c2 << " input " << c.h << "x" << c.w << " stem pads ["
       << c.stem_pad_top << "," << c.stem_pad_left << "," << c.stem_pad_bottom << "," << c.stem_pad_right << "] dw pad "
       << c.dw_pad << " clip " << c.clip << " " << k::to_string(dtype) << " MNV2_TEST_SEED=" << seed;
  SCOPED_TRACE(what.str());
  const int sh = cpu::conv_output_extent(c.h, c.stem_pad_top, c.stem_pad_bottom, 3, 2, 1);
  const int sw = cpu::conv_output_extent(c.w, c.stem_pad_left, c.stem_pad_right, 3, 2, 1);
  ASSERT_GT(sh, 0);
  ASSERT_GT(sw, 0);
  const int oh = cpu::conv_output_extent(sh, c.dw_pad, c.dw_pad, 3, 1, 1);
  const int ow = cpu::conv_output_extent(sw, c.dw_pad, c.dw_pad, 3, 1, 1);
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  const bool half = dtype == k::DType::f16;
  const double u = half ? kU16 : kU32;
  auto round_t = [&](std::vector<float> v) { return half ? TypedArray::rounded(k::DType::f16, v) : v; };
  const int C1 = c.c1, C2 = c.c2;
  // The normalised network input spans about [-2.2, 2.7]; the stem's sums reach a few units.
  const std::vector<float> x = random_vector(gen, static_cast<size_t>(c.batch) * 3 * c.h * c.w, -2.2f, 2.7f);
  const std::vector<float> ws = random_vector(gen, static_cast<size_t>(C1) * 27, -0.4f, 0.4f);  // OIHW
  const std::vector<float> bs = random_vector(gen, static_cast<size_t>(C1));
  const std::vector<float> wd = random_vector(gen, static_cast<size_t>(C1) * 9, -0.5f, 0.5f);  // [C1][3][3]
  const std::vector<float> bd = random_vector(gen, static_cast<size_t>(C1));
  const float sp = 2.0f / std::sqrt(static_cast<float>(C1));
  const std::vector<float> wp = random_vector(gen, static_cast<size_t>(C2) * C1, -sp, sp);  // [C2][C1]
  const std::vector<float> bp = random_vector(gen, static_cast<size_t>(C2));
  // The stem on tensor cores (half output) takes its inputs and weights rounded to half; float32 keeps them.
  const std::vector<float> xs = round_t(x), wsk = round_t(ws);
  // The half kernel's depthwise runs in half2 from half weights and bias; float32 keeps them.
  const std::vector<float> wdk = round_t(wd), bdk = round_t(bd);
  std::vector<float> wpk = wp;  // the projection's weights as the kernel takes them
  if (half) {
    const std::vector<uint16_t> bits = k::to_half_bits(wp);
    for (size_t i = 0; i < bits.size(); ++i) wpk[i] = k::half_bits_to_float(bits[i]);
  }
  auto clip = [&](double v) { return c.clip ? std::min(std::max(v, 0.0), 6.0) : v; };

  // Stem, NHWC, rounded to T; and each value's error bound.
  const size_t stem_px = static_cast<size_t>(c.batch) * sh * sw;
  std::vector<float> s(stem_px * C1);
  std::vector<double> ds(s.size());
  for (int n = 0; n < c.batch; ++n)
    for (int y = 0; y < sh; ++y)
      for (int xo = 0; xo < sw; ++xo)
        for (int o = 0; o < C1; ++o) {
          double v = bs[static_cast<size_t>(o)], m = std::fabs(v);
          for (int ci = 0; ci < 3; ++ci)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = y * 2 - c.stem_pad_top + ky, ix = xo * 2 - c.stem_pad_left + kx;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                const double t = static_cast<double>(xs[((static_cast<size_t>(n) * 3 + ci) * c.h + iy) * c.w + ix]) *
                                 wsk[((static_cast<size_t>(o) * 3 + ci) * 3 + ky) * 3 + kx];
                v += t;
                m += std::fabs(t);
              }
          const size_t at = ((static_cast<size_t>(n) * sh + y) * sw + xo) * C1 + o;
          s[at] = static_cast<float>(clip(v));
          ds[at] = 2.0 * u * std::fabs(v) + 30.0 * kU32 * m;
        }
  s = round_t(s);
  // Depthwise, NHWC, rounded to T.
  const size_t out_px = static_cast<size_t>(c.batch) * oh * ow;
  std::vector<float> d(out_px * C1);
  std::vector<double> dd(d.size());
  for (int n = 0; n < c.batch; ++n)
    for (int y = 0; y < oh; ++y)
      for (int xo = 0; xo < ow; ++xo)
        for (int e = 0; e < C1; ++e) {
          double v = bdk[static_cast<size_t>(e)], m = std::fabs(v), carried = 0;
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = y - c.dw_pad + ky, ix = xo - c.dw_pad + kx;
              if (iy < 0 || iy >= sh || ix < 0 || ix >= sw) continue;
              const size_t at = ((static_cast<size_t>(n) * sh + iy) * sw + ix) * C1 + e;
              const double w = wdk[static_cast<size_t>(e) * 9 + ky * 3 + kx];
              v += w * s[at];
              m += std::fabs(w * s[at]);
              carried += std::fabs(w) * ds[at];
            }
          const size_t at = ((static_cast<size_t>(n) * oh + y) * ow + xo) * C1 + e;
          d[at] = static_cast<float>(clip(v));
          // float32: FFMA sums and a possible rounding flip of the stored value; half: a rounding per tap from the
          // bias (<= 9u m) and the flip, as the fused block's derivation, <= 2u (|d| + 6 m).
          dd[at] = half ? carried * (1.0 + 2.0 * u) + 2.0 * u * (std::fabs(v) + 6.0 * m)
                        : carried + 2.0 * u * (std::fabs(v) + carried) + 12.0 * kU32 * m;
        }
  d = round_t(d);
  // Projection + bias.
  std::vector<double> ref(out_px * C2), bound(ref.size());
  for (size_t p = 0; p < out_px; ++p)
    for (int o = 0; o < C2; ++o) {
      double v = bp[static_cast<size_t>(o)], m = std::fabs(v), carried = 0;
      for (int e = 0; e < C1; ++e) {
        const double w = wpk[static_cast<size_t>(o) * C1 + e];
        v += w * d[p * C1 + e];
        m += std::fabs(w * d[p * C1 + e]);
        carried += std::fabs(w) * dd[p * C1 + e];
      }
      ref[p * C2 + o] = v;
      bound[p * C2 + o] = carried + (C1 + 2) * kU32 * m + u * (std::fabs(v) + carried) + 1e-7;
    }

  k::FusedStemShape shape;
  shape.batch = c.batch;
  shape.in_h = c.h;
  shape.in_w = c.w;
  shape.stem_channels = C1;
  shape.out_channels = C2;
  shape.stem_h = sh;
  shape.stem_w = sw;
  shape.stem_stride = 2;
  shape.stem_pad_top = c.stem_pad_top;
  shape.stem_pad_left = c.stem_pad_left;
  shape.out_h = oh;
  shape.out_w = ow;
  shape.dw_pad_top = c.dw_pad;
  shape.dw_pad_left = c.dw_pad;
  shape.dtype = dtype;
  ASSERT_EQ(k::fused_stem_refusal(shape), "");
  DeviceArray dx(x), dw(k::fused_stem_pack(shape, ws, bs, wd, bd, wp, bp));
  TypedArray dy(dtype, out_px * C2);
  k::FusedStemParams p;
  p.shape = shape;
  p.input = dx.get();
  p.weights = dw.get();
  p.stem_clip = k::Clip{c.clip, 0.0f, 6.0f};
  p.dw_clip = k::Clip{c.clip, 0.0f, 6.0f};
  p.output = dy.get();
  int device = 0;
  MNV2_CHECK_CUDA(cudaGetDevice(&device));
  std::string why;
  const k::FusedStemVariant chosen = k::choose_fused_stem_variant(shape, device_caps(device), &why);
  ASSERT_EQ(why, "");
  for (const k::FusedStemVariant& v : {chosen, k::FusedStemVariant{8}, k::FusedStemVariant{16}}) {
    SCOPED_TRACE(k::to_string(v));
    dy.poison();
    k::launch_fused_stem(p, v, nullptr);
    MNV2_CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got = dy.download();
    const BoundCheck b = check_within(got, ref, bound);
    EXPECT_TRUE(b.ok()) << b.str();
    const Agreement a = agreement(got, ref);
    EXPECT_EQ(a.non_finite, 0) << a.str();
    EXPECT_LT(a.rel_l2, half ? 2e-3 : 1e-5) << a.str();
    EXPECT_GE(k::fused_stem_recompute_factor(shape, v), 1.0 - 1e-12);
  }
}

TEST(KernelFusedStem, MatchesTheReferenceOverStemShapes) {
  MNV2_SKIP_WITHOUT_GPU();
  for (const k::DType dtype : {k::DType::f16, k::DType::f32}) {
    // The network's own: 224x224, stem pads symmetric (PyTorch export) and TF-style (0 before, 1 after).
    run_case({1, 32, 16, 224, 224, 1, 1, 1, 1, 1, true}, dtype);
    run_case({2, 32, 16, 224, 224, 0, 0, 1, 1, 1, true}, dtype);
    // Every other channel pair on odd maps: partial tiles at both edges, a map smaller than a tile, no pads.
    run_case({3, 16, 8, 33, 47, 1, 1, 1, 1, 1, true}, dtype);
    run_case({2, 24, 16, 61, 35, 1, 1, 1, 1, 1, false}, dtype);
    run_case({1, 48, 24, 19, 9, 0, 0, 1, 1, 0, true}, dtype);
    run_case({2, 32, 16, 7, 5, 1, 1, 1, 1, 1, true}, dtype);
    run_case({1, 32, 16, 160, 96, 1, 1, 1, 1, 1, true}, dtype);
  }
}

TEST(KernelFusedStem, RefusesWhatItCannotRun) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray in(3 * 32 * 32), out(16 * 16 * 16);
  k::FusedStemParams p;
  k::FusedStemShape& s = p.shape;
  s = k::FusedStemShape{1, 32, 32, 32, 16, 16, 16, 2, 1, 1, 16, 16, 1, 1, k::DType::f32};
  p.input = in.get();
  p.output = out.get();
  const std::vector<float> ws(32 * 27, 0.1f), wd(32 * 9, 0.1f), wp(16 * 32, 0.1f);
  DeviceArray weights(k::fused_stem_pack(s, ws, {}, wd, {}, wp, {}));
  EXPECT_EQ(weights.size(), static_cast<size_t>(k::fused_stem_offsets(32, 16).total));
  p.weights = weights.get();
  const k::FusedStemVariant ok{8};
  EXPECT_NO_THROW(k::launch_fused_stem(p, ok, nullptr));
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
  k::FusedStemParams bad = p;
  bad.shape.stem_channels = 40;  // no kernel for 40->16
  EXPECT_NE(k::fused_stem_refusal(bad.shape).find("channel pairs"), std::string::npos);
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  bad = p;
  bad.shape.stem_stride = 1;
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  EXPECT_THROW(k::launch_fused_stem(p, k::FusedStemVariant{12}, nullptr), Error);  // not built
  bad = p;
  bad.weights = p.weights + 1;  // not 16-byte aligned
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  bad = p;
  bad.output = const_cast<float*>(p.input);  // the input itself
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  EXPECT_THROW(k::fused_stem_pack(s, ws, {}, wd, {}, std::vector<float>(15 * 32), {}), Error);
  bad = p;
  bad.output = static_cast<char*>(p.output) + 4;  // not 16-byte aligned
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  bad = p;
  bad.input = nullptr;
  EXPECT_THROW(k::launch_fused_stem(bad, ok, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace mnv2::test
#endif  // MNV2_HAVE_KERNELS
