// A command's output files as one set (mnv2/output_files.h through the CLI): every path checked before the
// run, all or nothing after it, '-' for standard output, the messages naming what was and was not written.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

// A run that would take hours on the cpu backend: it finishing within the time limit proves the outputs
// were refused before any work.
std::vector<std::string> endless(const std::string& command) {
  return {command, "--model", main_model_path(), "--warmup", "0", "--iters", "1000000"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(CliOutputs, EveryPathIsCheckedBeforeTheRunAndNothingIsReplaced) {
  TempDir tmp;
  write_file(tmp.file("good.csv"), "previous csv\n");
  for (const char* command : {"profile", "bench", "compare"}) {
    SCOPED_TRACE(command);
    std::vector<std::string> args = endless(command);
    if (std::string(command) == "compare") args = with(args, {"--backends", "cpu,cpu-ref"});
    const auto t0 = std::chrono::steady_clock::now();
    const CliResult r = run_cli(with(args, {"--csv", tmp.file("good.csv"), "--json", tmp.file("missing/x.json")}), {},
                                MNV2_CLI_PATH, 120);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("--json " + tmp.file("missing/x.json")), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
    EXPECT_EQ(read_file(tmp.file("good.csv")), "previous csv\n");
  }
  // memory has no --iters; its run is short, but its outputs are checked first all the same.
  const CliResult m = run_cli(
      {"memory", "--model", main_model_path(), "--csv", tmp.file("good.csv"), "--json", tmp.file("missing/x.json")});
  EXPECT_EQ(m.code, 2) << describe(m);
  EXPECT_EQ(read_file(tmp.file("good.csv")), "previous csv\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()), {}), 1);  // no temporaries
}

TEST(CliOutputs, TwoOutputsOntoOneFileAreRefused) {
  TempDir tmp;
  std::filesystem::create_symlink("r.out", tmp.file("alias.out"));
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {tmp.file("r.out"), tmp.file("r.out")}, {tmp.file("r.out"), tmp.file("./r.out")}, {"-", "/dev/stdout"}}) {
    const CliResult r = run_cli(with(endless("profile"), {"--csv", a, "--json", b}), {}, MNV2_CLI_PATH, 120);
    EXPECT_EQ(r.code, 2) << describe(r);
    EXPECT_NE(r.err.find("are the same file"), std::string::npos) << r.err;
  }
  write_file(tmp.file("r.out"), "x");
  const CliResult r = run_cli(with(endless("profile"), {"--csv", tmp.file("r.out"), "--trace", tmp.file("alias.out")}),
                              {}, MNV2_CLI_PATH, 120);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_EQ(read_file(tmp.file("r.out")), "x");
}

TEST(CliOutputs, DashWritesTheReportAloneOnStandardOutput) {
  TempDir tmp;
  const CliResult r = run_cli({"profile", "--model", main_model_path(), "--warmup", "0", "--iters", "1", "--json", "-",
                               "--csv", tmp.file("r.csv")});
  ASSERT_EQ(r.code, 0) << describe(r);
  // The table went to standard error; standard output is the JSON report and nothing else.
  const json::Json j = json::parse(r.out);
  EXPECT_EQ(j.at("schema").get<std::string>(), "mnv2.report");
  EXPECT_NE(r.err.find("idx"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote standard output"), std::string::npos) << r.err;
  EXPECT_NE(read_file(tmp.file("r.csv")).find("run_id,backend"), std::string::npos);
}

TEST(CliOutputs, ReplacedReportKeepsItsModeAndLinksAreFollowed) {
  TempDir tmp;
  std::filesystem::create_directory(tmp.file("store"));
  write_file(tmp.file("store/m.json"), "old");
  ::chmod(tmp.file("store/m.json").c_str(), 0600);
  std::filesystem::create_symlink("store/m.json", tmp.file("m.json"));
  const CliResult r = run_cli({"memory", "--model", main_model_path(), "--json", tmp.file("m.json")});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(std::filesystem::is_symlink(tmp.file("m.json")));
  struct stat st {};
  ASSERT_EQ(::stat(tmp.file("store/m.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_NE(read_file(tmp.file("store/m.json")).find("mnv2.memory/1"), std::string::npos);
}

TEST(CliOutputs, FifoLabelsAndListAreRefusedNotWaitedOn) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo(tmp.file("labels").c_str(), 0600), 0);
  const CliResult r =
      run_cli({"classify", "--model", main_model_path(), "--labels", tmp.file("labels"), shared_path("images/cat.bmp")},
              {}, MNV2_CLI_PATH, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find(tmp.file("labels")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("FIFO"), std::string::npos) << r.err;
  const CliResult z =
      run_cli({"classify", "--model", main_model_path(), "--labels", "/dev/zero", shared_path("images/cat.bmp")}, {},
              MNV2_CLI_PATH, 60);
  EXPECT_EQ(z.code, 1) << describe(z);
  EXPECT_NE(z.err.find("/dev/zero"), std::string::npos) << z.err;
}

}  // namespace
}  // namespace mnv2::test
