// The kernel lab's CPU side (issue 18): NVRTC's log as diagnostics, the slot headers and templates
// compiling with NVRTC (no GPU needed), the compile cache, the "mnv2.lab" document's round trip, the slot table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "mnv2/error.h"
#include "mnv2/lab.h"
#include "mnv2/model.h"
#include "test_support.h"
#include "util/sha256.h"

namespace mnv2 {
namespace {

namespace fs = std::filesystem;

TEST(LabDiagnostics, ErrorsAndWarningsWithLinesAndColumns) {
  const std::string log =
      "my_dw.cu(28): error: identifier \"out_width\" is undefined\n"
      "    const int ow = rest % p.out_width;\n"
      "                          ^\n"
      "\n"
      "my_dw.cu(12): warning #177-D: variable \"x\" was declared but never referenced\n"
      "    int x;\n"
      "        ^\n"
      "\n"
      "/opt/x/include/mnv2_lab/lab.h(3): catastrophic error: cannot open source file \"y.h\"\n"
      "1 error detected in the compilation of \"my_dw.cu\".\n";
  const std::vector<LabDiagnostic> d = parse_nvrtc_log(log);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], (LabDiagnostic{"my_dw.cu", 28, 25, "error", "identifier \"out_width\" is undefined"}));
  EXPECT_EQ(d[1].severity, "warning");
  EXPECT_EQ(d[1].line, 12);
  EXPECT_EQ(d[1].column, 7);
  EXPECT_EQ(d[1].message, "variable \"x\" was declared but never referenced");
  EXPECT_EQ(d[2].file, "/opt/x/include/mnv2_lab/lab.h");
  EXPECT_EQ(d[2].severity, "error");
  EXPECT_EQ(d[2].column, 0);  // no excerpt follows
  EXPECT_TRUE(parse_nvrtc_log("").empty());
}

TEST(LabSlots, TableLayersAndRefusals) {
  const Model m = builtin_mobilenet_v2();
  const std::vector<int> dw = lab_slot_layers(m, "depthwise");
  ASSERT_EQ(dw.size(), 17u);  // one per bottleneck
  for (int i : dw) {
    EXPECT_TRUE(m.layers[static_cast<size_t>(i)].conv.depthwise());
    EXPECT_EQ(m.layers[static_cast<size_t>(i)].conv.kernel_h, 3);
  }
  EXPECT_EQ(lab_slot("depthwise").header, "mnv2_lab/depthwise.h");
  // Pointwise: every 1x1 convolution but none reading the network input (17 expansions less the first block's
  // missing one, 17 projections, the head's 1x1).
  const std::vector<int> pw = lab_slot_layers(m, "pointwise");
  EXPECT_EQ(pw.size(), 16u + 17u + 1u);
  for (int i : pw) EXPECT_TRUE(m.layers[static_cast<size_t>(i)].conv.pointwise());
  EXPECT_EQ(lab_slot("pointwise").header, "mnv2_lab/pointwise.h");
  // The stem (the one convolution reading the network input), the pool and the classifier: one layer each.
  const std::vector<int> stem = lab_slot_layers(m, "stem");
  ASSERT_EQ(stem.size(), 1u);
  EXPECT_EQ(m.layers[static_cast<size_t>(stem[0])].inputs.front(), kNetworkInput);
  EXPECT_EQ(m.layers[static_cast<size_t>(stem[0])].conv.stride_h, 2);
  const std::vector<int> pool = lab_slot_layers(m, "pool");
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(m.layers[static_cast<size_t>(pool[0])].kind, LayerKind::GlobalAveragePool);
  const std::vector<int> fc = lab_slot_layers(m, "classifier");
  ASSERT_EQ(fc.size(), 1u);
  EXPECT_EQ(fc[0], static_cast<int>(m.layers.size()) - 1);
  EXPECT_EQ(m.layers.back().kind, LayerKind::Linear);
  // No layer is in two slots.
  std::vector<int> all = dw;
  for (const std::vector<int>* v : {&pw, &stem, &pool, &fc}) all.insert(all.end(), v->begin(), v->end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(lab_slot("stem").header, "mnv2_lab/stem.h");
  EXPECT_EQ(lab_slot("pool").header, "mnv2_lab/pool.h");
  EXPECT_EQ(lab_slot("classifier").header, "mnv2_lab/classifier.h");
  EXPECT_TRUE(lab_slot_layers(m, "block").empty());
  EXPECT_THROW(lab_slot("nope"), UsageError);
  try {
    lab_slot("block");
    FAIL() << "the block slot must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unfused plan"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("whole-block step"), std::string::npos) << e.what();
  }
}

