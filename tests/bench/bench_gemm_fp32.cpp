// mnv2_gemm_bench: the cuda backend's strict-FP32 (FFMA, no TF32) 1x1-convolution GEMMs against cuBLAS SGEMM with
// CUBLAS_COMPUTE_32F_PEDANTIC, on every distinct 1x1 GEMM of the model (MobileNetV2: the expansions, projections
// and the head, shapes read off the model's topology) at the batches asked for. Per shape and batch: our kernel
// with the cost model's variant, launched as the lowering launches it (launch_pointwise_conv: bias, ReLU6 clip and
// the residual where the layer has them; split-K with its separate reduction pass), every tile forced (the best
// split the cost model allows for that tile, as --cuda-gemm-tile forces it), and cuBLAS on the same row-major
// GEMM (GEMM only: cuBLAS has no fused epilogue). Before timing, every variant is checked against a float64 host
// GEMM at one small batch (a gross error exits 1); timings never decide the exit status.
//
// Timing: cudaEvent pairs around each repetition on one stream, after warm-up; the median of the per-repetition
// times is the figure (min, mean, max, p90 and the coefficient of variation beside it); L2 is not flushed between
// repetitions (the weights, and activations up to ~50 MB, stay in L2). FLOPs are 2 * M * N * K.
//
//   mnv2_gemm_bench [--batch 1,8,64,256] [--warmup 20] [--iters 200] [--check-batch 1] [--model PATH]
//                   [--json PATH] [--device N]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/gemm_tile_rules.h"  // measured_gemm_tile
#include "backends/cuda/shapes.h"           // device_caps
#include "bench_stats.h"
#include "gpu/check.h"
#include "gpu/device.h"  // read_gpu_properties
#include "gpu/runtime.h"
#include "kernels/gemm.cuh"
#include "kernels/pointwise_conv.cuh"
#include "mnv2/error.h"
#include "mnv2/model.h"

