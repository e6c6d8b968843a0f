// A study on a remote target (remote_run.h).
#include "remote_run.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/remote_session.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/tensor.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {

namespace fs = std::filesystem;

remote::Target target_named(const std::string& name) {
  const frontend::RemoteEnvironment env = frontend::remote_environment();
  const std::vector<remote::Target> targets = remote::read_targets(env.targets_file);
  if (const remote::Target* t = remote::find_target(targets, name)) return *t;
  std::string names;
  for (const auto& x : targets) names += (names.empty() ? "" : ", ") + x.name;
  throw UsageError(
      "--target: no target '" + printable(name) + "' in " + env.targets_file +
      (names.empty() ? std::string(" (it has none: 'mnv2 targets add NAME HOST')") : " (it has " + names + ")"));
}

namespace {

// Text from the target on our terminal: line by line, each line escaped (no escape sequence or control byte of
// the target's reaches the terminal).
class EscapedStream {
 public:
  explicit EscapedStream(std::ostream& out) : out_(out) {}
  void add(const std::string& bytes) {
    pending_ += bytes;
    size_t nl;
    while ((nl = pending_.find('\n')) != std::string::npos) {
      out_ << printable(pending_.substr(0, nl)) << "\n";
      pending_.erase(0, nl + 1);
    }
    out_.flush();
  }
  void finish() {
    if (!pending_.empty()) out_ << printable(pending_) << "\n";
    pending_.clear();
  }

 private:
  std::ostream& out_;
  std::string pending_;
};

std::atomic<remote::Session*> g_session{nullptr};

// Ctrl-C (SIGINT), SIGTERM, SIGHUP: the remote run is cancelled (the agent kills its process group and cancels its
// job) and the command ends without a report.
void on_signal(int) {
  if (remote::Session* s = g_session.load()) s->cancel();
}

}  // namespace

int run_on_target(const Args& args, const OptionValues& options, const std::string& command) {
  const remote::Target target = target_named(*args.get("--target"));
  ProfileRequest req = parse_profile_request(args, options, command == "compare", true);
  if (req.m.location.path.empty())
    throw UsageError("--target: name the model with --model (or $MNV2_MODEL): a remote run sends the model it runs");
  if (const std::string why = frontend::remote_model_refusal(req.m.model); !why.empty())
    throw UsageError("--target: " + why);
  remote::RemoteRunRequest r;
  r.command = command;
  r.args = args.forwardable(options, {"--target"});
  r.model_path = req.m.location.path;
  r.outputs = {"--json"};
  // The input travels as the tensor this machine made from it, under the name of the user's file.
  std::string temp_dir;
  if (req.base.input) {
    std::string dir = (fs::temp_directory_path() / "mnv2-remote-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) throw Error("cannot create a private temporary folder");
    temp_dir = dir;
    const std::string given = args.get("--image") ? *args.get("--image") : *args.get("--tensor");
    std::string name = fs::path(given).filename().string();
    if (name.empty() || name == "." || name == "..") name = "input";
    const std::string path = temp_dir + "/input.f32";
    write_tensor_file(path, *req.base.input);
    r.files.push_back({"--tensor", name, path});
  }
  EscapedStream out(std::cout), err(std::cerr);
  r.on_output = [&](bool is_stderr, const std::string& bytes) { (is_stderr ? err : out).add(bytes); };
  const bool tty = isatty(2);
  std::string last_stage;
  auto progress = [&](const remote::RemoteProgress& p) {
    if (p.stage == "run") return;  // the study's own progress lines arrive on its standard error
    if (tty) {
      std::cerr << "\r\033[K" << target.name << ": " << p.stage << " " << printable(p.phase);
      if (p.total > 0) std::cerr << " " << p.done << "/" << p.total;
      std::cerr << std::flush;
    } else if (p.stage != last_stage) {
      std::cerr << target.name << ": " << p.stage << " " << printable(p.phase) << "\n";
    }
    last_stage = p.stage;
  };
  remote::RemoteRunResult result;
  struct sigaction sa {
  }, old_int{}, old_term{}, old_hup{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  try {
    remote::Session session(target, session_config(frontend::remote_environment(), false), progress);
    g_session = &session;
    ::sigaction(SIGINT, &sa, &old_int);
    ::sigaction(SIGTERM, &sa, &old_term);
    ::sigaction(SIGHUP, &sa, &old_hup);
    result = session.run(r);
    g_session = nullptr;
  } catch (...) {
    g_session = nullptr;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    if (tty) std::cerr << "\r\033[K";
    out.finish();
    err.finish();
    if (!temp_dir.empty()) fs::remove_all(temp_dir);
    throw;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  if (tty) std::cerr << "\r\033[K";
  out.finish();
  err.finish();
  if (!temp_dir.empty()) fs::remove_all(temp_dir);
  if (result.exit_code != 0) {
    std::cerr << "error: " << command << " on target '" << target.name << "' (" << printable(result.host)
              << ") ended with exit status " << result.exit_code << "; no report written\n";
    return result.exit_code == 2 ? 2 : 1;
  }
  const std::vector<RunReport> reports = remote::reports_from_target(result, target, req.base, req.m.location.path);
  std::cout << "ran on target " << printable(target.name) << ", host " << printable(result.host)
            << (result.slurm_job.empty() ? std::string() : ", Slurm job " + printable(result.slurm_job)) << "\n";
  put_reports(args, reports);
  return 0;
}

}  // namespace mnv2::cli