TEST(LabResultJson, RoundTrip) {
  LabResult r;
  r.slot = "depthwise";
  r.kernel_file = "/tmp/k.cu";
  r.kernel_name = "dw";
  r.source_sha256 = sha256_hex("x");
  r.precision = "fp16";
  r.batch = 3;
  r.device = "NVIDIA H200 (sm_90)";
  r.status = "check_failed";
  r.message = "check failed at layer 2";
  LabCompileResult c;
  c.ok = true;
  c.arch = "sm_90";
  c.options = {"-arch=sm_90", "-lineinfo"};
  c.log = "k.cu(3): warning: w\n";
  c.diagnostics = parse_nvrtc_log(c.log);
  r.compile = c;
  r.has_launch = true;
  r.block[0] = 128;
  r.tile[0] = 4;
  r.tile[1] = 2;
  r.grid_rule = "rule";
  LabLayer l;
  l.index = 2;
  l.name = "block1.dw";
  l.op = "depthwise 3x3 s1";
  l.shape = "3,32,112,112";
  l.check = LabCheck{};
  l.check->passed = false;
  l.check->bound = 2e-2;
  l.check->first_failure = LabFailure{5, {0, 5, 0, 0}, 0.5, std::nan("")};
  l.user_us = 5.5;
  l.flops = 1e6;
  r.layers = {l};
  r.end_to_end = LabEndToEnd{0.3, 0.29, std::nullopt, 0.6};
  r.compute_sanitizer_command = "compute-sanitizer ...";
  const LabResult back = lab_result_from_json(json::parse(lab_result_json(r).dump()));
  EXPECT_EQ(lab_result_json(back).dump(), lab_result_json(r).dump());
  ASSERT_EQ(back.layers.size(), 1u);
  ASSERT_TRUE(back.layers[0].check && back.layers[0].check->first_failure);
  EXPECT_TRUE(std::isnan(back.layers[0].check->first_failure->got));  // NaN survives as "nan"
  EXPECT_EQ(back.layers[0].check->first_failure->coords, (std::vector<int64_t>{0, 5, 0, 0}));
  EXPECT_FALSE(back.layers[0].ours_us);
  EXPECT_EQ(back.compile->diagnostics.size(), 1u);
  EXPECT_EQ(lab_exit_code(back), 1);
  json::Json wrong = lab_result_json(r);
  wrong["version"] = 2;
  EXPECT_THROW(lab_result_from_json(wrong), Error);
  EXPECT_THROW(lab_result_from_json(json::parse("{\"format\": \"other\"}")), Error);
}

// The one reader (the CLI's, the worker's parent's and the app's): the format and version first, by name; every
// field with its type, a wrong one named by its path; optional parts absent or null; NaN and Inf as null or names.
TEST(Lab, ReaderIsStrictAndNamesTheField) {
  auto message = [](const std::string& text) {
    try {
      read_lab_result(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  const std::string head = R"({"format": "mnv2.lab", "version": 1, "slot": "depthwise", "message": "m", )";
  EXPECT_NE(message("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"format": "mnv2.report", "version": 1})").find("\"mnv2.report\", not \"mnv2.lab\""),
            std::string::npos);
  EXPECT_NE(message(R"({"format": "mnv2.lab", "version": 2})").find("version 2; this build reads version 1"),
            std::string::npos);
  EXPECT_NE(message(head + R"("status": "fine", "layers": []})").find("status 'fine' is none of passed"),
            std::string::npos);
  EXPECT_NE(message(head + R"("status": "passed"})").find("layers should be an array, is missing"), std::string::npos);
  EXPECT_NE(message(head + R"("status": "check_failed", "layers": [{"index": 2, "check": {"passed": "no"}}]})")
                .find("malformed: layers[0].check.passed should be true or false, is a string"),
            std::string::npos);
  EXPECT_NE(
      message(head + R"("status": "passed", "layers": [{"index": 2.5}]})").find("layers[0].index should be a whole"),
      std::string::npos);
  EXPECT_NE(message(head + R"("status": "compile_error", "layers": [], "compile": {"ok": false, "diagnostics":
      [{"line": "x", "severity": "error", "message": "m"}]}})")
                .find("compile.diagnostics[0].line should be a whole number, is a string"),
            std::string::npos);
  EXPECT_NE(message(head + R"("status": "passed", "layers": [], "launch": {"block": [1, 2]}})")
                .find("launch.block should be an array of three numbers"),
            std::string::npos);
  const LabResult r = read_lab_result(head + R"("status": "check_failed", "compile": null, "end_to_end": null,
      "layers": [{"index": 7, "check": {"passed": false, "first_failure": {"flat_index": 9, "coords": [0, 1, 2, 3],
      "expected": "-inf", "got": null}}, "user_us": null}, {"index": 8}]})");
  ASSERT_EQ(r.layers.size(), 2u);
  ASSERT_TRUE(r.layers[0].check && r.layers[0].check->first_failure);
  EXPECT_TRUE(std::isinf(r.layers[0].check->first_failure->expected));
  EXPECT_TRUE(std::isnan(r.layers[0].check->first_failure->got));
  EXPECT_FALSE(r.layers[1].check);  // the run stopped before checking it
  EXPECT_FALSE(r.layers[1].flops);
  EXPECT_FALSE(r.compile);
  EXPECT_EQ(r.precision, "fp32");
}

