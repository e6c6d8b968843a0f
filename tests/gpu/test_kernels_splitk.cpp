// Split-K GEMMs reduced inside the kernel (the last block of each output tile adds the pieces, counted in a tile
// counter array it leaves at zero) against the float64 reference and against the separate reduction kernel, bit
// for bit: the FFMA GEMM (fp32) and the tensor-core GEMM (tf32, fp16 in and out), the 14x14 and 7x7 pointwise
// shapes of MobileNetV2 at batch 1 and 3 and odd ones, splits 2..8, every epilogue. The in-kernel path is also
// captured in a CUDA graph and replayed twice in a row: the same bits each time, and the counters back at zero.
// MNV2_SPLITK_TEST_CASES=N keeps the first N shapes (the compute-sanitizer runs, where every launch is slow).
#include <gtest/gtest.h>

#ifdef MNV2_HAVE_KERNELS
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <sstream>

#include "gpu/graph_capture.h"
#include "kernels/gemm.cuh"
#include "kernels/gemm_tc.cuh"
#include "test_kernels_support.h"

namespace mnv2::test {
namespace {

namespace k = kernels;

struct SplitCase {
  int m, n, k;  // m = pixels x batch
  bool bias, clip, residual;
};

// 14x14 and 7x7 pointwise layers (expansion, projection with its residual, the head), at batch 1 and 3; the
// classifier at batch 1 and 3 (n 1001: no 16-byte accesses); sizes that are multiples of nothing.
const SplitCase kCases[] = {
    {196, 64, 384, true, false, true},   {588, 64, 384, true, false, true},  {196, 384, 64, true, true, false},
    {49, 160, 576, true, false, false},  {147, 160, 576, true, false, true}, {49, 960, 160, true, true, false},
    {147, 320, 960, true, false, false}, {49, 1280, 320, true, true, false}, {1, 1001, 1280, true, false, false},
    {3, 1001, 1280, true, false, false}, {37, 45, 203, true, true, true},    {53, 24, 1000, false, false, true},
};

// Splits 2..8 whose whole-slice chunks leave no split empty (bk: the kernel's slice depth).
std::vector<int> split_counts(int kdim, int bk) {
  std::vector<int> out;
  for (int splits = 2; splits <= 8; ++splits) {
    const int64_t chunk = k::ceil_div(k::ceil_div(kdim, splits), bk) * bk;
    if (k::ceil_div(kdim, chunk) == splits) out.push_back(splits);
  }
  return out;
}

// The shapes to run: all, or the first MNV2_SPLITK_TEST_CASES.
std::vector<SplitCase> cases() {
  size_t count = std::size(kCases);
  if (const char* env = std::getenv("MNV2_SPLITK_TEST_CASES"); env && *env)
    count = std::min(count, static_cast<size_t>(std::max(1, std::atoi(env))));
  return {std::begin(kCases), std::begin(kCases) + count};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<unsigned> download_counters(const gpu::DeviceBuffer& counters, size_t count) {
  std::vector<unsigned> host(count);
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
  MNV2_CHECK_CUDA(cudaMemcpy(host.data(), counters.get(), count * sizeof(unsigned), cudaMemcpyDeviceToHost));
  return host;
}

// A launch that reduces its own split (`launch`: in the kernel or in the cluster), once directly and twice as a graph
// replay: every result the same bits as `separate`, one kernel node (no reduction launch).
template <class Launch>
void check_one_kernel_reduction(const Launch& launch, TypedArray& out, const std::vector<float>& separate,
                                const char* what) {
  out.poison();
  launch(static_cast<cudaStream_t>(nullptr));
  const std::vector<float> direct = out.download();
  EXPECT_TRUE(same_bits(direct, separate)) << "the " << what << " reduction differs from the separate pass";
  gpu::Stream stream = gpu::make_stream();
  gpu::Graph graph = gpu::capture_graph(stream.get(), [&](cudaStream_t s) { launch(s); });
  EXPECT_EQ(gpu::count_kernel_nodes(graph.get()), 1) << "one kernel: no reduction launch";
  gpu::GraphExec exec = gpu::instantiate_graph(graph.get(), stream.get());
  for (int replay = 0; replay < 2; ++replay) {
    out.poison();
    MNV2_CHECK_CUDA(cudaDeviceSynchronize());  // the poison is in place before the other stream's replay
    MNV2_CHECK_CUDA(cudaGraphLaunch(exec.get(), stream.get()));
    MNV2_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
    EXPECT_TRUE(same_bits(out.download(), direct)) << "replay " << replay << " differs";
  }
}

// The in-kernel reduction: as above, and every tile counter zero afterwards.
template <class Launch>
void check_in_kernel(const Launch& launch, TypedArray& out, const std::vector<float>& separate,
                     const gpu::DeviceBuffer& counters, size_t counter_count) {
  check_one_kernel_reduction(launch, out, separate, "in-kernel");
  for (unsigned c : download_counters(counters, counter_count)) ASSERT_EQ(c, 0u) << "a tile counter left non-zero";
}

// Whether this device runs the cluster reduction (TcGemmVariant::reduce_in_cluster): clusters on the GPU and code
// compiled for compute_90 or newer.
bool clusters_here() {
  int device = 0, cluster_launch = 0;
  MNV2_CHECK_CUDA(cudaGetDevice(&device));
  MNV2_CHECK_CUDA(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, device));
  k::KernelImage image;
  MNV2_CHECK_CUDA(k::probe_kernel_image(&image));
  return cluster_launch != 0 && image.ptx_version >= 90;
}

TEST(KernelSplitK, FfmaInKernelReductionMatchesReferenceAndSeparatePass) {
  MNV2_SKIP_WITHOUT_GPU();
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  int checked = 0;
  for (const SplitCase& c : cases()) {
    const std::vector<float> a = random_vector(gen, static_cast<size_t>(c.m) * c.k);
    const std::vector<float> b = random_vector(gen, static_cast<size_t>(c.k) * c.n);
    const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.n));
    const std::vector<float> res = random_vector(gen, static_cast<size_t>(c.m) * c.n);
    const k::Clip clip{c.clip, -0.5f, 0.75f};
    std::vector<double> ref(static_cast<size_t>(c.m) * c.n);
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double s = 0;
        for (int kk = 0; kk < c.k; ++kk) s += double(a[size_t(i) * c.k + kk]) * double(b[size_t(kk) * c.n + j]);
        if (c.bias) s += bias[size_t(j)];
        if (c.clip) s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
        if (c.residual) s += res[size_t(i) * c.n + j];
        ref[size_t(i) * c.n + j] = s;
      }
    DeviceArray da(a), db(b), dbias(bias), dres(res), dwork(static_cast<size_t>(8) * c.m * c.n);
    TypedArray dc(k::DType::f32, ref.size());
    k::GemmParams p;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.a = da.get();
    p.lda = c.k;
    p.b = db.get();
    p.ldb = c.n;
    p.c = static_cast<float*>(dc.get());
    p.ldc = c.n;
    p.bias_mode = c.bias ? k::BiasMode::per_col : k::BiasMode::none;
    p.bias = c.bias ? dbias.get() : nullptr;
    p.clip = clip;
    p.residual = c.residual ? dres.get() : nullptr;
    p.ldr = c.n;
    p.workspace = dwork.get();
    for (const auto& [tile, bk] :
         {std::pair{k::GemmTile::t32x32k32, 32}, std::pair{k::GemmTile::t32x32, 8}, std::pair{k::GemmTile::t64x64, 8},
          std::pair{k::GemmTile::t128x128w, 8}, std::pair{k::GemmTile::t128x96w, 8}}) {
      const size_t tiles = static_cast<size_t>(k::gemm_tile_count(c.m, c.n, tile));
      gpu::DeviceBuffer counters(tiles * sizeof(unsigned));
      MNV2_CHECK_CUDA(cudaMemset(counters.get(), 0, tiles * sizeof(unsigned)));
      p.tile_counters = static_cast<unsigned*>(counters.get());
      for (int splits : split_counts(c.k, bk))
        for (bool vec : {false, true}) {
          if (vec && !k::gemm_vec4_ok(p)) continue;
          k::GemmVariant v{tile, vec, splits};
          std::ostringstream what;
          what << "m " << c.m << " n " << c.n << " k " << c.k << " bias " << c.bias << " clip " << c.clip
               << " residual " << c.residual << " " << k::to_string(v) << " MNV2_TEST_SEED=" << seed;
          SCOPED_TRACE(what.str());
          dc.poison();
          k::launch_gemm(p, v, nullptr);  // the separate reduction kernel
          const std::vector<float> separate = dc.download();
          const Agreement agree = agreement(separate, ref);
          EXPECT_TRUE(agree.ok()) << agree.str();
          v.reduce_in_kernel = true;
          check_in_kernel([&](cudaStream_t s) { k::launch_gemm(p, v, s); }, dc, separate, counters, tiles);
          const Agreement in_kernel = agreement(dc.download(), ref);
          EXPECT_TRUE(in_kernel.ok()) << in_kernel.str();
          ++checked;
        }
    }
  }
  EXPECT_GT(checked, static_cast<int>(cases().size()));
}

