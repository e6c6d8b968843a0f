// The kernel lab on the GPU (issue 18): the example kernels through the whole lab (compile in this process,
// check and time in a worker process): naive and improved pass, the wrong one is caught at the right layer and
// element, the out-of-bounds one crashes only its worker, the broken one reports its line. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "mnv2/device.h"
#include "mnv2/lab.h"
#include "mnv2/model.h"
#include "mnv2/model_lookup.h"
#include "test_support.h"

namespace mnv2 {
namespace {

namespace fs = std::filesystem;

// The examples and the mnv2 program (whose worker runs the kernels): beside this test program as the device
// bundle and the package lay them out, else the build tree's.
std::string examples_dir() {
  if (const char* d = std::getenv("MNV2_LAB_EXAMPLES_DIR"); d != nullptr && *d != '\0') return d;
  const fs::path beside = fs::path(executable_dir()).parent_path() / "share" / "mnv2-profiler" / "lab" / "examples";
  return fs::exists(beside) ? beside.string() : std::string(MNV2_LAB_EXAMPLES_DIR);
}
std::string mnv2_program() {
  const fs::path beside = fs::path(executable_dir()) / "mnv2";
  return fs::exists(beside) ? beside.string() : std::string(MNV2_CLI_PATH_BUILD);
}

class LabGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env.why_none << "): kernel lab GPU tests skipped";
    test::synced_setenv("MNV2_CACHE_DIR", dir_.file("cache").c_str(), 1);
  }
  LabConfig config(const std::string& example, Precision p = Precision::fp32, int batch = 2) {
    LabConfig c;
    c.slot = "depthwise";
    c.kernel_file = examples_dir() + "/" + example;
    c.precision = p;
    c.batch = batch;
    c.no_time = true;
    c.timeout_s = 120;
    c.program = mnv2_program();
    c.model_path = locate_model("", executable_dir()).path;
    return c;
  }
  test::TempDir dir_;
};

void expect_all_passed(const LabResult& r, size_t layers) {
  EXPECT_EQ(r.status, "passed") << r.message;
  EXPECT_EQ(lab_exit_code(r), 0);
  ASSERT_EQ(r.layers.size(), layers) << r.message;
  for (const LabLayer& l : r.layers) {
    ASSERT_TRUE(l.check) << "layer " << l.index << " " << l.name;
    EXPECT_TRUE(l.check->passed) << "layer " << l.index << " " << l.name;
    EXPECT_FALSE(l.check->first_failure);
    EXPECT_LE(l.check->rel_l2_vs_reference, l.check->bound);
  }
}

TEST_F(LabGpu, NaivePassesEveryDepthwiseLayerAndIsTimedBesideOursAndCudnn) {
  LabConfig c = config("dw_naive.cu");
  c.no_time = false;
  c.runs = 10;
  const LabResult r = run_lab(c);
  expect_all_passed(r, 17);
  EXPECT_TRUE(r.has_launch);
  EXPECT_EQ(r.block[0], 256);
  // Timed: every replaced layer has its own, our and cuDNN's kernel time, and the end-to-end figures exist
  // (their values are benchmark figures, not checked here).
  for (const LabLayer& l : r.layers) {
    EXPECT_TRUE(l.user_us && *l.user_us > 0) << l.index;
    EXPECT_TRUE(l.ours_us && *l.ours_us > 0) << l.index;
    EXPECT_TRUE(l.cudnn_us.has_value()) << l.index;
    EXPECT_TRUE(l.flops && *l.flops > 0) << l.index;
    EXPECT_TRUE(l.bytes && *l.bytes > 0) << l.index;
  }
  ASSERT_TRUE(r.end_to_end);
  EXPECT_TRUE(r.end_to_end->user_ms && r.end_to_end->ours_unfused_ms && r.end_to_end->cudnn_ms);
}

TEST_F(LabGpu, ImprovedPassesInFp32AndFp16WithOddBatch) {
  expect_all_passed(run_lab(config("dw_improved.cu", Precision::fp32, 3)), 17);
  expect_all_passed(run_lab(config("dw_improved.cu", Precision::fp16, 3)), 17);
  expect_all_passed(run_lab(config("dw_naive.cu", Precision::fp16, 1)), 17);
}

TEST_F(LabGpu, ChosenLayersOnly) {
  LabConfig c = config("dw_naive.cu");
  const std::vector<int> all = lab_slot_layers(load_located_model(ModelLocation{c.model_path, "", {}}), "depthwise");
  c.layers = {all[1], all[5]};
  const LabResult r = run_lab(c);
  expect_all_passed(r, 2);
  EXPECT_EQ(r.layers[0].index, all[1]);
  EXPECT_EQ(r.layers[1].index, all[5]);
}