// NVRTC needs no GPU: these run in CI wherever the GPU plugin loads (the CUDA toolkit's libraries are there).
class LabCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      LabCompileConfig probe;
      probe.source = "__global__ void k() {}";
      probe.file_name = "probe.cu";
      probe.arch = "sm_90";
      probe.cache_dir = dir_.file("probe");
      probe.use_cache = false;
      lab_compile(probe);
    } catch (const Error& e) {
      GTEST_SKIP() << "NVRTC unavailable here: " << e.what();
    }
  }
  LabCompileResult compile(const std::string& source, const std::string& name) {
    LabCompileConfig c;
    c.source = source;
    c.file_name = name;
    c.arch = "sm_90";
    c.cache_dir = dir_.file("cache");
    return lab_compile(c);
  }
  test::TempDir dir_;
};

TEST_F(LabCompile, TemplateAndExamplesCompileWithTheSlotHeaders) {
  const LabCompileResult t = compile(lab_template("depthwise"), "depthwise.cu");
  EXPECT_TRUE(t.ok) << t.log;
  EXPECT_EQ(t.kernel_name, "depthwise3x3");
  EXPECT_FALSE(t.cached);
  EXPECT_TRUE(fs::file_size(t.cubin_path) > 0);
  const LabCompileResult pw = compile(lab_template("pointwise"), "pointwise.cu");
  EXPECT_TRUE(pw.ok) << pw.log;
  EXPECT_EQ(pw.kernel_name, "pointwise1x1");
  for (const auto& [slot, name] : std::vector<std::pair<std::string, std::string>>{
           {"stem", "stem_conv"}, {"pool", "global_avg_pool"}, {"classifier", "linear"}}) {
    const LabCompileResult r = compile(lab_template(slot), slot + ".cu");
    EXPECT_TRUE(r.ok) << slot << ":\n" << r.log;
    EXPECT_EQ(r.kernel_name, name);
    EXPECT_TRUE(r.diagnostics.empty()) << slot << ":\n" << r.log;  // the templates compile without warnings
  }
  for (const char* ex : {"dw_naive.cu", "dw_improved.cu", "dw_wrong.cu", "dw_oob.cu", "pw_naive.cu", "stem_naive.cu",
                         "pool_naive.cu", "fc_naive.cu"}) {
    const LabCompileResult r = compile(test::read_file(std::string(MNV2_LAB_EXAMPLES_DIR) + "/" + ex), ex);
    EXPECT_TRUE(r.ok) << ex << ":\n" << r.log;
  }
  // Every slot header on its own (no standard library, device code only).
  for (const auto& e : fs::directory_iterator(fs::path(lab_dir()) / "include" / "mnv2_lab")) {
    const std::string h = e.path().filename().string();
    const LabCompileResult r =
        compile("#include \"mnv2_lab/" + h + "\"\n__global__ void k() {}\n", "only_" + h + ".cu");
    EXPECT_TRUE(r.ok) << h << ":\n" << r.log;
  }
}

TEST_F(LabCompile, ABrokenKernelReportsItsLine) {
  const LabCompileResult r =
      compile(test::read_file(std::string(MNV2_LAB_EXAMPLES_DIR) + "/dw_syntax.cu"), "dw_syntax.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.cubin_path.empty());
  ASSERT_FALSE(r.diagnostics.empty()) << r.log;
  EXPECT_EQ(r.diagnostics[0].file, "dw_syntax.cu");
  EXPECT_EQ(r.diagnostics[0].line, 28);
  EXPECT_GT(r.diagnostics[0].column, 0);
  EXPECT_EQ(r.diagnostics[0].severity, "error");
  EXPECT_NE(r.diagnostics[0].message.find("out_width"), std::string::npos);
  // A failed compile is not cached: the second attempt compiles (and fails) again.
  EXPECT_FALSE(compile(test::read_file(std::string(MNV2_LAB_EXAMPLES_DIR) + "/dw_syntax.cu"), "dw_syntax.cu").cached);
}

TEST_F(LabCompile, TheCacheHitsTheSecondTimeAndMissesOnAnyChange) {
  const std::string source = lab_template("depthwise");
  const LabCompileResult first = compile(source, "a.cu");
  ASSERT_TRUE(first.ok) << first.log;
  const LabCompileResult second = compile(source, "a.cu");
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.cubin_path, first.cubin_path);
  EXPECT_EQ(test::read_file(second.cubin_path), test::read_file(first.cubin_path));
  const LabCompileResult edited = compile(source + "\n// edited\n", "a.cu");
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.key, first.key);
  LabCompileConfig other;
  other.source = source;
  other.file_name = "a.cu";
  other.arch = "sm_80";
  other.cache_dir = dir_.file("cache");
  const LabCompileResult arch = lab_compile(other);
  EXPECT_FALSE(arch.cached);
  EXPECT_NE(arch.key, first.key);
  EXPECT_EQ(arch.options.front(), "-arch=sm_80");
}

}  // namespace
}  // namespace mnv2
