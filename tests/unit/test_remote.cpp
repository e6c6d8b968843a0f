// Remote targets without a network (mnv2/remote.h): the checks on every field, the targets file, the fixed ssh
// command line, the wire's base64. The real sshd and Slurm runs are tests/remote/.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/remote.h"
#include "test_support.h"

namespace remote = mnv2::remote;

TEST(RemoteTargets, DestinationsAreParsedAndHostileOnesRefused) {
  remote::Target t = remote::target_from_destination("lab", "alice@gpu.example.org:2222");
  EXPECT_EQ(t.host, "alice@gpu.example.org");
  EXPECT_EQ(t.port, 2222);
  t = remote::target_from_destination("v6", "bob@[fe80::1]:22");
  EXPECT_EQ(t.host, "bob@[fe80::1]");
  EXPECT_EQ(t.port, 22);
  t = remote::target_from_destination("alias", "gpu-box");
  EXPECT_EQ(t.host, "gpu-box");
  EXPECT_EQ(t.port, 0);
  for (const std::string bad : {"-oProxyCommand=x", "user@-host", "-user@host", "a b", "host;rm", "host:0",
                                "host:99999", "host:2x", "$(id)@host", "user@host`x`", "", "user@"})
    EXPECT_THROW(remote::target_from_destination("t", bad), mnv2::UsageError) << bad;
  for (const std::string& bad_name :
       std::vector<std::string>{"", "local", "-x", ".x", "a/b", "a b", std::string(65, 'a')})
    EXPECT_THROW(remote::target_from_destination(bad_name, "host"), mnv2::UsageError) << bad_name;
}

TEST(RemoteTargets, TheSshCommandLineIsFixed) {
  remote::Target t = remote::target_from_destination("lab", "alice@gpu:2200");
  t.ssh_config = "/etc/mnv2/ssh_config";
  remote::SshSettings s;
  s.control_dir = "/run/user/1000/mnv2-profiler-ssh";
  const std::vector<std::string> argv = remote::ssh_argv(t, s, {"mnv2", "agent", "--protocol", "1"});
  auto has = [&](const std::string& a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
  for (const char* o :
       {"BatchMode=yes", "RemoteCommand=none", "RequestTTY=no", "ClearAllForwardings=yes", "PermitLocalCommand=no",
        "ServerAliveInterval=5", "ControlMaster=auto", "ControlPath=/run/user/1000/mnv2-profiler-ssh/%C"})
    EXPECT_TRUE(has(o)) << o;
  for (const auto& a : argv) {
    EXPECT_EQ(a.find("StrictHostKeyChecking"), std::string::npos);  // never relaxed
    EXPECT_EQ(a.find("accept-new"), std::string::npos);
  }
  // "--" ends ssh's options before the destination; the command follows it, word for word.
  const auto dd = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dd, argv.end());
  EXPECT_EQ(*(dd + 1), "alice@gpu");
  EXPECT_EQ(std::vector<std::string>(dd + 2, argv.end()),
            (std::vector<std::string>{"mnv2", "agent", "--protocol", "1"}));
  EXPECT_EQ(argv[1], "-F");
  // The entry points are fixed: the installed bundle's, then PATH's, each with this protocol.
  const auto commands = remote::agent_commands("1.2.3");
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0].front(), ".local/share/mnv2-profiler/1.2.3/bin/mnv2");
  EXPECT_EQ(commands[1], (std::vector<std::string>{"mnv2", "agent", "--protocol", std::to_string(remote::kProtocol)}));
  // A target that slipped past the checks (edited by hand) is refused here too.
  remote::Target bad = t;
  bad.host = "-oProxyCommand=touch /tmp/x";
  EXPECT_THROW(remote::ssh_argv(bad, s, {"true"}), mnv2::UsageError);
}

TEST(RemoteTargets, TheFileIsPrivateAndReadBack) {
  mnv2::test::TempDir tmp;
  const std::string path = tmp.file("config/mnv2-profiler/targets.json");
  EXPECT_TRUE(remote::read_targets(path).empty());  // no file: no targets
  remote::Target a = remote::target_from_destination("lab", "alice@gpu:2200");
  remote::Target b = remote::target_from_destination("cluster", "login.hpc");
  b.slurm = remote::SlurmLauncher{"gpu", "gpu:h100:1", "10:00", "proj1", {"--constraint=h100", "--qos=short"}, 120};
  b.setup = {"module load cuda/13.0"};
  remote::write_targets(path, {a, b});
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const auto back = remote::read_targets(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].host, "alice@gpu");
  EXPECT_EQ(back[0].port, 2200);
  ASSERT_TRUE(back[1].slurm.has_value());
  EXPECT_EQ(back[1].slurm->gres, "gpu:h100:1");
  EXPECT_EQ(back[1].slurm->extra, (std::vector<std::string>{"--constraint=h100", "--qos=short"}));
  EXPECT_EQ(back[1].slurm->pending_timeout_s, 120);
  EXPECT_EQ(back[1].setup, (std::vector<std::string>{"module load cuda/13.0"}));
}

TEST(RemoteTargets, AHostileFileIsRefusedWithItsName) {
  mnv2::test::TempDir tmp;
  const std::string path = tmp.file("targets.json");
  const std::vector<std::string> bad = {
      "not json",
      R"({"schema_version": 2, "targets": []})",
      R"({"schema_version": 1, "targets": [{"name": "x", "host": "-oProxyCommand=id"}]})",
      R"({"schema_version": 1, "targets": [{"name": "x", "host": "h"}, {"name": "x", "host": "g"}]})",
      R"({"schema_version": 1, "targets": [{"name": "x", "host": "h", "setup": ["a\nb"]}]})",
      R"({"schema_version": 1, "targets": [{"name": "x", "host": "h", "slurm": {"partition": "a b"}}]})",
  };
  for (const std::string& text : bad) {
    std::ofstream(path) << text;
    try {
      remote::read_targets(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const mnv2::Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(RemoteWire, Base64RoundTripsEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    const std::string part = all.substr(0, n);
    EXPECT_EQ(remote::base64_decode(remote::base64_encode(part)), part);
  }
  EXPECT_THROW(remote::base64_decode("abc"), mnv2::Error);
  EXPECT_THROW(remote::base64_decode("a*c="), mnv2::Error);
}

// The arguments of a profile on a target: every per-run option, but a default no flag may give ("0" threads: one per
// core there) is left out, as `mnv2 profile --target` leaves an option the user did not give (the app's default run).
TEST(RemoteProfile, ArgumentsLeaveOutADefaultNoFlagMayGive) {
  mnv2::ProfileConfig c;
  c.backend = "cpu";
  c.iters = 7;
  auto find = [](const std::vector<std::string>& args, const std::string& flag) {
    const auto it = std::find(args.begin(), args.end(), flag);
    return it == args.end() || it + 1 == args.end() ? std::string("(none)") : *(it + 1);
  };
  std::vector<std::string> args = remote::profile_arguments(c, {"cpu"});
  EXPECT_EQ(find(args, "--threads"), "(none)");
  EXPECT_EQ(find(args, "--iters"), "7");
  EXPECT_EQ(find(args, "--backend"), "cpu");
  c.cpu_threads = 4;
  args = remote::profile_arguments(c, {"cpu", "cpu-ref"});
  EXPECT_EQ(find(args, "--threads"), "4");
  EXPECT_EQ(find(args, "--backends"), "cpu,cpu-ref");
}