TEST_F(LabGpu, WrongIsCaughtAtTheFirstLayerWithTheElementAndIsNotTimed) {
  LabConfig c = config("dw_wrong.cu");
  c.no_time = false;
  const LabResult r = run_lab(c);
  EXPECT_EQ(r.status, "check_failed") << r.message;
  EXPECT_EQ(lab_exit_code(r), 1);
  const std::vector<int> all = lab_slot_layers(load_located_model(ModelLocation{c.model_path, "", {}}), "depthwise");
  ASSERT_FALSE(r.layers.empty());
  const LabLayer& first = r.layers.front();
  EXPECT_EQ(first.index, all.front());  // every depthwise layer has pad_left 1: the first one fails
  ASSERT_TRUE(first.check);
  ASSERT_FALSE(first.check->passed);
  ASSERT_TRUE(first.check->first_failure);
  const LabFailure& f = *first.check->first_failure;
  ASSERT_EQ(f.coords.size(), 4u);
  EXPECT_GT(std::abs(f.got - f.expected), first.check->bound);
  EXPECT_NE(r.message.find("layer " + std::to_string(first.index)), std::string::npos) << r.message;
  for (const LabLayer& l : r.layers) EXPECT_FALSE(l.user_us) << "a failing kernel must not be timed";
  EXPECT_FALSE(r.end_to_end);
}

TEST_F(LabGpu, OutOfBoundsCrashesTheWorkerOnlyAndTheCallerGoesOn) {
  const LabResult r = run_lab(config("dw_oob.cu"));
  EXPECT_EQ(r.status, "crashed") << r.message;
  EXPECT_EQ(lab_exit_code(r), 4);
  EXPECT_NE(r.message.find("illegal"), std::string::npos) << r.message;
  EXPECT_NE(r.compute_sanitizer_command.find("compute-sanitizer"), std::string::npos);
  // This process and its CUDA context are untouched: the next kernel runs and passes.
  expect_all_passed(run_lab(config("dw_naive.cu")), 17);
}

TEST_F(LabGpu, ASyntaxErrorReportsItsLineAndNeverStartsAWorker) {
  const LabResult r = run_lab(config("dw_syntax.cu"));
  EXPECT_EQ(r.status, "compile_error");
  EXPECT_EQ(lab_exit_code(r), 3);
  ASSERT_TRUE(r.compile);
  ASSERT_FALSE(r.compile->diagnostics.empty());
  EXPECT_EQ(r.compile->diagnostics[0].line, 28);
  EXPECT_TRUE(r.layers.empty());
}

TEST_F(LabGpu, AHangingKernelIsKilledAtTheTimeOut) {
  const std::string hang = dir_.file("dw_hang.cu");
  // clock64() is an asm volatile read: the loop cannot be optimised away (an empty infinite loop may be).
  test::write_file(hang,
                   "#include \"mnv2_lab/depthwise.h\"\n"
                   "__global__ void spin(const mnv2_lab::DepthwiseParams p) {\n"
                   "  const long long t0 = clock64();\n"
                   "  while (clock64() - t0 >= 0) {}\n"
                   "}\n");
  LabConfig c = config("dw_naive.cu");
  c.kernel_file = hang;
  c.timeout_s = 10;
  const LabResult r = run_lab(c);
  EXPECT_EQ(r.status, "timeout") << r.message;
  EXPECT_EQ(lab_exit_code(r), 4);
}

TEST_F(LabGpu, PointwiseNaivePassesEveryPointwiseLayerInFp32AndFp16) {
  for (Precision p : {Precision::fp32, Precision::fp16}) {
    LabConfig c = config("pw_naive.cu", p, 2);
    c.slot = "pointwise";
    const LabResult r = run_lab(c);
    const std::vector<int> all = lab_slot_layers(load_located_model(ModelLocation{c.model_path, "", {}}), "pointwise");
    expect_all_passed(r, all.size());
    bool residual = false;
    for (const LabLayer& l : r.layers) residual = residual || l.op.find("+res") != std::string::npos;
    EXPECT_TRUE(residual) << "the projections with a residual add run the user's kernel too";
  }
}

