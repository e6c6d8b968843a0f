// What only the cudnn backend does, on a GPU; the contract every GPU backend keeps in every variant and precision
// (logits, every layer against the cpu reference, the graph against layer-by-layer runs, observers, refusals,
// memory) is test_gpu_backend_contract.cpp. Here: its description, the naive variant's padded copies and Find's
// algorithm per convolution, the fused variant's groups and engines (no tensor-core engine in strict fp32), the
// variants naming their precision, the plan cache (read back, bad files ignored, stale entries re-tuned), and the
// layers cuDNN cannot run. Every test skips with a message where there is no CUDA device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cudnn/plan_cache.h"  // the plan cache file and the process's plans
#include "gpu_backend_test_support.h"
#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/model.h"
#include "mnv2/tensor.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

using cudnn_backend::clear_process_plans;
using cudnn_backend::PlanCache;

// Float32 throughout, like the cpu reference; only the summation order differs.
const double kMaxRelL2 = precision_logits_bound(Precision::fp32);

CudnnOptions naive_options() {
  CudnnOptions o;
  o.variant = CudnnOptions::Variant::naive;
  return o;
}

class CudnnBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): cudnn tests skipped";
    backend_ = make_backend("cudnn");
    const Availability a = backend_->availability();
    ASSERT_TRUE(a.available) << "a CUDA device is present but cudnn is unavailable: " << a.reason;
    test_cache_file();
  }

  std::unique_ptr<PreparedNet> prepare(const Model& model, int batch, int height, int width,
                                       const CudnnOptions& options = {}) const {
    PrepareConfig config;
    config.batch = batch;
    config.height = height;
    config.width = width;
    config.cudnn = options;
    return backend_->prepare(model, config);
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(CudnnBackendTest, DescribesItselfWithVersionAndGpu) {
  const std::string text = backend_->description();
  EXPECT_NE(text.find("cuDNN"), std::string::npos) << text;
  EXPECT_NE(text.find(cuda_environment().devices.front().name), std::string::npos) << text;
  std::printf("cudnn backend: %s\n", text.c_str());
}

// The naive variant's legacy convolution pads symmetrically: exactly the asymmetric convolutions of the table add a
// padded copy, and say so. (Every shape against the cpu reference: the contract.)
TEST_F(CudnnBackendTest, NaiveVariantPadsAsymmetricConvolutionsByACopy) {
  const ConvCase cases[] = {
      {3, 8, 3, 3, 2, 2, 0, 0, 1, 1, 1, 16, 16, true},  // the main model's stem
      {8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 9, 9, true},    // symmetric depthwise
      {6, 4, 3, 3, 2, 2, 1, 0, 0, 2, 2, 11, 10, true},  // extra rows on top, extra columns on the right
      {4, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 7, 5, false},   // pointwise without bias
      {4, 4, 3, 3, 1, 1, 2, 0, 0, 3, 1, 6, 7, true},    // pads larger than one side needs
  };
  std::mt19937_64 gen(fresh_seed());
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(describe_case(c));
    auto net = prepare(single_conv_model(c, gen), 2, c.height, c.width, naive_options());
    const bool asymmetric = c.pad_top != c.pad_bottom || c.pad_left != c.pad_right;
    EXPECT_EQ(net->steps()[0].variant.find("+padcopy") != std::string::npos, asymmetric) << net->steps()[0].variant;
  }
}

// The reduced modes' steps name the precision they run in.
TEST_F(CudnnBackendTest, ReducedPrecisionVariantsNameTheirPrecision) {
  for (Precision p : {Precision::tf32, Precision::fp16}) {
    SCOPED_TRACE(to_string(p));
    ASSERT_TRUE(backend_->supports(p));
    PrepareConfig config;
    config.precision = p;
    auto net = backend_->prepare(main_model(), config);
    bool mode_named = false;
    for (const ExecStep& s : net->steps()) mode_named = mode_named || s.variant.find(to_string(p)) != std::string::npos;
    EXPECT_TRUE(mode_named) << "the variants name the precision";
  }
}

TEST_F(CudnnBackendTest, RefusesUnsupportedLayers) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) EXPECT_TRUE(backend_->supports(p));
  for (const Layer& l : main_model().layers) EXPECT_FALSE(backend_->unsupported_reason(l)) << describe(l);

  Layer dilated = main_model().layers.front();
  dilated.conv.dilation_h = 2;
  EXPECT_TRUE(backend_->unsupported_reason(dilated));
  Layer leaky;
  leaky.kind = LayerKind::ReLU;
  leaky.inputs = {0};
  leaky.clip_min = -1.0f;
  leaky.clip_max = 6.0f;
  EXPECT_TRUE(backend_->unsupported_reason(leaky));
  Model bad = main_model();
  bad.layers.front().conv.dilation_w = 2;
  EXPECT_THROW(backend_->prepare(bad, PrepareConfig{}), Error);
}

