// The tiled GEMM (kernels/gemm.cu) against a float64 reference: every tile, with and without 16-byte
// accesses, over a table of sizes (odd, smaller and larger than a tile, k not a multiple of the slice),
// padded leading dimensions, every epilogue (bias per row / column, clip, residual) and batching over
// images x groups. Fresh random data each run; the output is poisoned before each launch.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <algorithm>
#include <cstdio>
#include <limits>

#include "kernels/gemm.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct GemmCase {
  int m, n, k;
  int pad;  // extra floats per row of every operand (lda = k + pad, ...)
  k::BiasMode bias;
  bool clip;
  bool residual;
  int outer, inner;  // batch = outer * inner, operands strided per index
};

std::string describe(const GemmCase& c, const k::GemmVariant& v, uint64_t seed) {
  std::ostringstream s;
  s << "m " << c.m << " n " << c.n << " k " << c.k << " pad " << c.pad << " bias "
    << (c.bias == k::BiasMode::none      ? "none"
        : c.bias == k::BiasMode::per_row ? "per_row"
                                         : "per_col")
    << " clip " << c.clip << " residual " << c.residual << " batch " << c.outer << "x" << c.inner << " variant "
    << k::to_string(v) << " MNV2_TEST_SEED=" << seed;
  return s.str();
}

const std::vector<k::GemmTile> kAllTiles = {k::GemmTile::t128x128,  k::GemmTile::t128x64,  k::GemmTile::t64x64,
                                            k::GemmTile::t128x32,   k::GemmTile::t32x32,   k::GemmTile::t32x32k32,
                                            k::GemmTile::t128x128w, k::GemmTile::t128x96w, k::GemmTile::t128x64w,
                                            k::GemmTile::t128x32w};
const std::vector<k::GemmTile> kWarpTiles = {k::GemmTile::t128x128w, k::GemmTile::t128x96w, k::GemmTile::t128x64w,
                                             k::GemmTile::t128x32w};

// Every tile of `tiles` scalar and (where the operands allow) vec4, the cost model's choices, and at batch 1 split-K
// over every split count of a few tiles (the warp-tiled t128x64w and t128x128w among them; the in-kernel reduction:
// test_kernels_splitk.cpp).
void run_case(const GemmCase& c, const std::vector<k::GemmTile>& tiles = kAllTiles) {
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  const int batch = c.outer * c.inner;
  const int64_t lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
  // Per batch index: A and B strided by whole matrices of their own; A varies with the inner index only
  // when outer > 1 would share it (as the baseline's weights do per group).
  const int64_t a_size = static_cast<int64_t>(c.m) * lda, b_size = static_cast<int64_t>(c.k) * ldb;
  const int64_t c_size = static_cast<int64_t>(c.m) * ldc;
  const std::vector<float> a = random_vector(gen, static_cast<size_t>(a_size * c.inner));
  const std::vector<float> b = random_vector(gen, static_cast<size_t>(b_size * batch));
  const int bias_len = c.bias == k::BiasMode::per_row ? c.m : c.n;
  const std::vector<float> bias = random_vector(gen, static_cast<size_t>(bias_len * c.inner));
  const std::vector<float> res = random_vector(gen, static_cast<size_t>(c_size * batch));
  const k::Clip clip{c.clip, -0.5f, 0.75f};  // bounds inside the data's range, so both sides clip

  // float64 reference
  std::vector<double> ref(static_cast<size_t>(c_size * batch), 0.0);
  std::vector<char> written(ref.size(), 0);
  for (int z = 0; z < batch; ++z) {
    const int outer = z / c.inner, inner = z % c.inner;
    const float* A = a.data() + inner * a_size;
    const float* B = b.data() + z * b_size;
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double s = 0;
        for (int kk = 0; kk < c.k; ++kk) s += double(A[i * lda + kk]) * double(B[kk * ldb + j]);
        if (c.bias == k::BiasMode::per_row) s += bias[static_cast<size_t>(inner * bias_len + i)];
        if (c.bias == k::BiasMode::per_col) s += bias[static_cast<size_t>(inner * bias_len + j)];
        if (c.clip) s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
        const size_t at = static_cast<size_t>(z * c_size + i * ldc + j);
        if (c.residual) s += res[at];
        ref[at] = s;
        written[at] = 1;
        (void)outer;
      }
  }

  DeviceArray da(a), db(b), dbias(bias), dres(res), dc(ref.size());
  DeviceArray dwork(static_cast<size_t>(32) * c.m * c.n);  // split-K partials, up to 32 splits
  k::GemmParams p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.a = da.get();
  p.lda = lda;
  p.b = db.get();
  p.ldb = ldb;
  p.c = dc.get();
  p.ldc = ldc;
  p.bias_mode = c.bias;
  p.bias = c.bias == k::BiasMode::none ? nullptr : dbias.get();
  p.bias_inner_stride = bias_len;
  p.clip = clip;
  p.residual = c.residual ? dres.get() : nullptr;
  p.ldr = ldc;
  p.batch = batch;
  p.inner = c.inner;
  p.a_outer_stride = 0;
  p.a_inner_stride = a_size;
  p.b_outer_stride = b_size * c.inner;
  p.b_inner_stride = b_size;
  p.c_outer_stride = c_size * c.inner;
  p.c_inner_stride = c_size;
  p.workspace = dwork.get();

  std::vector<k::GemmVariant> variants;
  for (k::GemmTile t : tiles) {
    variants.push_back({t, false, 1});
    if (k::gemm_vec4_ok(p)) variants.push_back({t, true, 1});
  }
  variants.push_back(k::choose_gemm_variant(p, 132));
  if (batch == 1) {
    variants.push_back(k::choose_gemm_variant(p, 132, true));
    // Split-K: every split count whose chunks, rounded to whole slices, leave no split empty.
    for (const auto& [t, bk] :
         {std::pair{k::GemmTile::t32x32, 8}, std::pair{k::GemmTile::t128x64, 8}, std::pair{k::GemmTile::t32x32k32, 32},
          std::pair{k::GemmTile::t128x64w, 8}, std::pair{k::GemmTile::t128x128w, 8}}) {
      for (int splits = 2; splits <= 32; ++splits) {
        const int chunk = ((c.k + splits - 1) / splits + bk - 1) / bk * bk;
        if ((c.k + chunk - 1) / chunk != splits) continue;
        variants.push_back({t, false, splits});
        if (k::gemm_vec4_ok(p)) variants.push_back({t, true, splits});
      }
    }
  }
  for (const k::GemmVariant& v : variants) {
    SCOPED_TRACE(describe(c, v, seed));
    dc.poison();
    k::launch_gemm(p, v, nullptr);
    std::vector<float> got = dc.download();
    // Padding columns are never written: keep them NaN in the result, compare only the matrix.
    std::vector<float> got_m;
    std::vector<double> ref_m;
    for (size_t i = 0; i < got.size(); ++i)
      if (written[i]) {
        got_m.push_back(got[i]);
        ref_m.push_back(ref[i]);
      } else {
        EXPECT_TRUE(std::isnan(got[i])) << "padding element " << i << " was written";
      }
    const Agreement agree = agreement(got_m, ref_m);
    EXPECT_TRUE(agree.ok()) << agree.str();
  }
}