TEST(KernelSplitK, TensorCoreInKernelAndClusterReductionsMatchReferenceAndSeparatePass) {
  MNV2_SKIP_WITHOUT_GPU();
  k::KernelImage image;
  MNV2_CHECK_CUDA(k::probe_kernel_image(&image));
  const uint64_t seed = kernel_test_seed();
  std::mt19937_64 gen(seed);
  struct Types {
    k::DType in, out;
  };
  std::vector<Types> types = {{k::DType::f16, k::DType::f16}, {k::DType::f16, k::DType::f32}};
  if (image.ptx_version >= 80) types.push_back({k::DType::f32, k::DType::f32});  // TF32 from compute_80 code on
  int checked = 0, clustered = 0;
  const bool cluster = clusters_here();
  for (const Types& t : types)
    for (const SplitCase& c : cases()) {
      const std::vector<float> a = TypedArray::rounded(t.in, random_vector(gen, static_cast<size_t>(c.m) * c.k));
      const std::vector<float> b = TypedArray::rounded(t.in, random_vector(gen, static_cast<size_t>(c.k) * c.n));
      const std::vector<float> bias = random_vector(gen, static_cast<size_t>(c.n));
      const std::vector<float> res = TypedArray::rounded(t.out, random_vector(gen, static_cast<size_t>(c.m) * c.n));
      const k::Clip clip{c.clip, -0.5f, 0.75f};
      // Per element: |error| within the operands' rounding (TF32 or half: 2^-11 each), float32 accumulation
      // and the output's rounding, as the tensor-core GEMM's own test bounds it.
      const double u_out = t.out == k::DType::f16 ? kU16 : kU32;
      const double tiny = t.out == k::DType::f16 ? std::ldexp(1.0, -25) : 0.0;
      std::vector<double> ref(static_cast<size_t>(c.m) * c.n), bound(ref.size());
      for (int i = 0; i < c.m; ++i)
        for (int j = 0; j < c.n; ++j) {
          double s = 0, abs_sum = 0, extra = 0;
          for (int kk = 0; kk < c.k; ++kk) {
            const double prod = double(a[size_t(i) * c.k + kk]) * double(b[size_t(kk) * c.n + j]);
            s += prod;
            abs_sum += std::fabs(prod);
          }
          if (c.bias) {
            s += bias[size_t(j)];
            extra += std::fabs(bias[size_t(j)]);
          }
          if (c.clip) s = std::min<double>(std::max<double>(s, clip.lo), clip.hi);
          const size_t at = size_t(i) * c.n + j;
          if (c.residual) {
            s += res[at];
            extra += std::fabs(res[at]);
          }
          ref[at] = s;
          bound[at] = dot_error_factor(kU16, c.k) * abs_sum + 2 * kU32 * (extra + std::fabs(s)) +
                      1.01 * u_out * std::fabs(s) + tiny + 1e-30;
        }
      TypedArray da(t.in, a), db(t.in, b), dres(t.out, res), dc(t.out, ref.size());
      DeviceArray dbias(bias), dwork(static_cast<size_t>(8) * c.m * c.n);
      k::TcGemmParams p;
      p.m = c.m;
      p.n = c.n;
      p.k = c.k;
      p.in_type = t.in;
      p.out_type = t.out;
      p.a = da.get();
      p.lda = c.k;
      p.b = db.get();
      p.ldb = c.n;
      p.c = dc.get();
      p.ldc = c.n;
      p.bias = c.bias ? dbias.get() : nullptr;
      p.clip = clip;
      p.residual = c.residual ? dres.get() : nullptr;
      p.ldr = c.n;
      p.workspace = dwork.get();
      const int bk = 64 / k::dtype_bytes(t.in);
      for (k::TcTile tile : {k::TcTile::t32x32, k::TcTile::t64x64}) {
        const size_t tiles = static_cast<size_t>(k::gemm_tc_tile_count(c.m, c.n, tile));
        gpu::DeviceBuffer counters(tiles * sizeof(unsigned));
        MNV2_CHECK_CUDA(cudaMemset(counters.get(), 0, tiles * sizeof(unsigned)));
        p.tile_counters = static_cast<unsigned*>(counters.get());
        for (int splits : split_counts(c.k, bk))
          for (bool vec : {false, true}) {
            if (vec && !k::gemm_tc_vec_ok(p)) continue;
            k::TcGemmVariant v{tile, vec, splits};
            std::ostringstream what;
            what << "m " << c.m << " n " << c.n << " k " << c.k << " bias " << c.bias << " clip " << c.clip
                 << " residual " << c.residual << " " << k::to_string(v, t.in) << " out " << k::to_string(t.out)
                 << " MNV2_TEST_SEED=" << seed;
            SCOPED_TRACE(what.str());
            dc.poison();
            k::launch_gemm_tc(p, v, nullptr);
            const std::vector<float> separate = dc.download();
            const BoundCheck sep = check_within(separate, ref, bound);
            EXPECT_TRUE(sep.ok()) << sep.str();
            v.reduce_in_kernel = true;
            check_in_kernel([&](cudaStream_t s) { k::launch_gemm_tc(p, v, s); }, dc, separate, counters, tiles);
            const BoundCheck in = check_within(dc.download(), ref, bound);
            EXPECT_TRUE(in.ok()) << in.str();
            ++checked;
            if (cluster && splits <= k::kClusterMaxSplits) {  // no workspace: the partials stay on chip
              k::TcGemmParams q = p;
              q.workspace = nullptr;
              q.tile_counters = nullptr;
              k::TcGemmVariant w{tile, vec, splits};
              w.reduce_in_cluster = true;
              check_one_kernel_reduction([&](cudaStream_t s) { k::launch_gemm_tc(q, w, s); }, dc, separate, "cluster");
              ++clustered;
            }
          }
      }
    }
  EXPECT_GT(checked, static_cast<int>(cases().size()));
  if (cluster) {
    EXPECT_GT(clustered, static_cast<int>(cases().size()));
  } else {
    std::printf("[ NOTE     ] no thread-block clusters here: the cluster reduction was not run\n");
  }
}

