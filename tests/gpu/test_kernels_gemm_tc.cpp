// The tensor-core GEMM (kernels/gemm_tc.cu) against a float64 reference, element by element, with a bound
// derived from its arithmetic: TF32 rounds each operand (|a'b' - ab| <= (2u + u^2)|ab|, u = 2^-11), half
// operands are rounded on the host (the reference sees the same values), the float32 accumulation adds at
// most (k + 2) 2^-24 sum|a b|, and a half output rounds once more (u |c|, plus half the smallest subnormal).
// Every tile, split-K, 16-byte and element-wise accesses, odd shapes (k and n not multiples of the tile or of 8),
// padded leading dimensions, bias / clip / residual on and off, half and float32 outputs. Fresh random data
// each run; C is poisoned, and its padding must stay poisoned.
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "kernels/gemm_tc.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct TcCase {
  int m, n, k;
  int pad;  // extra elements per row of every operand
  bool bias, clip, residual;
};

const k::TcTile kAllTcTiles[] = {k::TcTile::t128x128, k::TcTile::t128x64, k::TcTile::t64x64, k::TcTile::t128x32,
                                 k::TcTile::t32x32};

// A valid 8x8x8 float32 (TF32) product over three 64-element device arrays, the start of the launch tests.
k::TcGemmParams small_params(DeviceArray& a, DeviceArray& b, DeviceArray& c) {
  k::TcGemmParams p;
  p.m = p.n = p.k = 8;
  p.a = a.get();
  p.b = b.get();
  p.c = c.get();
  p.lda = p.ldb = p.ldc = 8;
  return p;
}

void run_tc_case(const TcCase& c, k::DType in_type, k::DType out_type) {
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  const int64_t lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
  // Operands as the device holds them (half: rounded on the host; TF32: float32, rounded by the kernel).
  const std::vector<float> a = TypedArray::rounded(in_type, random_vector(gen, static_cast<size_t>(c.m * lda)));
  const std::vector<float> b = TypedArray::rounded(in_type, random_vector(gen, static_cast<size_t>(c.k * ldb)));
  const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.n));
  const std::vector<float> res = TypedArray::rounded(out_type, random_vector(gen, static_cast<size_t>(c.m * ldc)));
  const k::Clip clip{c.clip, -0.5f, 0.75f};  // inside the data's range: both sides clip

  const double u_in = kU16;  // TF32 and half operands alike
  const double u_out = out_type == k::DType::f16 ? kU16 : kU32;
  const double tiny = out_type == k::DType::f16 ? std::ldexp(1.0, -25) : 0.0;
  std::vector<double> ref(static_cast<size_t>(c.m * ldc), NAN), bound(ref.size(), 0.0);
  std::vector<char> inside(ref.size(), 0);
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double s = 0, abs_sum = 0;
      for (int kk = 0; kk < c.k; ++kk) {
        const double prod = double(a[i * lda + kk]) * double(b[kk * ldb + j]);
        s += prod;
        abs_sum += std::fabs(prod);
      }
      double extra = 0;  // float32 additions of the bias and the residual
      if (c.bias) {
        s += bias[j];
        extra += std::fabs(bias[j]);
      }
      if (c.clip) s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (c.residual) {
        s += res[at];
        extra += std::fabs(res[at]);
      }
      ref[at] = s;
      inside[at] = 1;
      bound[at] = dot_error_factor(u_in, c.k) * abs_sum + 2 * kU32 * (extra + std::fabs(s)) +
                  1.01 * u_out * std::fabs(s) + tiny + 1e-30;
    }

  TypedArray da(in_type, a), db(in_type, b), dres(out_type, res), dc(out_type, ref.size());
  DeviceArray dbias(bias);
  DeviceArray dwork(static_cast<size_t>(16) * c.m * c.n);  // split-K partials, up to 16 splits
  k::TcGemmParams p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.in_type = in_type;
  p.out_type = out_type;
  p.a = da.get();
  p.lda = lda;
  p.b = db.get();
  p.ldb = ldb;
  p.c = dc.get();
  p.ldc = ldc;
  p.bias = c.bias ? dbias.get() : nullptr;
  p.clip = clip;
  p.residual = c.residual ? dres.get() : nullptr;
  p.ldr = ldc;
  p.workspace = dwork.get();

  std::vector<k::TcGemmVariant> variants;
  for (k::TcTile t : kAllTcTiles) {
    variants.push_back({t, false, 1});
    if (k::gemm_tc_vec_ok(p)) variants.push_back({t, true, 1});
  }
  variants.push_back(k::choose_gemm_tc_variant(p, 132));
  // Split-K: every split count whose whole-slice chunks leave no split empty, both access widths.
  const int bk = 64 / k::dtype_bytes(in_type);
  for (int splits = 2; splits <= 16; ++splits) {
    const int chunk = static_cast<int>(k::ceil_div(k::ceil_div(c.k, splits), bk) * bk);
    if (k::ceil_div(c.k, chunk) != splits) continue;
    variants.push_back({k::TcTile::t32x32, false, splits});
    if (k::gemm_tc_vec_ok(p)) variants.push_back({k::TcTile::t64x64, true, splits});
  }
  for (const k::TcGemmVariant& v : variants) {
    std::ostringstream what;
    what << "m " << c.m << " n " << c.n << " k " << c.k << " pad " << c.pad << " bias " << c.bias << " clip " << c.clip
         << " residual " << c.residual << " in " << k::to_string(in_type) << " out " << k::to_string(out_type)
         << " variant " << k::to_string(v, in_type) << " MNV2_TEST_SEED=" << seed;
    SCOPED_TRACE(what.str());
    dc.poison();
    k::launch_gemm_tc(p, v, nullptr);
    const std::vector<float> got = dc.download();
    std::vector<float> got_inside;
    std::vector<double> ref_inside, bound_inside;
    int64_t pad_written = 0;
    for (size_t at = 0; at < got.size(); ++at) {
      if (inside[at]) {
        got_inside.push_back(got[at]);
        ref_inside.push_back(ref[at]);
        bound_inside.push_back(bound[at]);
      } else if (!std::isnan(got[at])) {
        ++pad_written;
      }
    }
    const BoundCheck check = check_within(got_inside, ref_inside, bound_inside);
    EXPECT_TRUE(check.ok()) << check.str();
    EXPECT_EQ(pad_written, 0) << "elements of C's row padding were written";
  }
}

