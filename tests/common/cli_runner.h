// Runs the real `mnv2` program for the CLI tests: arguments quoted for the shell, stdout and stderr
// captured, a wall-clock limit (coreutils timeout), and how it ended. Header-only: MNV2_CLI_PATH is a
// compile definition of the CLI test program.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.h"

namespace mnv2::test {

struct CliResult {
  int code = -1;          // exit status; 128 + N when killed by signal N; 124 when the time limit hit
  bool signaled = false;  // killed by a signal (a crash, not an answer)
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `env` is a list of VAR=value settings (MNV2_MODEL is cleared and the XDG data folders point into an empty
// temporary folder unless given, so the user's environment and installed models cannot change the
// outcome). timeout_s > 0 kills the program after that many seconds (exit code 124).
inline CliResult run_cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                         const std::string& exe = MNV2_CLI_PATH, int timeout_s = 0) {
  TempDir tmp;
  std::string cmd = "env -u MNV2_MODEL " + shell_quote("XDG_DATA_HOME=" + tmp.file("xdg-data-home")) + " " +
                    shell_quote("XDG_DATA_DIRS=" + tmp.file("xdg-data-dirs"));
  for (const auto& e : env) cmd += " " + shell_quote(e);
  if (timeout_s > 0) cmd += " timeout -k 5 " + std::to_string(timeout_s);
  cmd += " " + shell_quote(exe);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(tmp.file("out")) + " 2>" + shell_quote(tmp.file("err")) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  // timeout(1) re-raises a signal that killed the program; a shell reports one as 128 + N.
  r.signaled = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) > 128);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(tmp.file("out"));
  r.err = read_file(tmp.file("err"));
  if (r.code == 0) keep_report_text(r.out);  // --json -, --csv -, topology --format json, classify --json
  return r;
}

inline std::string describe(const CliResult& r) {
  return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

}  // namespace mnv2::test
