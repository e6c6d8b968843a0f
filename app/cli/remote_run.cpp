// A study on a remote target (remote_run.h).
#include "remote_run.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "common/remote_session.h"
#include "common/remote_targets.h"
#include "mnv2/bench_report.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "mnv2/labels.h"
#include "mnv2/output_files.h"
#include "mnv2/printable.h"
#include "mnv2/report.h"
#include "mnv2/tensor.h"
#include "output.h"
#include "run_request.h"

namespace mnv2::cli {

namespace fs = std::filesystem;

remote::Target target_named(const std::string& name) {
  if (name.find_first_of(",@") != std::string::npos)
    throw UsageError("--target " + printable(name) +
                     ": several places at once (A,B or NAME@GPU) are for profile and compare; give one target");
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

namespace {

// The request run on the target with this terminal's view of it: progress on standard error, the study's own
// output escaped as it arrives, Ctrl-C (SIGINT, SIGTERM, SIGHUP) as Cancel. `cleanup` runs whatever happens.
remote::RemoteRunResult run_with_terminal(const remote::Target& target, remote::RemoteRunRequest& r,
                                          const std::function<void()>& cleanup) {
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
  // Ctrl-C and its kin cancel the session while it lives; the handlers before it come back, and `cleanup` runs,
  // however it ends.
  struct Guard {
    const std::function<void()>& cleanup;
    EscapedStream &out, &err;
    bool tty;
    struct sigaction old_int {
    }, old_term{}, old_hup{};
    ~Guard() {
      ::sigaction(SIGINT, &old_int, nullptr);
      ::sigaction(SIGTERM, &old_term, nullptr);
      ::sigaction(SIGHUP, &old_hup, nullptr);
      if (tty) std::cerr << "\r\033[K";
      out.finish();
      err.finish();
      cleanup();
    }
  } guard{cleanup, out, err, tty};
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  remote::Session session(target, session_config(frontend::remote_environment(), false), progress);
  struct Registered {  // a signal reaches the session only while it lives
    explicit Registered(remote::Session* s) { g_session = s; }
    ~Registered() { g_session = nullptr; }
  } registered(&session);
  ::sigaction(SIGINT, &sa, &guard.old_int);
  ::sigaction(SIGTERM, &sa, &guard.old_term);
  ::sigaction(SIGHUP, &sa, &guard.old_hup);
  return session.run(r);
}

}  // namespace

int run_on_target(const Args& args, const OptionValues& options, const std::string& command) {
  if (const std::vector<Place> places = parse_places(*args.get("--target"));
      places.size() > 1 || places.front().device >= 0)
    return run_on_places(args, options, command, places);
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
  remote::RemoteRunResult result = run_with_terminal(target, r, [&] {
    if (!temp_dir.empty()) fs::remove_all(temp_dir);
  });
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

namespace mnv2::cli {

int study_on_target(const Args& args, const OptionValues& options, const std::string& command) {
  const remote::Target target = target_named(*args.get("--target"));
  for (const char* local_only : {"--with", "--show"})
    if (args.get(local_only))
      throw UsageError(std::string(local_only) + " reads files on this machine: not with --target");
  if (!args.positionals().empty()) throw UsageError("--target: " + command + " takes no file arguments there");
  const LoadedModel m = load_model(args, options);
  if (m.location.path.empty())
    throw UsageError("--target: name the model with --model (or $MNV2_MODEL): a remote run sends the model it runs");
  if (const std::string why = frontend::remote_model_refusal(m.model); !why.empty())
    throw UsageError("--target: " + why);
  remote::RemoteRunRequest r;
  r.command = command;
  r.args = args.forwardable(options, {"--target"});
  r.model_path = m.location.path;
  std::string temp_dir;
  auto temp = [&]() -> const std::string& {
    if (temp_dir.empty()) {
      std::string dir = (fs::temp_directory_path() / "mnv2-remote-XXXXXX").string();
      if (::mkdtemp(dir.data()) == nullptr) throw Error("cannot create a private temporary folder");
      temp_dir = dir;
    }
    return temp_dir;
  };
  try {
    if (auto image = args.get("--image")) {
      // Decoded here: the target needs no image codecs; the tensor travels under the image's name.
      const Tensor t = preprocess(decode_image_file(*image), m.model.preprocess);
      write_tensor_file(temp() + "/input.f32", t);
      r.files.push_back({"--tensor", fs::path(*image).filename().string(), temp() + "/input.f32"});
    }
    if (auto tensor = args.get("--tensor"))
      r.files.push_back({"--tensor", fs::path(*tensor).filename().string(), *tensor});
    for (const char* output : {"--json", "--csv"})
      if (args.wants(output)) r.outputs.push_back(output);
  } catch (...) {
    if (!temp_dir.empty()) fs::remove_all(temp_dir);
    throw;
  }
  const remote::RemoteRunResult result = run_with_terminal(target, r, [&] {
    if (!temp_dir.empty()) fs::remove_all(temp_dir);
  });
  if (result.exit_code != 0) {
    std::cerr << "error: " << command << " on target '" << target.name << "' (" << printable(result.host)
              << ") ended with exit status " << result.exit_code << "; no file written\n";
    return result.exit_code == 2 ? 2 : 1;
  }
  // Untrusted: each file read by its reader within the report budget before it is written here.
  for (const auto& [option, bytes] : result.outputs) {
    try {
      if (option == "--json") {
        const json::Json j = json::parse(bytes, inputs::kReport);
        if (command == "bench") bench_from_json(j);
      } else if (bytes.size() > inputs::kReport.max_bytes) {
        throw Error("larger than a report may be");
      }
    } catch (const Error& e) {
      throw Error("target '" + target.name + "' sent a " + option + " file that does not read: " + e.what());
    }
    args.put(option, bytes);
  }
  std::cout << "ran on target " << printable(target.name) << ", host " << printable(result.host)
            << (result.slurm_job.empty() ? std::string() : ", Slurm job " + printable(result.slurm_job)) << "\n";
  return 0;
}

}  // namespace mnv2::cli

namespace mnv2::cli {

int eval_on_target(const Args& args, const OptionValues& options) {
  const remote::Target target = target_named(*args.get("--target"));
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  const auto images_dir = args.get("--images");
  if (!images_dir) throw UsageError("eval needs --images DIR");
  if (!fs::is_directory(*images_dir)) throw Error(*images_dir + ": no such folder");
  const LoadedModel m = load_model(args, options);
  if (m.location.path.empty())
    throw UsageError("--target: name the model with --model (or $MNV2_MODEL): a remote run sends the model it runs");
  const std::vector<std::string> labels =
      args.get("--labels") ? read_labels_file(*args.get("--labels")) : builtin_labels(m.model.num_classes);
  // The set the local rules pick, sent with a list of it: the target evaluates exactly these files and labels.
  const std::vector<EvalItem> items = args.get("--list")
                                          ? read_eval_list(*args.get("--list"), *images_dir, m.model.num_classes)
                                          : scan_class_folders(*images_dir, labels);
  std::string prefix = *images_dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  prefix += "/";
  remote::RemoteTree tree{"--images", *images_dir, {}};
  std::string list;
  std::vector<std::string> notes;
  for (const EvalItem& item : items) {
    if (!item.skip.empty()) {
      notes.push_back(item.path + ": " + item.skip + " (not sent)");
      continue;
    }
    const std::string rel = item.path.rfind(prefix, 0) == 0 ? item.path.substr(prefix.size()) : std::string();
    if (rel.empty() || rel.find('\n') != std::string::npos || rel.find('\r') != std::string::npos) {
      notes.push_back(item.path + ": a name a list line cannot hold (not sent)");
      continue;
    }
    tree.relative.push_back(rel);
    list += rel + " " + std::to_string(item.label) + "\n";
  }
  std::string dir = (fs::temp_directory_path() / "mnv2-remote-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr) throw Error("cannot create a private temporary folder");
  const std::string list_path = dir + "/eval-list.txt";
  try {
    write_output_file(list_path, list);
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  remote::RemoteRunRequest r;
  r.command = "eval";
  r.args = args.forwardable(options, {"--target"});
  r.model_path = m.location.path;
  r.files.push_back({"--list", "eval-list.txt", list_path});
  if (auto l = args.get("--labels")) r.files.push_back({"--labels", fs::path(*l).filename().string(), *l});
  r.trees.push_back(tree);
  r.tree_notes = &notes;
  if (args.wants("--json")) r.outputs.push_back("--json");
  const remote::RemoteRunResult result = run_with_terminal(target, r, [&] { fs::remove_all(dir); });
  for (const std::string& note : notes) std::cerr << "note: " << printable(note) << "\n";
  if (result.exit_code != 0) {
    std::cerr << "error: eval on target '" << target.name << "' (" << printable(result.host)
              << ") ended with exit status " << result.exit_code << "; no file written\n";
    return result.exit_code == 2 ? 2 : 1;
  }
  if (auto it = result.outputs.find("--json"); it != result.outputs.end()) {
    try {
      json::parse(it->second, inputs::kReport);
    } catch (const Error& e) {
      throw Error("target '" + target.name + "' sent a --json file that does not read: " + e.what());
    }
    args.put("--json", it->second);
  }
  std::cout << "ran on target " << printable(target.name) << ", host " << printable(result.host)
            << (result.slurm_job.empty() ? std::string() : ", Slurm job " + printable(result.slurm_job)) << "\n";
  return 0;
}

}  // namespace mnv2::cli