namespace {

namespace k = mnv2::kernels;
using mnv2::Error;
using mnv2::bench::time_it;
using mnv2::bench::Timing;

// Every FFMA tile of gemm.cuh, the order of tiles.h.
const k::GemmTile kTiles[] = {k::GemmTile::t128x128,  k::GemmTile::t128x64,  k::GemmTile::t64x64,
                              k::GemmTile::t128x32,   k::GemmTile::t32x32,   k::GemmTile::t32x32k32,
                              k::GemmTile::t128x128w, k::GemmTile::t128x96w, k::GemmTile::t128x64w,
                              k::GemmTile::t128x32w};

// One distinct 1x1 convolution of the network: C[pixels, cout] = A[pixels, cin] * W[cin, cout] (+ bias, clip,
// residual), `count` layers of the model having it.
struct GemmLayer {
  int cin = 0, cout = 0, h = 0, w = 0;
  bool clip = false;      // a ReLU6 follows (expansions, head)
  bool residual = false;  // a ResidualAdd takes it (projections of stride-1 blocks with cin == cout)
  int count = 0;
  std::string first_name;  // the first layer with this shape, e.g. "block3.expand"
};

// MobileNetV2 1.0 at 224x224, what the topology must give (checked, printed when it differs): cin, cout, map,
// residual, count.
const int kExpected[][5] = {{32, 16, 112, 0, 1}, {16, 96, 112, 0, 1}, {96, 24, 56, 0, 1},  {24, 144, 56, 0, 2},
                            {144, 24, 56, 1, 1}, {144, 32, 28, 0, 1}, {32, 192, 28, 0, 3}, {192, 32, 28, 1, 2},
                            {192, 64, 14, 0, 1}, {64, 384, 14, 0, 4}, {384, 64, 14, 1, 3}, {384, 96, 14, 0, 1},
                            {96, 576, 14, 0, 3}, {576, 96, 14, 1, 2}, {576, 160, 7, 0, 1}, {160, 960, 7, 0, 3},
                            {960, 160, 7, 1, 2}, {960, 320, 7, 0, 1}, {320, 1280, 7, 0, 1}};

std::vector<GemmLayer> pointwise_layers(const mnv2::Model& model, int input_hw) {
  const std::vector<mnv2::LayerStats> stats = mnv2::analyse(model, 1, input_hw, input_hw);
  std::vector<GemmLayer> out;
  std::map<std::tuple<int, int, int, int, bool, bool>, size_t> seen;
  for (const mnv2::Layer& l : model.layers) {
    if (l.kind != mnv2::LayerKind::Conv2d || !l.conv.pointwise() || l.conv.stride_h != 1 || l.conv.stride_w != 1)
      continue;
    GemmLayer g;
    g.cin = l.conv.in_channels;
    g.cout = l.conv.out_channels;
    g.h = static_cast<int>(stats[static_cast<size_t>(l.index)].output.h);
    g.w = static_cast<int>(stats[static_cast<size_t>(l.index)].output.w);
    for (const mnv2::Layer& user : model.layers) {
      const bool takes = std::find(user.inputs.begin(), user.inputs.end(), l.index) != user.inputs.end();
      if (takes && user.kind == mnv2::LayerKind::ReLU6) g.clip = true;
      // The add of its own block (the next block's add takes it as the skip input).
      if (takes && user.kind == mnv2::LayerKind::ResidualAdd && user.block == l.block) g.residual = true;
    }
    const auto key = std::make_tuple(g.cin, g.cout, g.h, g.w, g.clip, g.residual);
    if (auto it = seen.find(key); it != seen.end()) {
      ++out[it->second].count;
      continue;
    }
    g.count = 1;
    g.first_name = l.name;
    seen[key] = out.size();
    out.push_back(g);
  }
  return out;
}

// ---- one problem on the device ---------------------------------------------------------------------------------

// Pseudo-random floats in [-1, 1) (a fixed LCG: fast for the 100 M values of the largest operand).
void fill(std::vector<float>& v, uint64_t seed) {
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<int32_t>(s >> 33) & 0xffffff) / 8388608.0f - 1.0f;
  }
}

struct Problem {
  GemmLayer layer;
  int batch = 0;
  int64_t m = 0;
  std::vector<float> a, b, bias, residual;  // host copies (kept only for the checked batch)
  mnv2::gpu::DeviceBuffer da, db, dbias, dres, dc, dwork;
  int64_t work_floats = 0;

  double flop() const { return 2.0 * static_cast<double>(m) * layer.cout * layer.cin; }
  k::PointwiseConvParams params() const {
    k::PointwiseConvParams p;
    p.pixels = m;
    p.in_channels = layer.cin;
    p.out_channels = layer.cout;
    p.input = static_cast<const float*>(da.get());
    p.weight = static_cast<const float*>(db.get());
    p.bias = static_cast<const float*>(dbias.get());
    p.clip = layer.clip ? k::Clip{true, 0.0f, 6.0f} : k::Clip{};
    p.residual = layer.residual ? static_cast<const float*>(dres.get()) : nullptr;
    p.output = static_cast<float*>(dc.get());
    p.workspace = static_cast<float*>(dwork.get());
    return p;
  }
};

// The variants timed for one problem: the cost model's choice (what the planner picks: split-K allowed, the
// separate reduction pass, CudaOptions' default) and each tile forced.
struct Variants {
  k::GemmVariant chosen;
  bool from_table = false;  // chosen from the measured tile table (gemm_tile_rules.h), not the cost model
  std::vector<k::GemmVariant> forced;
};

// Split-K partials beyond this are not worth a forced tile's timing (the cost model never splits large M).
constexpr int64_t kMaxWorkspaceBytes = int64_t{8} << 30;

