// `mnv2 lab` from the command line (issue 18): usage errors exit 2 and write no result, the template and the
// slot list print, a kernel that does not compile exits 3 with file:line:column and its JSON result written.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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
      {"lab", "--slot", "stem", "--kernel", naive, "--layers", "2"},
      {"lab", "--slot", "classifier", "--kernel", naive, "--layers", "0"},
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
  // A kernel path that exists but is no file says what it is (issue 30: "kernel file not found" for both).
  ASSERT_EQ(::mkfifo(d.file("k.cu").c_str(), 0600), 0);
  for (const auto& [path, kind] :
       std::vector<std::pair<std::string, std::string>>{{"/dev/null", "a character device, not a regular file"},
                                                        {d.file("k.cu"), "a FIFO (named pipe), not a regular file"}}) {
    const CliResult r = run_cli({"lab", "--slot", "depthwise", "--kernel", path}, {}, MNV2_CLI_PATH, 60);
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find(path + " is " + kind), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not found"), std::string::npos) << r.err;
  }
}

TEST(CliLab, TemplateAndSlotList) {
  const CliResult t = run_cli({"lab", "--template", "depthwise"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("MNV2_LAB_BLOCK("), std::string::npos);
  EXPECT_NE(t.out.find("#include \"mnv2_lab/depthwise.h\""), std::string::npos);
  for (const char* slot : {"stem", "pool", "classifier"}) {
    const CliResult st = run_cli({"lab", "--template", slot});
    EXPECT_EQ(st.code, 0) << slot << ": " << st.err;
    EXPECT_NE(st.out.find(std::string("#include \"mnv2_lab/") + slot + ".h\""), std::string::npos) << st.out;
    EXPECT_NE(st.out.find("MNV2_LAB_TILE("), std::string::npos) << st.out;
  }
  const CliResult l = run_cli({"lab", "--list-slots"});
  EXPECT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("depthwise"), std::string::npos);
  EXPECT_NE(l.out.find("2,7,12,18"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("block"), std::string::npos);
  // Only the block slot is refused: the stem, pool and classifier lines name their layers (0, the pool, the last).
  size_t refused = 0;
  for (size_t at = l.out.find("(refused:"); at != std::string::npos; at = l.out.find("(refused:", at + 1)) ++refused;
  EXPECT_EQ(refused, 1u) << l.out;
  for (const std::string slot : {"stem", "pool", "classifier"}) {
    const size_t at = l.out.find("\n" + slot + " ");
    ASSERT_NE(at, std::string::npos) << slot << ": " << l.out;
    const std::string line = l.out.substr(at + 1, l.out.find('\n', at + 1) - at - 1);
    EXPECT_EQ(line.find("layers: -"), std::string::npos) << line;
    EXPECT_EQ(line.find("refused"), std::string::npos) << line;
  }
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
  for (const auto& [slot, file] : std::vector<std::pair<std::string, std::string>>{
           {"stem", "stem_naive.cu"}, {"pool", "pool_naive.cu"}, {"classifier", "fc_naive.cu"}}) {
    const CliResult c = run_cli({"lab", "--slot", slot, "--kernel", kExamples + "/" + file, "--arch", "sm_90",
                                 "--compile-only", "--json", json},
                                {"MNV2_CACHE_DIR=" + d.file("cache")});
    EXPECT_EQ(c.code, 0) << slot << ": " << c.out << c.err;
    EXPECT_EQ(json::parse_file(json)["status"], "passed") << slot;
    EXPECT_EQ(json::parse_file(json)["slot"], slot);
  }
}

}  // namespace
}  // namespace mnv2::test
