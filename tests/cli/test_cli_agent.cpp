// The agent (`mnv2 agent --protocol N`) fed what a hostile or broken client could send: each answered with an
// error message and a non-zero exit, nothing written outside its private folder, no folder left behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.h"
#include "mnv2/json_io.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mnv2::test::describe;

namespace {

// The agent with `input` on its standard input; its private folders go under `tmp`.
mnv2::test::CliResult agent(const mnv2::test::TempDir& tmp, const std::string& input,
                            const std::string& protocol = "1") {
  const std::string in = tmp.file("agent.in");
  std::ofstream(in, std::ios::binary) << input;
  const std::string cmd = "env TMPDIR=" + mnv2::test::shell_quote(tmp.path()) +
                          " XDG_CACHE_HOME=" + mnv2::test::shell_quote(tmp.file("cache")) + " timeout -k 5 60 " +
                          MNV2_CLI_PATH + " agent --protocol " + protocol + " <" + mnv2::test::shell_quote(in) + " >" +
                          mnv2::test::shell_quote(tmp.file("out")) + " 2>" + mnv2::test::shell_quote(tmp.file("err"));
  const int st = std::system(cmd.c_str());
  mnv2::test::CliResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = mnv2::test::read_file(tmp.file("out"));
  r.err = mnv2::test::read_file(tmp.file("err"));
  return r;
}

int run_folders(const mnv2::test::TempDir& tmp) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    n += e.path().filename().string().rfind("mnv2-agent-", 0) == 0;
  return n;
}

}  // namespace

TEST(CliAgent, SaysHelloAndRefusesAnotherProtocol) {
  mnv2::test::TempDir tmp;
  auto r = agent(tmp, "");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(mnv2::json::parse(r.out.substr(0, r.out.find('\n')))["type"], "hello");
  r = agent(tmp, "", "99");
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_NE(r.out.find("speaks agent protocol 1, the client asked for 99"), std::string::npos) << r.out;
}

TEST(CliAgent, HostileMessagesAreRefused) {
  mnv2::test::TempDir tmp;
  const std::string b64_slash = "Li4vZXNjYXBl";  // "../escape"
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json\n", "not the agent protocol"},
      {"{\"no\": \"type\"}\n", "a message without a type"},
      {"{\"type\": \"nonsense\"}\n", "unknown message 'nonsense'"},
      {"{\"type\": \"file\", \"option\": \"--tensor\", \"name_b64\": \"" + b64_slash + "\", \"size\": 1}\n",
       "one folder entry"},
      {"{\"type\": \"file\", \"option\": \"--tensor\", \"name_b64\": \"eA==\", \"size\": 99999999999999}\n",
       "0 to 4 GiB"},
      {"{\"type\": \"file\", \"option\": \"--tensor\", \"name_b64\": \"eA==\", \"size\": 4}\n"
       "{\"type\": \"data\", \"b64\": \"QUJDREVG\"}\n",
       "longer than announced"},
      {"{\"type\": \"model\", \"sha256\": \"../../x\", \"size\": 4}\n", "64 lower-case hex"},
      // A run whose arguments name a file of the target's: refused (files travel, the agent names them).
      {"{\"type\": \"run\", \"command\": \"profile\", \"args_b64\": [\"LS1qc29u\", \"L2V0Yy9wYXNzd2Q=\"], "
       "\"outputs\": []}\n",
       "name a file (--json)"},
      {"{\"type\": \"run\", \"command\": \"agent\", \"args_b64\": [], \"outputs\": []}\n", "not a study a target runs"},
      // The lab writes its --json even on failure (a plain value, not a declared output): not a remote study.
      {"{\"type\": \"run\", \"command\": \"lab\", \"args_b64\": [\"LS1qc29u\", \"L2V0Yy9wYXNzd2Q=\"], "
       "\"outputs\": []}\n",
       "not a study a target runs"},
      {"{\"type\": \"run\", \"command\": \"profile\", \"args_b64\": [], \"outputs\": [\"../x\"]}\n",
       "an output must be an option name"},
      {"{\"type\": \"run\", \"command\": \"profile\", \"args_b64\": [], \"model_sha256\": \"" + std::string(64, 'a') +
           "\", \"outputs\": []}\n",
       "a model that was not sent"},
  };
  for (const auto& [input, message] : cases) {
    const auto r = agent(tmp, input);
    EXPECT_EQ(r.code, 1) << input << describe(r);
    EXPECT_NE(r.out.find(message), std::string::npos) << input << "\n" << r.out;
    EXPECT_EQ(run_folders(tmp), 0) << input;
  }
  EXPECT_FALSE(fs::exists(tmp.file("escape")));
  EXPECT_FALSE(fs::exists("/tmp/escape"));
}