Variants variants_for(const GemmLayer& g, int64_t m, const mnv2::GpuProperties& gpu, const k::DeviceCaps& caps) {
  const k::GemmShape s{static_cast<int>(m), g.cout, g.cin, 1, g.cin % 4 == 0 && g.cout % 4 == 0};
  Variants v;
  // The planner's choice: the measured tile table's where it lists the shape for this GPU, else the cost model's.
  k::GemmTile table_tile{};
  v.from_table = mnv2::measured_gemm_tile(gpu, s, &table_tile);
  v.chosen = k::choose_gemm_variant(s, caps, true, v.from_table ? &table_tile : nullptr);
  for (k::GemmTile t : kTiles) {
    const k::GemmVariant f = k::choose_gemm_variant(s, caps, true, &t);
    if (k::gemm_workspace_floats(s.m, s.n, f) * 4 > kMaxWorkspaceBytes) {
      std::printf("  (%s left out at m %lld: its split-K workspace exceeds 8 GiB)\n", k::to_string(f).c_str(),
                  static_cast<long long>(m));
      continue;
    }
    v.forced.push_back(f);
  }
  return v;
}

Problem make_problem(const GemmLayer& g, int batch, const Variants& v, bool keep_host, uint64_t seed) {
  Problem p;
  p.layer = g;
  p.batch = batch;
  p.m = static_cast<int64_t>(batch) * g.h * g.w;
  const size_t a_n = static_cast<size_t>(p.m) * g.cin, c_n = static_cast<size_t>(p.m) * g.cout;
  p.a.resize(a_n);
  p.b.resize(static_cast<size_t>(g.cin) * g.cout);
  p.bias.resize(static_cast<size_t>(g.cout));
  fill(p.a, seed);
  fill(p.b, seed + 1);
  fill(p.bias, seed + 2);
  // Weights scaled as a trained layer's (unit-variance outputs), so the clip bites on some outputs only.
  const float scale = 1.0f / std::sqrt(static_cast<float>(g.cin));
  for (float& x : p.b) x *= 2.0f * scale;
  p.da = mnv2::gpu::DeviceBuffer(a_n * sizeof(float));
  p.db = mnv2::gpu::DeviceBuffer(p.b.size() * sizeof(float));
  p.dbias = mnv2::gpu::DeviceBuffer(p.bias.size() * sizeof(float));
  p.dc = mnv2::gpu::DeviceBuffer(c_n * sizeof(float));
  MNV2_CHECK_CUDA(cudaMemcpy(p.da.get(), p.a.data(), a_n * sizeof(float), cudaMemcpyHostToDevice));
  MNV2_CHECK_CUDA(cudaMemcpy(p.db.get(), p.b.data(), p.b.size() * sizeof(float), cudaMemcpyHostToDevice));
  MNV2_CHECK_CUDA(cudaMemcpy(p.dbias.get(), p.bias.data(), p.bias.size() * sizeof(float), cudaMemcpyHostToDevice));
  if (g.residual) {
    p.residual.resize(c_n);
    fill(p.residual, seed + 3);
    p.dres = mnv2::gpu::DeviceBuffer(c_n * sizeof(float));
    MNV2_CHECK_CUDA(cudaMemcpy(p.dres.get(), p.residual.data(), c_n * sizeof(float), cudaMemcpyHostToDevice));
  }
  p.work_floats = k::gemm_workspace_floats(static_cast<int>(p.m), g.cout, v.chosen);
  for (const k::GemmVariant& f : v.forced)
    p.work_floats = std::max(p.work_floats, k::gemm_workspace_floats(static_cast<int>(p.m), g.cout, f));
  if (p.work_floats > 0) p.dwork = mnv2::gpu::DeviceBuffer(static_cast<size_t>(p.work_floats) * sizeof(float));
  if (!keep_host) {
    p.a = {};
    p.residual = {};
  }
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());  // the uploads are done before the bench's (non-blocking) stream starts
  return p;
}