// Prints the algorithm Find chose for each convolution (and checks each is a direct-summation one).
TEST_F(CudnnBackendTest, ReportsTheChosenAlgorithmPerConvolution) {
  for (int batch : {1, 64}) {
    auto net = prepare(main_model(), batch, 224, 224, naive_options());
    std::printf("batch %d:\n", batch);
    const std::vector<ExecStep>& steps = net->steps();
    const std::vector<LayerStats> stats = analyse(main_model(), batch, 224, 224);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Layer& layer = main_model().layers[i];
      if (layer.kind != LayerKind::Conv2d) continue;
      const std::string& v = steps[i].variant;
      const bool known = v.rfind("IMPLICIT_GEMM", 0) == 0 || v.rfind("IMPLICIT_PRECOMP_GEMM", 0) == 0 ||
                         v.rfind("GEMM", 0) == 0 || v.rfind("DIRECT", 0) == 0;
      EXPECT_TRUE(known) << v;
      EXPECT_NE(v.find(" ws="), std::string::npos) << v;
      EXPECT_EQ(v.find("+padcopy") != std::string::npos, !layer.conv.symmetric_pads()) << v;
      std::printf("  %-10s %-28s -> %-14s %s\n", steps[i].name.c_str(), describe(layer).c_str(),
                  stats[i].output.str().c_str(), v.c_str());
    }
    const MemoryReport m = net->memory();
    std::printf("  memory: weights %lld B, activations %lld B, workspace %lld B\n",
                static_cast<long long>(m.weight_bytes), static_cast<long long>(m.activation_bytes),
                static_cast<long long>(m.workspace_bytes));
  }
}

// ---- the fused variant -----------------------------------------------------------------------------------

// Each convolution and the ReLU6 or residual add after it are one step; strict fp32 plans carry no
// tensor-core, down-conversion, FFT or Winograd note; every step's variant says what runs.
TEST_F(CudnnBackendTest, FusedStepsCoverConvolutionGroupsAndStrictFp32HasNoTensorCoreEngine) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
    SCOPED_TRACE(to_string(p));
    PrepareConfig config;
    config.precision = p;
    auto net = backend_->prepare(main_model(), config);
    const std::vector<ExecStep>& steps = net->steps();
    EXPECT_LT(steps.size(), main_model().layers.size());
    int graphs = 0, groups = 0;
    std::printf("fused %s:\n", to_string(p));
    for (const ExecStep& s : steps) {
      const Layer& first = main_model().layers[static_cast<size_t>(s.layers.front())];
      if (first.kind == LayerKind::Conv2d) {
        ++groups;
        if (s.variant.rfind("graph ", 0) == 0) ++graphs;
        // A conv followed by its ReLU6 is one step.
        const size_t next = static_cast<size_t>(s.layers.front()) + 1;
        if (next < main_model().layers.size() && main_model().layers[next].kind == LayerKind::ReLU6)
          EXPECT_GE(s.layers.size(), 2u) << s.name;
      }
      if (p == Precision::fp32)
        for (const char* note : {"tensor_core", "down_convert", "fft", "winograd", "reduced_precision"})
          EXPECT_EQ(s.variant.find(note), std::string::npos) << s.name << ": " << s.variant;
      std::printf("  %-40s %s\n", s.name.c_str(), s.variant.c_str());
    }
    std::printf("  %d of %d convolution groups run as one cuDNN operation graph\n", graphs, groups);
    EXPECT_GT(graphs, 0);
  }
}

std::string first_graph_variant(const PreparedNet& net) {
  for (const ExecStep& s : net.steps())
    if (s.variant.rfind("graph ", 0) == 0) return s.variant;
  return {};
}

// The second prepare takes its plans from the cache file and gives bitwise the same output; a corrupt file is
// ignored with a warning (and rewritten); an entry whose engine no longer finalizes is re-tuned.
TEST_F(CudnnBackendTest, PlanCacheIsReadBackAndBadFilesAreIgnored) {
  const std::string file = test_cache_file();
  std::filesystem::remove(file);
  clear_process_plans();
  const Tensor input = random_input(Shape{1, 3, 224, 224}, fresh_seed());
  auto first = prepare(main_model(), 1, 224, 224);
  const std::string tuned = first_graph_variant(*first);
  EXPECT_EQ(tuned.find("cached"), std::string::npos) << tuned;
  const Tensor a = first->run(input);
  first.reset();
  std::string warning;
  const PlanCache cache = PlanCache::load(file, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_GT(cache.size(), 0u);

  clear_process_plans();
  auto second = prepare(main_model(), 1, 224, 224);
  for (const ExecStep& s : second->steps())
    if (s.variant.rfind("graph ", 0) == 0)
      EXPECT_NE(s.variant.find("cached (plan cache file)"), std::string::npos) << s.variant;
  const Tensor b = second->run(input);
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)), 0);
  second.reset();

  {  // corrupt: ignored, the net still prepares (tuning again), the file is rewritten valid
    std::ofstream(file, std::ios::trunc) << "{\"format\": \"mnv2-cudnn-plan-cache\", \"version\": 1, \"entr";
  }
  clear_process_plans();
  auto third = prepare(main_model(), 1, 224, 224);
  EXPECT_NE(third->description().find("ignored"), std::string::npos) << third->description();
  const Tensor c = third->run(input);
  EXPECT_LT(rel_l2_of(c, a), kMaxRelL2);
  third.reset();
  warning.clear();
  EXPECT_GT(PlanCache::load(file, &warning).size(), 0u);
  EXPECT_TRUE(warning.empty()) << warning;

  {  // every entry names an engine that does not exist: re-tuned
    PlanCache bad = PlanCache::load(file, nullptr);
    PlanCache rewritten = PlanCache::parse(bad.dump());
    std::string text = rewritten.dump();
    for (size_t at = text.find("\"engine\": "); at != std::string::npos; at = text.find("\"engine\": ", at + 1)) {
      const size_t end = text.find_first_of(",\n}", at + 10);
      text.replace(at + 10, end - at - 10, "987654");
    }
    std::ofstream(file, std::ios::trunc) << text;
  }
  clear_process_plans();
  auto fourth = prepare(main_model(), 1, 224, 224);
  const std::string retuned = first_graph_variant(*fourth);
  EXPECT_NE(retuned.find("re-tuned"), std::string::npos) << retuned;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace mnv2::test