TEST(KernelGemmTc, MatchesFloat64WithinThePrecisionsBound) {
  MNV2_SKIP_WITHOUT_GPU();
  const TcCase cases[] = {
      {1, 8, 8, 0, true, false, false},        // one row
      {37, 19, 13, 0, true, true, false},      // nothing a multiple of anything: element-wise accesses
      {129, 72, 40, 0, true, true, true},      // M past a tile, k not a multiple of the slice
      {200, 24, 144, 8, true, true, true},     // a projection to 24 channels, padded rows
      {300, 144, 24, 0, true, true, false},    // an expansion: k = 24 is under one half slice
      {64, 96, 16, 3, false, false, true},     // padding that breaks 16-byte rows: element-wise
      {3, 1008, 1280, 0, true, false, false},  // the classifier (1001 features padded to 1008)
      {49, 160, 960, 0, true, false, true},    // a 7x7 projection at batch 1
      {517, 136, 131, 0, false, true, false},  // odd k, n a multiple of 8
  };
  const std::string no_tf32 = tf32_kernels_missing();
  if (!no_tf32.empty()) std::printf("TF32 cases not run: %s\n", no_tf32.c_str());
  for (const TcCase& c : cases) {
    if (no_tf32.empty()) run_tc_case(c, k::DType::f32, k::DType::f32);  // TF32
    run_tc_case(c, k::DType::f16, k::DType::f16);
    run_tc_case(c, k::DType::f16, k::DType::f32);  // the fp16 classifier's float32 logits
  }
}

// Code compiled for an architecture without TF32 tensor cores (compute_75) refuses a TF32 launch by name instead
// of reaching its trap; elsewhere the same launch runs.
TEST(KernelGemmTc, Tf32LaunchIsRefusedWhereTheCodeHasNoTf32) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray a(64), b(64), c(64);
  k::TcGemmParams p = small_params(a, b, c);
  const k::TcGemmVariant v{k::TcTile::t32x32, true, 1};
  if (tf32_kernels_missing().empty()) {
    k::launch_gemm_tc(p, v, nullptr);
  } else {
    try {
      k::launch_gemm_tc(p, v, nullptr);
      ADD_FAILURE() << "a TF32 launch ran in code without TF32";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("compute_80"), std::string::npos) << e.what();
    }
  }
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
}

// The tile choice follows the GPU's shared memory: on a Turing card (64 KB per block, 64 KB per
// multiprocessor, 1024 threads) the 128x128 tile (66-67 KB) is never taken and forcing it is refused. No GPU
// needed.
TEST(KernelGemmTc, TileChoiceFitsTheDevicesSharedMemory) {
  k::DeviceCaps turing;
  turing.num_sms = 40;
  turing.smem_per_block_optin = 64 * 1024;
  turing.smem_per_sm = 64 * 1024;
  turing.max_threads_per_sm = 1024;
  turing.dram_bytes_per_sm_cycle = 5.0;
  const k::DeviceCaps hopper;  // the H200 the model was fitted on
  for (k::DType in : {k::DType::f16, k::DType::f32}) {
    SCOPED_TRACE(k::to_string(in));
    EXPECT_GT(k::gemm_tc_smem_bytes(k::TcTile::t128x128, in), 64 * 1024);
    EXPECT_LE(k::gemm_tc_smem_bytes(k::TcTile::t128x64, in), 64 * 1024);
    k::TcGemmParams p;
    p.in_type = in;
    p.out_type = in;
    for (const auto& [m, n, kk] : {std::tuple{256 * 56 * 56, 144, 24},
                                   {256 * 7 * 7, 1280, 320},
                                   {49, 160, 960},
                                   {256 * 14 * 14, 576, 96},
                                   {8192, 4096, 4096}}) {
      p.m = m;
      p.n = n;
      p.k = kk;
      for (bool split : {false, true}) {
        const k::TcGemmVariant t = k::choose_gemm_tc_variant(p, turing, nullptr, split);
        EXPECT_LE(k::gemm_tc_smem_bytes(t.tile, in), turing.smem_per_block_optin) << k::to_string(t, in);
      }
    }
    const k::TcTile big = k::TcTile::t128x128;
    EXPECT_THROW(k::choose_gemm_tc_variant(p, turing, &big), Error);
  }
  // A large problem on the H200 takes the 128x128 tile, which Turing cannot hold.
  k::TcGemmParams big_problem;
  big_problem.in_type = big_problem.out_type = k::DType::f16;
  big_problem.m = big_problem.n = big_problem.k = 8192;
  EXPECT_EQ(k::choose_gemm_tc_variant(big_problem, hopper).tile, k::TcTile::t128x128);
  EXPECT_NE(k::choose_gemm_tc_variant(big_problem, turing).tile, k::TcTile::t128x128);
}