TEST(KernelGemm, MatchesFloat64ReferenceOverShapesTilesAndEpilogues) {
  MNV2_SKIP_WITHOUT_GPU();
  const GemmCase cases[] = {
      {1, 1, 1, 0, k::BiasMode::none, false, false, 1, 1},
      {7, 5, 3, 0, k::BiasMode::per_col, true, false, 1, 1},
      {49, 1280, 320, 0, k::BiasMode::per_col, true, false, 1, 1},     // head conv at batch 1
      {200, 96, 16, 0, k::BiasMode::per_col, true, false, 1, 1},       // expand with k < one slice x2
      {130, 1001, 1280, 0, k::BiasMode::per_col, false, false, 1, 1},  // classifier, odd n
      {513, 24, 144, 0, k::BiasMode::per_col, false, true, 1, 1},      // projection + residual
      {64, 64, 64, 0, k::BiasMode::none, true, true, 1, 1},
      {97, 40, 13, 0, k::BiasMode::per_row, false, false, 1, 1},  // k not a multiple of 4 or 8
      {129, 132, 37, 4, k::BiasMode::per_col, true, true, 1, 1},  // padded rows
      {33, 36, 40, 0, k::BiasMode::per_row, false, false, 2, 3},  // images x groups
      {1, 196, 9, 0, k::BiasMode::per_row, true, false, 3, 8},    // depthwise as the baseline runs it
      {300, 260, 96, 0, k::BiasMode::per_col, true, false, 1, 1},
      // Odd shapes for the warp-tiled tiles (every tile runs them): M = 1, N < 4, K below one 8-deep slice,
      // nothing a multiple of 4 (scalar), one row past a 128-row tile, K long and odd.
      {1, 96, 576, 0, k::BiasMode::per_col, false, true, 1, 1},
      {5, 3, 2, 0, k::BiasMode::per_col, true, false, 1, 1},
      {131, 97, 7, 0, k::BiasMode::per_col, true, true, 1, 1},
      {129, 193, 1001, 0, k::BiasMode::per_col, true, false, 1, 1},
      {200, 1, 12, 0, k::BiasMode::none, false, false, 1, 1},
      {257, 100, 36, 4, k::BiasMode::per_row, true, true, 2, 2},
  };
  for (const GemmCase& c : cases) run_case(c);
}