TEST(KernelSplitK, ReductionsWithoutWhatTheyNeedAreRefused) {
  MNV2_SKIP_WITHOUT_GPU();
  DeviceArray a(64 * 64), b(64 * 64), c(64 * 64), work(4 * 64 * 64);
  k::GemmParams p;
  p.m = p.n = p.k = 64;
  p.a = a.get();
  p.b = b.get();
  p.c = c.get();
  p.lda = p.ldb = p.ldc = 64;
  p.workspace = work.get();
  k::GemmVariant v{k::GemmTile::t32x32, false, 2};
  v.reduce_in_kernel = true;
  EXPECT_THROW(k::launch_gemm(p, v, nullptr), Error);
  k::TcGemmParams q;
  q.m = q.n = q.k = 64;
  q.in_type = q.out_type = k::DType::f16;
  q.a = a.get();
  q.b = b.get();
  q.c = c.get();
  q.lda = q.ldb = q.ldc = 64;
  q.workspace = work.get();
  k::TcGemmVariant t{k::TcTile::t32x32, false, 2};
  t.reduce_in_kernel = true;
  EXPECT_THROW(k::launch_gemm_tc(q, t, nullptr), Error);
  // The cluster reduction: more splits than a portable cluster holds, or both reductions at once, are refused;
  // where clusters do not exist, any cluster launch is.
  k::TcGemmVariant w{k::TcTile::t32x32, false, k::kClusterMaxSplits + 1};
  w.reduce_in_cluster = true;
  q.k = q.lda = 64 * (k::kClusterMaxSplits + 1);  // a valid shape for the split: only the count is wrong
  EXPECT_THROW(k::launch_gemm_tc(q, w, nullptr), Error);
  q.k = q.lda = 64;
  w.splits = 2;
  w.reduce_in_kernel = true;
  EXPECT_THROW(k::launch_gemm_tc(q, w, nullptr), Error);
  w.reduce_in_kernel = false;
  if (!clusters_here()) EXPECT_THROW(k::launch_gemm_tc(q, w, nullptr), Error);
}

}  // namespace
}  // namespace mnv2::test
#endif  // MNV2_HAVE_KERNELS