// cuBLAS on the row-major GEMM: cuBLAS is column-major, so it computes C^T [N x M] = B^T [N x K] * A^T [K x M],
// the same memory. Strict FP32: CUBLAS_COMPUTE_32F_PEDANTIC under CUBLAS_PEDANTIC_MATH (no TF32, no reduced-precision
// reductions).
void cublas_gemm(cublasHandle_t h, const Problem& p, float* c) {
  const float one = 1.0f, zero = 0.0f;
  MNV2_CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.layer.cout, static_cast<int>(p.m), p.layer.cin, &one,
                                 p.db.get(), CUDA_R_32F, p.layer.cout, p.da.get(), CUDA_R_32F, p.layer.cin, &zero, c,
                                 CUDA_R_32F, p.layer.cout, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
}

// ---- checking --------------------------------------------------------------------------------------------------

struct Error64 {
  double rel_l2 = 0, max_rel = 0;  // max_rel: the largest |got - ref| over the largest |ref|
  int64_t non_finite = 0;
  bool gross() const { return non_finite > 0 || !(rel_l2 < 1e-4); }
};

// The float64 result of the problem, with or without the epilogue (bias, clip, residual).
std::vector<double> reference(const Problem& p, bool epilogue) {
  const int64_t M = p.m;
  const int N = p.layer.cout, K = p.layer.cin;
  std::vector<double> ref(static_cast<size_t>(M) * N, 0.0);
  for (int64_t i = 0; i < M; ++i) {
    double* row = ref.data() + static_cast<size_t>(i) * N;
    for (int kk = 0; kk < K; ++kk) {
      const double av = p.a[static_cast<size_t>(i * K + kk)];
      const float* brow = p.b.data() + static_cast<size_t>(kk) * N;
      for (int j = 0; j < N; ++j) row[j] += av * brow[j];
    }
    if (!epilogue) continue;
    for (int j = 0; j < N; ++j) {
      row[j] += p.bias[static_cast<size_t>(j)];
      if (p.layer.clip) row[j] = std::min(std::max(row[j], 0.0), 6.0);
      if (p.layer.residual) row[j] += p.residual[static_cast<size_t>(i * N + j)];
    }
  }
  return ref;
}

Error64 compare(const std::vector<float>& got, const std::vector<double>& ref) {
  double num = 0, den = 0, max_err = 0, max_ref = 0;
  Error64 e;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++e.non_finite;
      continue;
    }
    const double d = got[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
    max_err = std::max(max_err, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(ref[i]));
  }
  if (got.size() != ref.size()) e.non_finite = std::max<int64_t>(e.non_finite, 1);
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  e.max_rel = max_ref > 0 ? max_err / max_ref : max_err;
  return e;
}

