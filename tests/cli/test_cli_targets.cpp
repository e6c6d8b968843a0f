// mnv2 targets list and probe as JSON, without a remote machine: ssh is a stand-in ($MNV2_SSH) that runs the agent's
// command on this machine, where only `mnv2` (this build) is installed, so a probe takes the way a real one takes
// (ssh, the agent's hello, its `mnv2 info --json`). What they print is kept for reports_match_schemas
// (resources/schemas/mnv2.targets.schema.json, mnv2.targets-probe.schema.json). The real sshd and Slurm are
// tests/remote's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace mnv2::test {
namespace {

namespace fs = std::filesystem;

TEST(CliTargets, ListAndProbeAsJson) {
  TempDir d;
  fs::create_directories(d.file("config"));
  fs::create_directories(d.file("tmp"));
  // `ssh -G` (what `targets add` asks to show how ssh resolves a host) resolves nothing; any other call runs what
  // follows "--" and the host here: this build's mnv2 under the name "mnv2", nothing under the installed bundle's path
  // (so the session falls back to "mnv2" on PATH, as on a target with the package installed).
  const std::string ssh = d.file("fake-ssh");
  write_file(ssh,
             "#!/bin/sh\n"
             "while [ $# -gt 0 ] && [ \"$1\" != -- ]; do\n"
             "  if [ \"$1\" = -G ]; then echo 'ssh: -G is not pretended here' >&2; exit 255; fi\n"
             "  shift\n"
             "done\n"
             "shift 2\n"
             "if [ \"$1\" = mnv2 ]; then shift; exec " +
                 shell_quote(MNV2_CLI_PATH) +
                 " \"$@\"; fi\n"
                 "echo \"sh: 1: $1: not found\" >&2\n"
                 "exit 127\n");
  fs::permissions(ssh, fs::perms::owner_all);
  const std::vector<std::string> env = {"XDG_CONFIG_HOME=" + d.file("config"), "XDG_RUNTIME_DIR=" + d.path(),
                                        "XDG_CACHE_HOME=" + d.file("cache"), "TMPDIR=" + d.file("tmp"),
                                        "MNV2_SSH=" + ssh};

  const CliResult none = run_cli({"targets", "list", "--json"}, env);
  ASSERT_EQ(none.code, 0) << describe(none);
  json::Json j = json::parse(none.out);
  EXPECT_EQ(j["schema"], "mnv2.targets/1");
  EXPECT_TRUE(j["targets"].empty()) << none.out;
  EXPECT_EQ(j["targets_file"], d.file("config") + "/mnv2-profiler/targets.json");

  const CliResult add = run_cli({"targets", "add", "here", "localhost"}, env);
  ASSERT_EQ(add.code, 0) << describe(add);
  const CliResult one = run_cli({"targets", "list", "--json"}, env);
  ASSERT_EQ(one.code, 0) << describe(one);
  j = json::parse(one.out);
  ASSERT_EQ(j["targets"].size(), 1u) << one.out;
  EXPECT_EQ(j["targets"][0]["name"], "here");

  const CliResult probe = run_cli({"targets", "probe", "here", "--json"}, env, MNV2_CLI_PATH, 120);
  ASSERT_EQ(probe.code, 0) << describe(probe);
  j = json::parse(probe.out);
  ASSERT_TRUE(j.is_array()) << probe.out;
  ASSERT_EQ(j.size(), 1u) << probe.out;
  EXPECT_EQ(j[0]["target"], "here");
  EXPECT_TRUE(j[0]["ok"].get<bool>()) << probe.out;
  EXPECT_EQ(j[0]["protocol"].get<int>(), 1);
  bool cpu = false;
  for (const auto& b : j[0]["backends"]) cpu = cpu || (b["name"] == "cpu" && b["available"].get<bool>());
  EXPECT_TRUE(cpu) << probe.out;
}

}  // namespace
}  // namespace mnv2::test