// The stem, pool and classifier slots: the naive examples (the templates) pass on their one layer each, fp32 and
// fp16 (where the stem writes half NHWC from the float32 NCHW input, the pool reads and writes half, the classifier
// reads half and writes float32 logits), odd batch; one timed run per slot beside ours and cuDNN.
TEST_F(LabGpu, StemPoolAndClassifierNaivePassInFp32AndFp16) {
  const Model m = load_located_model(ModelLocation{config("dw_naive.cu").model_path, "", {}});
  for (const auto& [slot, example, op] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"stem", "stem_naive.cu", "conv 3x3 s2"},
                                                                      {"pool", "pool_naive.cu", "avgpool"},
                                                                      {"classifier", "fc_naive.cu", "linear"}}) {
    const std::vector<int> layers = lab_slot_layers(m, slot);
    ASSERT_EQ(layers.size(), 1u) << slot;
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      LabConfig c = config(example, p, 3);
      c.slot = slot;
      const LabResult r = run_lab(c);
      SCOPED_TRACE(slot + " " + to_string(p));
      expect_all_passed(r, 1);
      if (r.layers.empty()) continue;
      EXPECT_EQ(r.layers[0].index, layers[0]);
      EXPECT_EQ(r.layers[0].op.rfind(op, 0), 0u) << r.layers[0].op;
      EXPECT_EQ(r.layers[0].shape.rfind("3,", 0), 0u) << r.layers[0].shape;  // the batch
    }
    LabConfig timed = config(example, Precision::fp32, 1);
    timed.slot = slot;
    timed.no_time = false;
    timed.runs = 10;
    const LabResult r = run_lab(timed);
    expect_all_passed(r, 1);
    if (r.layers.empty()) continue;
    EXPECT_TRUE(r.layers[0].user_us && *r.layers[0].user_us > 0) << slot;
    EXPECT_TRUE(r.layers[0].ours_us && *r.layers[0].ours_us > 0) << slot;
    EXPECT_TRUE(r.layers[0].cudnn_us.has_value()) << slot;
    EXPECT_TRUE(r.end_to_end && r.end_to_end->user_ms) << slot;
  }
}

// A bug in each of those kernels is caught at the slot's layer, with the element: proof that the user's kernel,
// not ours, computed the checked output.
TEST_F(LabGpu, StemPoolAndClassifierBugsAreCaughtAtTheirLayer) {
  const Model m = load_located_model(ModelLocation{config("dw_naive.cu").model_path, "", {}});
  for (const auto& [slot, example, from, to] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           // The stem's pads are [0, 0, 1, 1]: dropping pad_left would change nothing; the taps' rows rotated do.
           {"stem", "stem_naive.cu", "p.pad_top + kh * p.dilation_h",
            "p.pad_top + (kh + 1) % p.kernel_h * p.dilation_h"},
           {"pool", "pool_naive.cu", "sum / static_cast<float>(p.plane)", "sum"},  // forgets to divide
           {"classifier", "fc_naive.cu", "n * p.ld_output + o;", "n * p.ld_output + (o + 1) % p.out_features;"}}) {
    SCOPED_TRACE(slot);
    std::string source = test::read_file(examples_dir() + "/" + example);
    const size_t at = source.find(from);
    ASSERT_NE(at, std::string::npos) << example << " changed: update this test";
    source.replace(at, from.size(), to);
    const std::string wrong = dir_.file(slot + "_wrong.cu");
    test::write_file(wrong, source);
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      LabConfig c = config(example, p, 2);
      c.slot = slot;
      c.kernel_file = wrong;
      const LabResult r = run_lab(c);
      EXPECT_EQ(r.status, "check_failed") << r.message;
      EXPECT_EQ(lab_exit_code(r), 1);
      ASSERT_EQ(r.layers.size(), 1u) << r.message;
      EXPECT_EQ(r.layers[0].index, lab_slot_layers(m, slot).front());
      ASSERT_TRUE(r.layers[0].check && r.layers[0].check->first_failure);
      EXPECT_EQ(r.layers[0].check->first_failure->coords.size(), 4u);
      EXPECT_NE(r.message.find("layer " + std::to_string(r.layers[0].index)), std::string::npos) << r.message;
    }
  }
}

// A kernel written for another slot is refused by its parameter struct (the module's mangled name) before it
// runs with a struct it would misread.
TEST_F(LabGpu, AKernelForAnotherSlotIsRefusedByItsParameterStruct) {
  LabConfig c = config("fc_naive.cu");
  c.slot = "pool";
  const LabResult r = run_lab(c);
  EXPECT_EQ(r.status, "error") << r.message;
  EXPECT_EQ(lab_exit_code(r), 1);
  EXPECT_NE(r.message.find("mnv2_lab::PoolParams"), std::string::npos) << r.message;
  EXPECT_TRUE(r.layers.empty());
}

}  // namespace
}  // namespace mnv2