// The caps read off the device are coherent, and printed for the record (they scale the cost model).
TEST(KernelGemmTc, DeviceCapsAreReadFromTheDevice) {
  MNV2_SKIP_WITHOUT_GPU();
  const k::DeviceCaps c = device_caps(0);
  std::printf(
      "device caps: %d SMs, %d B opt-in smem per block, %d B smem per SM, %d threads per SM, %.2f DRAM B per "
      "SM cycle\n",
      c.num_sms, c.smem_per_block_optin, c.smem_per_sm, c.max_threads_per_sm, c.dram_bytes_per_sm_cycle);
  EXPECT_EQ(c.num_sms, cuda_environment().devices.front().multiprocessors);
  EXPECT_GE(c.smem_per_block_optin, 48 * 1024);
  EXPECT_LE(c.smem_per_block_optin, c.smem_per_sm);
  EXPECT_GE(c.max_threads_per_sm, 1024);
  EXPECT_GT(c.dram_bytes_per_sm_cycle, 1.0);
  EXPECT_LT(c.dram_bytes_per_sm_cycle, 100.0);
}

TEST(KernelGemmTc, ChoosesSmallTilesForSmallProblemsAndLargeOnesForLargeProblems) {
  k::TcGemmParams p;
  p.in_type = p.out_type = k::DType::f16;
  p.m = 49;
  p.n = 160;
  p.k = 960;
  const k::TcGemmVariant small = k::choose_gemm_tc_variant(p, 132);
  const k::TcGemmVariant small_split = k::choose_gemm_tc_variant(p, 132, nullptr, /*allow_split=*/true);
  p.m = 256 * 56 * 56;
  p.n = 144;
  p.k = 24;
  const k::TcGemmVariant large = k::choose_gemm_tc_variant(p, 132);
  const k::TcGemmVariant large_split = k::choose_gemm_tc_variant(p, 132, nullptr, /*allow_split=*/true);
  std::printf("7x7 projection at batch 1: %s (%s with a workspace); 56x56 expansion at batch 256: %s\n",
              k::to_string(small, p.in_type).c_str(), k::to_string(small_split, p.in_type).c_str(),
              k::to_string(large, p.in_type).c_str());
  EXPECT_EQ(small.tile, k::TcTile::t32x32);
  EXPECT_EQ(small.splits, 1);
  EXPECT_GT(small_split.splits, 1) << "a 7x7 map at batch 1 has 10 tiles for 132 multiprocessors";
  EXPECT_EQ(large_split.splits, 1);
  EXPECT_NE(large.tile, k::TcTile::t32x32);
}

TEST(KernelGemmTc, RefusesBadParameters) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray a(64), b(64), c(64);
  k::TcGemmParams p = small_params(a, b, c);
  const k::TcGemmVariant v{k::TcTile::t32x32, true, 1};
  k::TcGemmParams bad = p;
  bad.lda = 4;
  EXPECT_THROW(k::launch_gemm_tc(bad, v, nullptr), Error);
  bad = p;
  bad.c = a.get();
  EXPECT_THROW(k::launch_gemm_tc(bad, v, nullptr), Error);
  bad = p;
  bad.k = 6;  // not a multiple of 4 floats: no 16-byte copies
  bad.lda = 8;
  EXPECT_THROW(k::launch_gemm_tc(bad, v, nullptr), Error);
  bad = p;
  bad.out_type = k::DType::f16;  // TF32 operands with a half output: not built
  EXPECT_THROW(k::launch_gemm_tc(bad, {k::TcTile::t32x32, false, 1}, nullptr), Error);
  EXPECT_THROW(k::launch_gemm_tc(p, {k::TcTile::t32x32, true, 2}, nullptr), Error);  // a split without workspace
  // The refusals leave nothing behind: a valid launch follows (half operands where the code has no TF32).
  if (!tf32_kernels_missing().empty()) p.in_type = p.out_type = k::DType::f16;
  k::launch_gemm_tc(p, v, nullptr);
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace mnv2::test
#endif  // MNV2_HAVE_KERNELS
