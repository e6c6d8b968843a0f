// Noise and contention from the command line: --threads on profile, compare and bench (used, reported,
// refused when bad), the reliability verdict under every summary and in the JSON files, and the OpenMP wait
// the programs start the runtime with (a short spin unless the user chose a policy).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

const std::vector<std::string> kQuick = {"--warmup", "0", "--iters", "3", "--input-size", "64"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CliReliability, ThreadsAreUsedAndReported) {
  TempDir tmp;
  auto r = run_cli(with(
      {"profile", "--model", main_model_path(), "--backend", "cpu", "--threads", "1", "--json", tmp.file("p.json")},
      kQuick));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(", 1 thread\n"), std::string::npos) << r.out;  // the backend line of the summary
  EXPECT_NE(r.out.find("\n  reliability: "), std::string::npos) << r.out;
  const json::Json j = json::parse(read_file(tmp.file("p.json")));
  const json::Json& run = j.at("runs").at(0);
  EXPECT_EQ(run.at("metadata").at("cpu_threads").get<int>(), 1);
  const std::string verdict = run.at("reliability").at("verdict").get<std::string>();
  EXPECT_TRUE(verdict == "ok" || verdict == "unknown" || verdict == "noted" || verdict == "unreliable") << verdict;
  // The verdict printed is the one written.
  EXPECT_NE(r.out.find("  reliability: " + (verdict == "unreliable" ? std::string("UNRELIABLE") : verdict)),
            std::string::npos)
      << r.out;

  auto two =
      run_cli(with({"profile", "--model", main_model_path(), "--threads", "2", "--json", tmp.file("p2.json")}, kQuick));
  ASSERT_EQ(two.code, 0) << describe(two);
  EXPECT_EQ(json::parse(read_file(tmp.file("p2.json"))).at("runs").at(0).at("metadata").at("cpu_threads").get<int>(),
            2);

  auto bench = run_cli(with({"bench", "--model", main_model_path(), "--backends", "cpu,cpu-ref", "--threads", "1",
                             "--json", tmp.file("b.json")},
                            kQuick));
  ASSERT_EQ(bench.code, 0) << describe(bench);
  EXPECT_NE(bench.out.find("cpu batch 1 64x64: reliability: "), std::string::npos) << bench.out;
  EXPECT_NE(bench.out.find("cpu-ref batch 1 64x64: reliability: "), std::string::npos) << bench.out;
  const json::Json b = json::parse(read_file(tmp.file("b.json")));
  for (const json::Json& row : b.at("results")) {
    EXPECT_EQ(row.at("cpu_threads").get<int>(), 1);
    EXPECT_TRUE(row.at("reliability").at("findings").is_array());
  }

  auto compare = run_cli(with({"compare", "--model", main_model_path(), "--backends", "cpu-ref,cpu", "--threads", "1",
                               "--json", tmp.file("c.json")},
                              kQuick));
  ASSERT_EQ(compare.code, 0) << describe(compare);
  for (const json::Json& run : json::parse(read_file(tmp.file("c.json"))).at("runs"))
    EXPECT_EQ(run.at("metadata").at("cpu_threads").get<int>(), 1);
}

TEST(CliReliability, BadThreadCountsAreUsageErrors) {
  for (const char* command : {"profile", "compare", "bench"}) {
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {"--threads", "0"}, {"--threads=-1"}, {"--threads", "99999"}, {"--threads", "abc"}, {"--threads"}}) {
      std::vector<std::string> args = {command, "--model", main_model_path()};
      if (std::string(command) == "compare") args = with(args, {"--backends", "cpu-ref,cpu"});
      auto r = run_cli(with(with(args, kQuick), bad));  // last: a bare --threads has no value after it
      EXPECT_EQ(r.code, 2) << command << " " << bad.front() << "\n" << describe(r);
      EXPECT_NE(r.err.find("--threads"), std::string::npos) << describe(r);
    }
  }
}

TEST(CliReliability, OpenMpStartsWithAShortSpinUnlessTheUserChose) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    GTEST_SKIP() << "the test's own environment sets an OpenMP wait policy";
  auto dflt = run_cli({"info"});
  ASSERT_EQ(dflt.code, 0) << describe(dflt);
  EXPECT_NE(dflt.out.find("OpenMP spin 1000 then sleep"), std::string::npos) << dflt.out;
  auto passive = run_cli({"info"}, {"OMP_WAIT_POLICY=passive"});
  EXPECT_NE(passive.out.find("OpenMP passive wait"), std::string::npos) << passive.out;
  auto spin = run_cli({"info"}, {"GOMP_SPINCOUNT=77"});
  EXPECT_NE(spin.out.find("OpenMP spin 77 then sleep"), std::string::npos) << spin.out;
}

}  // namespace
}  // namespace mnv2::test