std::vector<float> download(const Problem& p, const void* c) {
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> host(static_cast<size_t>(p.m) * p.layer.cout);
  MNV2_CHECK_CUDA(cudaMemcpy(host.data(), c, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

// Every float NaN, finished before the next launch (the bench's stream does not wait for the legacy stream).
void poison(const Problem& p, void* c) {
  MNV2_CHECK_CUDA(cudaMemset(c, 0xFF, static_cast<size_t>(p.m) * p.layer.cout * sizeof(float)));
  MNV2_CHECK_CUDA(cudaDeviceSynchronize());
}

// ---- output ------------------------------------------------------------------------------------------------------

struct Measured {
  std::string variant;
  Timing t;
  double tflop_s = 0;
};

struct Row {
  GemmLayer layer;
  int64_t m = 0;
  double flop = 0;
  Measured ours;
  bool ours_from_table = false;
  std::vector<Measured> tiles;
  Measured best;  // the fastest forced tile
  Measured cublas;
};

Measured measured(const std::string& variant, const Timing& t, double flop) {
  return Measured{variant, t, t.median_ms > 0 ? flop / (t.median_ms * 1e-3) / 1e12 : 0.0};
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

std::string json(const Measured& m) {
  std::ostringstream s;
  s.precision(6);
  s << "{\"variant\": " << json_string(m.variant) << ", \"median_ms\": " << m.t.median_ms
    << ", \"min_ms\": " << m.t.min_ms << ", \"mean_ms\": " << m.t.mean_ms << ", \"max_ms\": " << m.t.max_ms
    << ", \"p90_ms\": " << m.t.p90_ms << ", \"cv\": " << m.t.cv << ", \"n\": " << m.t.n
    << ", \"tflop_s\": " << m.tflop_s << "}";
  return s.str();
}

// Sum of FLOPs over sum of median times (weighted by the layer count for the network figure).
struct Weighted {
  double flop = 0, ours_ms = 0, best_ms = 0, cublas_ms = 0;
  void add(const Row& r, int weight) {
    flop += weight * r.flop;
    ours_ms += weight * r.ours.t.median_ms;
    best_ms += weight * r.best.t.median_ms;
    cublas_ms += weight * r.cublas.t.median_ms;
  }
  static double rate(double flop, double ms) { return ms > 0 ? flop / (ms * 1e-3) / 1e12 : 0; }
  std::string json() const {
    std::ostringstream s;
    s.precision(6);
    s << "{\"flop\": " << flop << ", \"ours_ms\": " << ours_ms << ", \"best_tile_ms\": " << best_ms
      << ", \"cublas_ms\": " << cublas_ms << ", \"ours_tflop_s\": " << rate(flop, ours_ms)
      << ", \"best_tile_tflop_s\": " << rate(flop, best_ms) << ", \"cublas_tflop_s\": " << rate(flop, cublas_ms)
      << ", \"ours_time_over_cublas\": " << (cublas_ms > 0 ? ours_ms / cublas_ms : 0) << "}";
    return s.str();
  }
};

struct Options {
  std::vector<int> batches{1, 8, 64, 256};
  int warmup = 20, iters = 200, check_batch = 1, device = 0, input_hw = 224;
  std::string json, model;
};

Options parse(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("MNV2_MODEL"); env && *env) o.model = env;
  CLI::App app("The cuda backend's strict-FP32 1x1-convolution GEMMs against cuBLAS SGEMM on MobileNetV2's shapes.",
               "mnv2_gemm_bench");
  app.add_option("--batch", o.batches, "batches, comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed repetitions")->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--iters", o.iters, "timed repetitions")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--check-batch", o.check_batch, "the batch checked against the reference (0: none)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--device", o.device, "CUDA device ordinal")->check(CLI::Range(0, 1023))->capture_default_str();
  app.add_option("--model", o.model, "the ONNX model (default $MNV2_MODEL, else the built-in MobileNetV2)")
      ->check(CLI::ExistingFile);
  app.add_option("--json", o.json, "write the results here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // --help: 0, after printing; a usage error: its message
    std::exit(rc == 0 ? 0 : 2);
  }
  return o;
}

int run(const Options& o) {
  const mnv2::Model model = o.model.empty() ? mnv2::builtin_mobilenet_v2() : mnv2::load_onnx(o.model);
  const std::vector<GemmLayer> layers = pointwise_layers(model, o.input_hw);
  int total = 0;
  for (const GemmLayer& g : layers) total += g.count;
  std::printf("model %s: %zu distinct 1x1 GEMMs (%d layers) at %dx%d\n", model.source.c_str(), layers.size(), total,
              o.input_hw, o.input_hw);
  bool as_expected = layers.size() == std::size(kExpected);
  for (size_t i = 0; as_expected && i < layers.size(); ++i) {
    const int* e = kExpected[i];
    const GemmLayer& g = layers[i];
    as_expected =
        g.cin == e[0] && g.cout == e[1] && g.h == e[2] && g.w == e[2] && g.residual == (e[3] != 0) && g.count == e[4];
  }
  std::printf("topology: %s MobileNetV2 1.0's list (block 1's projection, 17 expansions and projections, the head)\n",
              as_expected ? "matches" : "DIFFERS FROM");
  for (const GemmLayer& g : layers)
    std::printf("  %-14s %4d->%4d @%dx%d%s%s x%d\n", g.first_name.c_str(), g.cin, g.cout, g.h, g.w,
                g.clip ? " +clip" : "", g.residual ? " +residual" : "", g.count);

  MNV2_CHECK_CUDA(cudaSetDevice(o.device));
  const mnv2::GpuProperties gpu = mnv2::gpu::read_gpu_properties(o.device);
  const k::DeviceCaps caps = mnv2::cuda_backend::device_caps(gpu);
  std::printf("device %d: %s, %d SMs\n", o.device, gpu.name.c_str(), gpu.sm_count);
  mnv2::gpu::Stream stream = mnv2::gpu::make_stream();
  mnv2::gpu::CublasHandle cublas = mnv2::gpu::make_cublas_handle();
  MNV2_CHECK_CUBLAS(cublasSetStream(cublas.get(), stream.get()));
  MNV2_CHECK_CUBLAS(cublasSetMathMode(cublas.get(), CUBLAS_PEDANTIC_MATH));

  // 1. Correctness at the check batch: every variant once, against float64.
  bool gross = false;
  std::ostringstream check_json;
  if (o.check_batch > 0) {
    std::printf("\ncheck at batch %d against a float64 host GEMM (relative L2 error; max |err| / max |ref|):\n",
                o.check_batch);
    bool first = true;
    for (const GemmLayer& g : layers) {
      const int64_t m = static_cast<int64_t>(o.check_batch) * g.h * g.w;
      const Variants v = variants_for(g, m, gpu, caps);
      Problem p = make_problem(g, o.check_batch, v, true, 7);
      std::vector<k::GemmVariant> all{v.chosen};
      all.insert(all.end(), v.forced.begin(), v.forced.end());
      const std::vector<double> ref = reference(p, true), ref_gemm = reference(p, false);
      double worst = 0;
      for (const k::GemmVariant& var : all) {
        poison(p, p.dc.get());
        k::launch_pointwise_conv(p.params(), var, stream.get());
        const Error64 e = compare(download(p, p.dc.get()), ref);
        worst = std::max(worst, e.rel_l2);
        if (e.gross()) {
          gross = true;
          std::printf("  GROSS ERROR %4d->%4d @%3d m %lld %s: rel L2 %.3g, max rel %.3g, %lld non-finite\n", g.cin,
                      g.cout, g.h, static_cast<long long>(m), k::to_string(var).c_str(), e.rel_l2, e.max_rel,
                      static_cast<long long>(e.non_finite));
        }
        check_json << (first ? "" : ",\n    ") << "{\"cin\": " << g.cin << ", \"cout\": " << g.cout
                   << ", \"hw\": " << g.h << ", \"m\": " << m << ", \"variant\": " << json_string(k::to_string(var))
                   << ", \"rel_l2\": " << e.rel_l2 << ", \"max_rel\": " << e.max_rel
                   << ", \"non_finite\": " << e.non_finite << "}";
        first = false;
      }
      poison(p, p.dc.get());
      cublas_gemm(cublas.get(), p, static_cast<float*>(p.dc.get()));
      const Error64 ec = compare(download(p, p.dc.get()), ref_gemm);
      if (ec.gross()) gross = true;
      check_json << ",\n    {\"cin\": " << g.cin << ", \"cout\": " << g.cout << ", \"hw\": " << g.h << ", \"m\": " << m
                 << ", \"variant\": \"cublas pedantic (gemm only)\", \"rel_l2\": " << ec.rel_l2
                 << ", \"max_rel\": " << ec.max_rel << ", \"non_finite\": " << ec.non_finite << "}";
      std::printf("  %4d->%4d @%3d m %6lld: %zu variants, worst rel L2 %.2e; cuBLAS %.2e (max rel %.2e)\n", g.cin,
                  g.cout, g.h, static_cast<long long>(m), all.size(), worst, ec.rel_l2, ec.max_rel);
    }
  }

  // 2. Timing.
  std::ostringstream out;
  out << "{\n  \"program\": \"mnv2_gemm_bench\",\n  \"device\": " << json_string(gpu.name)
      << ",\n  \"sms\": " << gpu.sm_count << ",\n  \"model\": " << json_string(model.source)
      << ",\n  \"topology_as_expected\": " << (as_expected ? "true" : "false")
      << ",\n  \"timing\": \"cudaEvent pair per repetition on one stream, median of iters after warmup; L2 not "
         "flushed\""
      << ",\n  \"flop\": \"2 * m * n * k\""
      << ",\n  \"ours\": \"launch_pointwise_conv with the planner's variant (the measured tile table's where it lists "
         "the shape, "
         "else the cost model's; split-K: separate reduction pass), "
         "bias + clip + residual as the layer has them\""
      << ",\n  \"cublas\": \"cublasGemmEx CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_PEDANTIC_MATH, CUBLAS_GEMM_DEFAULT; GEMM "
         "only "
         "(no epilogue)\""
      << ",\n  \"warmup\": " << o.warmup << ",\n  \"iters\": " << o.iters << ",\n  \"batches\": [";
  for (size_t bi = 0; bi < o.batches.size(); ++bi) {
    const int batch = o.batches[bi];
    std::printf("\nbatch %d (median of %d after %d warm-up; TFLOP/s = 2MNK / median)\n", batch, o.iters, o.warmup);
    std::printf("%-18s %8s | %-28s %8s %6s | %-24s %6s | %8s %6s | %s\n", "cin->cout @map", "m", "ours (cost model)",
                "ms", "TF/s", "best forced tile", "TF/s", "cuBLAS ms", "TF/s", "ours/cuBLAS time");
    Weighted distinct, network;
    std::vector<Row> rows;
    for (const GemmLayer& g : layers) {
      Row r;
      r.layer = g;
      r.m = static_cast<int64_t>(batch) * g.h * g.w;
      const Variants v = variants_for(g, r.m, gpu, caps);
      Problem p = make_problem(g, batch, v, false, 11);
      r.flop = p.flop();
      const k::PointwiseConvParams params = p.params();
      cudaStream_t s = stream.get();
      r.ours_from_table = v.from_table;
      r.ours = measured(k::to_string(v.chosen),
                        time_it(s, o.warmup, o.iters, [&] { k::launch_pointwise_conv(params, v.chosen, s); }), r.flop);
      for (const k::GemmVariant& f : v.forced) {
        r.tiles.push_back(measured(
            k::to_string(f), time_it(s, o.warmup, o.iters, [&] { k::launch_pointwise_conv(params, f, s); }), r.flop));
        if (r.best.variant.empty() || r.tiles.back().t.median_ms < r.best.t.median_ms) r.best = r.tiles.back();
      }
      // cuBLAS writes its own output (the same size), so ours stays untouched for nothing else to read.
      mnv2::gpu::DeviceBuffer dc2(static_cast<size_t>(r.m) * g.cout * sizeof(float));
      float* c2 = static_cast<float*>(dc2.get());
      r.cublas =
          measured("cublas pedantic", time_it(s, o.warmup, o.iters, [&] { cublas_gemm(cublas.get(), p, c2); }), r.flop);
      MNV2_CHECK_CUDA(cudaGetLastError());
      char name[64];
      std::snprintf(name, sizeof name, "%d->%d @%d%s", g.cin, g.cout, g.h, g.residual ? " +res" : "");
      std::printf("%-18s %8lld | %-28s %8.4f %6.2f | %-24s %6.2f | %8.4f %6.2f | %.2f\n", name,
                  static_cast<long long>(r.m), r.ours.variant.c_str(), r.ours.t.median_ms, r.ours.tflop_s,
                  r.best.variant.c_str(), r.best.tflop_s, r.cublas.t.median_ms, r.cublas.tflop_s,
                  r.cublas.t.median_ms > 0 ? r.ours.t.median_ms / r.cublas.t.median_ms : 0.0);
      std::fflush(stdout);
      distinct.add(r, 1);
      network.add(r, g.count);
      rows.push_back(std::move(r));
    }
    const double ours_tf = Weighted::rate(network.flop, network.ours_ms);
    const double ratio = network.cublas_ms > 0 ? network.ours_ms / network.cublas_ms : 0;
    std::printf(
        "time-weighted over the network's 1x1 GEMMs (each layer counted): ours %.2f TFLOP/s, best tile %.2f, "
        "cuBLAS %.2f; ours/cuBLAS time %.3f\n",
        ours_tf, Weighted::rate(network.flop, network.best_ms), Weighted::rate(network.flop, network.cublas_ms), ratio);
    std::printf("time-weighted over the distinct shapes: ours %.2f TFLOP/s, best tile %.2f, cuBLAS %.2f\n",
                Weighted::rate(distinct.flop, distinct.ours_ms), Weighted::rate(distinct.flop, distinct.best_ms),
                Weighted::rate(distinct.flop, distinct.cublas_ms));
    std::printf("issue 32 bar (informational): >= 40 TFLOP/s %s; within 10%% of cuBLAS %s\n",
                ours_tf >= 40 ? "HELD" : "not held", ratio > 0 && ratio <= 1.1 ? "HELD" : "not held");

    out << (bi ? "," : "") << "\n    {\"batch\": " << batch << ", \"rows\": [";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << (i ? "," : "") << "\n      {\"layer\": " << json_string(r.layer.first_name) << ", \"cin\": " << r.layer.cin
          << ", \"cout\": " << r.layer.cout << ", \"hw\": " << r.layer.h << ", \"m\": " << r.m
          << ", \"n\": " << r.layer.cout << ", \"k\": " << r.layer.cin
          << ", \"clip\": " << (r.layer.clip ? "true" : "false")
          << ", \"residual\": " << (r.layer.residual ? "true" : "false") << ", \"count\": " << r.layer.count
          << ", \"flop\": " << r.flop << ",\n       \"ours\": " << json(r.ours)
          << ", \"ours_from_table\": " << (r.ours_from_table ? "true" : "false")
          << ",\n       \"best_tile\": " << json(r.best) << ",\n       \"cublas\": " << json(r.cublas)
          << ",\n       \"ours_time_over_cublas\": "
          << (r.cublas.t.median_ms > 0 ? r.ours.t.median_ms / r.cublas.t.median_ms : 0) << ",\n       \"tiles\": [";
      for (size_t t = 0; t < r.tiles.size(); ++t) out << (t ? ",\n         " : "") << json(r.tiles[t]);
      out << "]}";
    }
    out << "],\n     \"weighted_network\": " << network.json() << ",\n     \"weighted_distinct\": " << distinct.json()
        << ",\n     \"bar_40_tflop_s\": " << (ours_tf >= 40 ? "true" : "false")
        << ", \"bar_within_10pct_of_cublas\": " << (ratio > 0 && ratio <= 1.1 ? "true" : "false") << "}";
  }
  out << "\n  ],\n  \"check_batch\": " << o.check_batch << ",\n  \"check_gross_error\": " << (gross ? "true" : "false")
      << ",\n  \"check\": [\n    " << check_json.str() << "\n  ]\n}\n";
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    f << out.str();
    if (!f) throw Error("mnv2_gemm_bench: cannot write " + o.json);
    std::printf("\nJSON: %s\n", o.json.c_str());
  }
  if (gross) std::printf("\nFAILED: a variant's result is grossly wrong (see GROSS ERROR above)\n");
  return gross ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnv2_gemm_bench: %s\n", e.what());
    return 2;
  }
}
