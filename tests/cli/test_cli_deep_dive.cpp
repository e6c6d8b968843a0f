// mnv2 deep-dive from the command line, without a GPU: in the help, and each refusal one clear line with its exit code
// (a usage error 2, a run that cannot happen here 1); the engine's tests (tests/unit/test_deep_dive.cpp) cover the
// reading of ncu's report and ncu's own failures.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "mnv2/backend.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

TEST(CliDeepDive, IsACommandWithItsOptions) {
  const CliResult help = run_cli({"--help"});
  ASSERT_EQ(help.code, 0) << describe(help);
  EXPECT_NE(help.out.find("deep-dive"), std::string::npos) << help.out;
  const CliResult own = run_cli({"deep-dive", "--help"});
  ASSERT_EQ(own.code, 0) << describe(own);
  for (const char* flag : {"--layer", "--report", "--ncu", "--json", "--backend"})
    EXPECT_NE(own.out.find(flag), std::string::npos) << flag << "\n" << own.out;
}

TEST(CliDeepDive, RefusesWhatCannotBeProfiledInOneLine) {
  TempDir d;
  const CliResult no_layer = run_cli({"deep-dive", "--backend", "cuda"});
  EXPECT_EQ(no_layer.code, 2) << describe(no_layer);
  EXPECT_NE(no_layer.err.find("deep-dive needs --layer"), std::string::npos) << describe(no_layer);
  const CliResult cpu = run_cli({"deep-dive", "--model", main_model_path(), "--backend", "cpu", "--layer", "3"});
  EXPECT_EQ(cpu.code, 2) << describe(cpu);
  EXPECT_NE(cpu.err.find("the cpu backend launches no GPU kernels"), std::string::npos) << describe(cpu);
  // A finished cpu run's report: the same refusal, from the report.
  const CliResult run = run_cli({"profile", "--model", main_model_path(), "--backend", "cpu-ref", "--input-size", "64",
                                 "--warmup", "0", "--iters", "1", "--json", d.file("run.json")});
  ASSERT_EQ(run.code, 0) << describe(run);
  const CliResult report = run_cli({"deep-dive", "--report", d.file("run.json"), "--layer", "block3.dw"});
  EXPECT_EQ(report.code, 2) << describe(report);
  EXPECT_NE(report.err.find("the cpu-ref backend launches no GPU kernels"), std::string::npos) << describe(report);
  const CliResult bad_layer = run_cli({"deep-dive", "--report", d.file("run.json"), "--layer", "no.such.layer"});
  EXPECT_EQ(bad_layer.code, 2) << describe(bad_layer);
  EXPECT_NE(bad_layer.err.find("no layer is named 'no.such.layer'"), std::string::npos) << describe(bad_layer);
  // A GPU backend on a machine without a GPU: why, before ncu is started.
  if (make_backend("cuda")->availability().available) GTEST_SKIP() << "the cuda backend runs here";
  const CliResult gpu = run_cli({"deep-dive", "--model", main_model_path(), "--backend", "cuda", "--layer", "21",
                                 "--ncu", d.file("no-ncu"), "--json", d.file("dive.json")});
  EXPECT_EQ(gpu.code, 1) << describe(gpu);
  EXPECT_NE(gpu.err.find("no deep dive here: the cuda backend cannot run on this machine ("), std::string::npos)
      << describe(gpu);
  EXPECT_FALSE(std::filesystem::exists(d.file("dive.json")));  // nothing written on failure
}

}  // namespace
}  // namespace mnv2::test