TEST(KernelGemm, WarpTiledTilesMatchFloat64OverEveryNetworkShape) {
  MNV2_SKIP_WITHOUT_GPU();
  // Every 1x1 convolution of MobileNetV2 (cin, cout, map; a residual where the block adds one) as the pointwise
  // convolution runs it: bias per column, ReLU6-style clip on the expansions and the head, at batch 1 and at an odd
  // batch (3), through the warp-tiled tiles (scalar and vec4) and the cost model's choices.
  const int shapes[][4] = {{32, 16, 112, 0}, {16, 96, 112, 0}, {96, 24, 56, 0},  {24, 144, 56, 0}, {144, 24, 56, 1},
                           {144, 32, 28, 0}, {32, 192, 28, 0}, {192, 32, 28, 1}, {192, 64, 14, 0}, {64, 384, 14, 0},
                           {384, 64, 14, 1}, {384, 96, 14, 0}, {96, 576, 14, 0}, {576, 96, 14, 1}, {576, 160, 7, 0},
                           {160, 960, 7, 0}, {960, 160, 7, 1}, {960, 320, 7, 0}, {320, 1280, 7, 0}};
  for (int batch : {1, 3}) {
    for (const auto& s : shapes) {
      const bool projection = s[0] > s[1] || (s[0] == 32 && s[1] == 16);
      const GemmCase c{batch * s[2] * s[2], s[1], s[0], 0, k::BiasMode::per_col, !projection, s[3] != 0, 1, 1};
      run_case(c, kWarpTiles);
    }
  }
}

TEST(KernelGemm, ChoosesATileForEveryNetworkShape) {
  MNV2_SKIP_WITHOUT_GPU();
  // Pointwise layers of MobileNetV2 at batch 1 and 256 (m = pixels, n = out, k = in): the choice must be a
  // valid, vectorised variant, and it is printed so the tuning can be read off the log.
  const int shapes[][3] = {{12544, 16, 32}, {12544, 96, 16}, {3136, 24, 96}, {3136, 144, 24}, {784, 32, 144},
                           {196, 384, 64},  {196, 96, 384},  {49, 960, 160}, {49, 160, 960},  {49, 1280, 320}};
  for (int batch : {1, 256}) {
    for (const auto& s : shapes) {
      k::GemmParams p;
      p.m = s[0] * batch;
      p.n = s[1];
      p.k = s[2];
      p.lda = p.k;
      p.ldb = p.ldc = p.n;
      alignas(16) static float dummy[4];
      p.a = p.b = dummy;
      p.c = dummy;
      const k::GemmVariant v = k::choose_gemm_variant(p, 132, true);
      EXPECT_TRUE(v.vec4) << p.m << "x" << p.n << "x" << p.k;
      // A split count leaves every split at least one 8-deep slice of k.
      EXPECT_TRUE(v.splits >= 1 && v.splits <= 32 && v.splits * 8 <= p.k) << k::to_string(v);
      std::printf("gemm choice: m %7d n %4d k %4d -> %s\n", p.m, p.n, p.k, k::to_string(v).c_str());
    }
  }
}

TEST(KernelGemm, RefusesBadParameters) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray buf(1024);
  k::GemmParams p;
  p.m = p.n = p.k = 4;
  p.a = p.b = buf.get();
  p.c = buf.get();
  p.lda = p.ldb = p.ldc = 4;
  k::GemmParams zero = p;
  zero.k = 0;
  EXPECT_THROW(k::launch_gemm(zero, {k::GemmTile::t32x32, false}, nullptr), Error);
  EXPECT_THROW(k::launch_gemm(p, {k::GemmTile::t32x32, false, 2}, nullptr), Error);  // split-K without workspace
  k::GemmParams shallow = p;
  shallow.workspace = buf.get();
  EXPECT_THROW(k::launch_gemm(shallow, {k::GemmTile::t32x32, false, 2}, nullptr), Error);  // k 4: a split empty
  k::GemmParams narrow = p;
  narrow.lda = 3;
  EXPECT_THROW(k::launch_gemm(narrow, {k::GemmTile::t32x32, false}, nullptr), Error);
  k::GemmParams odd = p;
  odd.n = 3;
  odd.ldb = odd.ldc = 3;
  EXPECT_THROW(k::launch_gemm(odd, {k::GemmTile::t32x32, true}, nullptr), Error);  // vec4 with n % 4 != 0
  k::GemmParams no_bias = p;
  no_bias.bias_mode = k::BiasMode::per_col;
  EXPECT_THROW(k::launch_gemm(no_bias, {k::GemmTile::t32x32, false}, nullptr), Error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace mnv2::test

#else
TEST(KernelGemm, SkippedWithoutCuda) { GTEST_SKIP() << "this build has no CUDA kernels"; }
#endif
