// `mnv2 lab` from the command line (issue 18): usage errors exit 2 and write no result, the template and the
// slot list print, a kernel that does not compile exits 3 with file:line:column and its JSON result written.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

const std::string kExamples = MNV2_LAB_EXAMPLES_DIR;

TEST(CliLab, UsageErrorsExit2AndWriteNoResult) {
  TempDir d;
  const std::string json = d.file("lab.json");
  const std::string naive = kExamples + "/dw_naive.cu";
  const std::vector<std::vector<std::string>> cases = {
      {"lab"},
      {"lab", "--kernel", naive},
      {"lab", "--slot", "nope", "--kernel", naive},
      {"lab", "--slot", "block", "--kernel", naive},
      {"lab", "--slot", "stem", "--kernel", naive},
      {"lab", "--slot", "depthwise"},
      {"lab", "--slot", "depthwise", "--kernel", d.file("missing.cu")},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--layers", "3"},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--layers", "2,x"},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--batch", "0"},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--precision", "fp8"},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--timeout", "-1"},
      {"lab", "--slot", "depthwise", "--kernel", naive, "--compile-only", "--arch", "90"},
      {"lab", "--template", "nope"},
  };
  for (auto args : cases) {
    args.insert(args.end(), {"--json", json});
    const CliResult r = run_cli(args);
    std::string line;
    for (const auto& a : args) line += a + " ";
    EXPECT_EQ(r.code, 2) << line << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << line << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(json)) << line;
  }
  EXPECT_NE(run_cli({"lab", "--slot", "block", "--kernel", naive}).err.find("whole-block"), std::string::npos);
  EXPECT_NE(run_cli({"lab", "--slot", "depthwise", "--kernel", naive, "--layers", "3"}).err.find("2,7,12"),
            std::string::npos);
}

TEST(CliLab, TemplateAndSlotList) {
  const CliResult t = run_cli({"lab", "--template", "depthwise"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("MNV2_LAB_BLOCK("), std::string::npos);
  EXPECT_NE(t.out.find("#include \"mnv2_lab/depthwise.h\""), std::string::npos);
  const CliResult l = run_cli({"lab", "--list-slots"});
  EXPECT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("depthwise"), std::string::npos);
  EXPECT_NE(l.out.find("2,7,12,18"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("block"), std::string::npos);
}

TEST(CliLab, ACompileErrorExits3WithItsLineAndTheResultFile) {
  TempDir d;
  const std::string json = d.file("lab.json");
  const CliResult r = run_cli(
      {"lab", "--slot", "depthwise", "--kernel", kExamples + "/dw_syntax.cu", "--arch", "sm_90", "--json", json},
      {"MNV2_CACHE_DIR=" + d.file("cache")});
  if (r.code == 1 && r.err.find("NVRTC") != std::string::npos) GTEST_SKIP() << "no NVRTC here: " << r.err;
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("dw_syntax.cu:28:"), std::string::npos) << r.out;
  const json::Json j = json::parse_file(json);
  EXPECT_EQ(j["format"], "mnv2.lab");
  EXPECT_EQ(j["status"], "compile_error");
  EXPECT_EQ(j["compile"]["diagnostics"][0]["line"], 28);

  const CliResult ok = run_cli({"lab", "--slot", "depthwise", "--kernel", kExamples + "/dw_improved.cu", "--arch",
                                "sm_90", "--compile-only", "--json", json},
                               {"MNV2_CACHE_DIR=" + d.file("cache")});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_EQ(json::parse_file(json)["status"], "passed");
}

}  // namespace
}  // namespace mnv2::test
