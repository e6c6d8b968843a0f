// `mnv2 runs`: report and session files side by side, as the app's Runs panel and Run comparison show them:
// every setting that differs, weighed by compare_settings, the per-image ratio when batches differ, and runs of
// different networks refused (exit 1) rather than paired layer by layer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "onnx_builder.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// Two cpu runs of the main model at 32×32, batch 1 and 2, written by the CLI itself.
struct TwoRuns {
  TempDir tmp;
  std::string a = tmp.file("b1.json"), b = tmp.file("b2.json");
  TwoRuns() {
    for (const auto& [batch, path] : {std::pair{"1", a}, std::pair{"2", b}}) {
      const CliResult r = run_cli({"profile", "--model", main_model_path(), "--backend", "cpu", "--input-size", "32",
                                   "--batch", batch, "--warmup", "0", "--iters", "2", "--json", path});
      EXPECT_EQ(r.code, 0) << describe(r);
    }
  }
};

TEST(CliRuns, StatesEverySettingThatDiffersAndThePerImageRatio) {
  TwoRuns runs;
  const CliResult r = run_cli({"runs", runs.a, runs.b});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("b2.json against b1.json:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warn   batch 1 -> 2: B processes 2 image(s) per run and A 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per image"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(baseline)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stem.conv"), std::string::npos) << r.out;  // the layers side by side
  // The baseline can be the second run.
  const CliResult swapped = run_cli({"runs", runs.a, runs.b, "--baseline", "2"});
  ASSERT_EQ(swapped.code, 0) << describe(swapped);
  EXPECT_NE(swapped.out.find("b1.json against b2.json:"), std::string::npos) << swapped.out;
  EXPECT_NE(swapped.out.find("batch 2 -> 1"), std::string::npos) << swapped.out;
  // A run against itself differs in nothing.
  const CliResult same = run_cli({"runs", runs.a, runs.a});
  ASSERT_EQ(same.code, 0) << describe(same);
  EXPECT_NE(same.out.find("the same settings"), std::string::npos) << same.out;
}

TEST(CliRuns, ASavedSessionKeepsItsNamesNotesAndBaseline) {
  TwoRuns runs;
  Session s;
  s.runs.push_back({read_reports_file(runs.a).front(), "before", "idle machine"});
  s.runs.push_back({read_reports_file(runs.b).front(), "after", ""});
  s.baseline = 1;
  const std::string path = runs.tmp.file("session.json");
  write_session_file(path, s);
  const CliResult r = run_cli({"runs", path});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("note: idle machine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("before against after:"), std::string::npos) << r.out;  // the pinned baseline is "after"
}

TEST(CliRuns, RunsOfAnotherNetworkAreRefusedAndBadArgumentsAreUsageErrors) {
  TwoRuns runs;
  ProfileConfig cfg;
  cfg.height = cfg.width = 4;
  cfg.warmup = 0;
  cfg.iters = 2;
  const std::string tiny = runs.tmp.file("tiny.json");
  write_json_report(tiny, {profile(three_layer_model(), cfg)});
  const CliResult r = run_cli({"runs", runs.a, tiny});
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.out.find("refuse model"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("not compared"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unrelated layers"), std::string::npos) << r.err;

  EXPECT_EQ(run_cli({"runs"}).code, 2);
  EXPECT_EQ(run_cli({"runs", runs.a, "--baseline", "3"}).code, 2);
  EXPECT_EQ(run_cli({"runs", runs.a, "--baseline", "x"}).code, 2);
  const CliResult missing = run_cli({"runs", runs.tmp.file("none.json")});
  EXPECT_EQ(missing.code, 1) << describe(missing);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace mnv2::test
