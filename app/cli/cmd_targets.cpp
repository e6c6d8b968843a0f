// mnv2 targets list|add|remove|probe|connect|disconnect: the remote targets of $XDG_CONFIG_HOME/mnv2-profiler/
// targets.json (mnv2/remote.h), shared with the app. A probe goes the way a run goes (ssh, srun) and says what the
// target has and what is wrong there.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "common/environment.h"
#include "common/remote_session.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/printable.h"
#include "mnv2/remote.h"
#include "remote_run.h"

namespace mnv2::cli {
namespace {

using json::Json;

Json probe_json(const remote::ProbeResult& p) {
  Json gpus = Json::array();
  for (const auto& g : p.gpus)
    gpus.push_back(Json{{"index", g.index},
                        {"name", g.name},
                        {"uuid", g.uuid},
                        {"compute_capability", g.compute_capability},
                        {"memory_bytes", g.memory_bytes}});
  Json backends = Json::array();
  for (const auto& b : p.backends)
    backends.push_back(Json{{"name", b.name}, {"available", b.available}, {"reason", b.reason}});
  return Json{{"target", p.target},
              {"ok", true},
              {"host", p.host},
              {"slurm_job", p.slurm_job},
              {"mnv2_version", p.mnv2_version},
              {"mnv2_commit", p.mnv2_commit},
              {"mnv2_path", p.mnv2_path},
              {"protocol", p.protocol},
              {"glibc", p.glibc},
              {"driver", p.driver},
              {"cuda_runtime", p.cuda_runtime},
              {"architectures", p.architectures},
              {"gpus", gpus},
              {"backends", backends},
              {"problems", p.problems},
              {"seconds", p.seconds}};
}

void print_probe(const remote::ProbeResult& p) {
  std::cout << "target " << printable(p.target) << ": host " << printable(p.host)
            << (p.slurm_job.empty() ? "" : ", Slurm job " + printable(p.slurm_job)) << "; mnv2 "
            << printable(p.mnv2_version) << " (commit " << printable(p.mnv2_commit) << ", protocol " << p.protocol
            << ") at " << printable(p.mnv2_path) << "; glibc " << printable(p.glibc) << "\n";
  std::cout << "  driver " << printable(p.driver.empty() ? "none" : p.driver) << ", CUDA runtime "
            << printable(p.cuda_runtime) << ", architectures "
            << printable(p.architectures.empty() ? "none" : p.architectures) << "\n";
  for (const auto& g : p.gpus)
    std::cout << "  GPU " << g.index << ": " << printable(g.name) << " (sm " << printable(g.compute_capability) << ", "
              << (g.memory_bytes >> 20) << " MiB) " << printable(g.uuid) << "\n";
  std::string can, cannot;
  for (const auto& b : p.backends) {
    if (b.available)
      can += (can.empty() ? "" : ", ") + b.name;
    else
      cannot += "    " + printable(b.name) + ": " + printable(b.reason) + "\n";
  }
  std::cout << "  backends: " << printable(can.empty() ? "none" : can) << "\n";
  if (!cannot.empty()) std::cout << "  not available:\n" << cannot;
  for (const std::string& problem : p.problems) std::cout << "  problem: " << printable(problem) << "\n";
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", p.seconds);
  std::cout << "  answered in " << seconds << " s\n";
}

}  // namespace

remote::SessionConfig session_config(const frontend::RemoteEnvironment& env, bool say_note) {
  std::string note;
  remote::SessionConfig c = frontend::remote_session_config(env, &note);
  if (!note.empty() && say_note) std::cerr << "note: " << printable(note) << "\n";
  return c;
}

void declare_targets(Args& a) {
  a.positional("words", "list | add NAME DESTINATION | remove NAME | probe [NAME...] | connect NAME | disconnect NAME");
  a.value("--ssh-config", "add: ssh -F FILE for this target (default: your ~/.ssh/config)");
  a.value("--slurm-partition", "add: run through Slurm's srun on this partition");
  a.value("--slurm-gres", "add: srun --gres, e.g. gpu:1 or gpu:h100:1");
  a.value("--slurm-time", "add: srun --time, e.g. 10:00");
  a.value("--slurm-account", "add: srun --account");
  a.values("--slurm-arg", "add: one more srun argument (repeat for more)");
  a.value("--pending-timeout", "add: cancel a Slurm job pending longer than this many seconds (default 300)");
  a.values("--setup", "add: a shell line run on the target before the agent, e.g. 'module load cuda' (repeat)");
  a.flag("--slurm", "add: run through Slurm's srun with the cluster's default partition");
  a.flag("--json", "list and probe: JSON on standard output");
}

int cmd_targets(const Args& args, const OptionValues&) {
  // The positionals are words, not files: they were declared as inputs only to have CLI11 collect them.
  std::vector<std::string> words = args.positionals();
  if (words.empty()) throw UsageError("targets needs an action: list, add, remove, probe, connect or disconnect");
  const std::string action = words.front();
  words.erase(words.begin());
  const frontend::RemoteEnvironment env = frontend::remote_environment();
  std::vector<remote::Target> targets = remote::read_targets(env.targets_file);
  auto need = [&](const std::string& name) -> const remote::Target& {
    const remote::Target* t = remote::find_target(targets, name);
    if (t == nullptr) {
      std::string names;
      for (const auto& x : targets) names += (names.empty() ? "" : ", ") + x.name;
      throw UsageError(
          "no target '" + printable(name) + "' in " + env.targets_file +
          (names.empty() ? std::string(" (it has none: 'mnv2 targets add NAME HOST')") : " (it has " + names + ")"));
    }
    return *t;
  };
  if (action == "list") {
    if (!words.empty()) throw UsageError("targets list takes no more words");
    if (args.flag("--json")) {
      Json list = Json::array();
      for (const auto& t : targets)
        list.push_back(Json{{"name", t.name}, {"description", frontend::describe_target(t)}});
      // resources/schemas/mnv2.targets.schema.json; probe's list (below) is recognised by its shape.
      const Json out{{"schema", "mnv2.targets/1"}, {"targets_file", env.targets_file}, {"targets", list}};
      std::cout << json::dump(out, 2) << "\n";
      return 0;
    }
    std::cout << "local: this machine\n";
    for (const auto& t : targets) std::cout << printable(t.name) << ": " << frontend::describe_target(t) << "\n";
    if (targets.empty()) std::cout << "(no remote targets in " << printable(env.targets_file) << ")\n";
    return 0;
  }
  if (action == "add") {
    if (words.size() != 2) throw UsageError("targets add NAME DESTINATION (an ssh Host, or user@host[:port])");
    remote::Target t = remote::target_from_destination(words[0], words[1]);
    if (auto f = args.get("--ssh-config")) t.ssh_config = *f;
    const bool slurm = args.flag("--slurm") || args.get("--slurm-partition") || args.get("--slurm-gres") ||
                       args.get("--slurm-time") || args.get("--slurm-account") || !args.all("--slurm-arg").empty() ||
                       args.get("--pending-timeout");
    if (slurm) {
      remote::SlurmLauncher l;
      l.partition = args.get_or("--slurm-partition", "");
      l.gres = args.get_or("--slurm-gres", "");
      l.time_limit = args.get_or("--slurm-time", "");
      l.account = args.get_or("--slurm-account", "");
      l.extra = args.all("--slurm-arg");
      if (auto p = args.get("--pending-timeout")) l.pending_timeout_s = parse_int(*p, "--pending-timeout", 1, 604800);
      t.slurm = l;
    }
    t.setup = args.all("--setup");
    remote::check_target(t);
    if (remote::find_target(targets, t.name) != nullptr)
      throw UsageError("a target '" + t.name + "' exists: 'mnv2 targets remove " + t.name + "' first");
    targets.push_back(t);
    remote::write_targets(env.targets_file, targets);
    std::cout << "added " << printable(t.name) << ": " << frontend::describe_target(t) << "\n";
    // What ssh itself makes of it (Host aliases, User, Port, ProxyJump of the configuration): said, not stored.
    std::string why;
    const std::string resolved = remote::ssh_resolve(t, session_config(env, false).ssh, &why);
    if (!resolved.empty())
      std::cout << "  ssh resolves it to " << printable(resolved) << "\n";
    else
      std::cerr << "note: ssh -G could not resolve it: " << printable(why) << "\n";
    return 0;
  }
  if (action == "remove") {
    if (words.size() != 1) throw UsageError("targets remove NAME");
    need(words[0]);
    std::erase_if(targets, [&](const remote::Target& t) { return t.name == words[0]; });
    remote::write_targets(env.targets_file, targets);
    std::cout << "removed " << printable(words[0]) << "\n";
    return 0;
  }
  if (action == "probe") {
    std::vector<remote::Target> chosen;
    for (const std::string& w : words) chosen.push_back(need(w));
    if (words.empty()) chosen = targets;
    if (chosen.empty()) throw UsageError("no targets to probe ('mnv2 targets add NAME HOST')");
    const remote::SessionConfig config = session_config(env, true);
    int failed = 0;
    Json all = Json::array();
    for (const remote::Target& t : chosen) {
      try {
        remote::Session s(t, config, [&](const remote::RemoteProgress& p) {
          if (p.stage == "pending" && isatty(2)) std::cerr << "\r" << printable(t.name) << ": " << printable(p.phase);
          if (p.stage == "pending" && !isatty(2))
            std::cerr << printable(t.name) << ": pending, " << printable(p.phase) << "\n";
        });
        const remote::ProbeResult r = s.probe();
        if (args.flag("--json"))
          all.push_back(probe_json(r));
        else
          print_probe(r);
      } catch (const Error& e) {
        ++failed;
        if (args.flag("--json")) all.push_back(Json{{"target", t.name}, {"ok", false}, {"error", e.what()}});
        std::cerr << "error: " << printable(e.what()) << "\n";
      }
    }
    if (args.flag("--json")) std::cout << json::dump(all, 2) << "\n";
    return failed == 0 ? 0 : 1;
  }
  if (action == "connect" || action == "disconnect") {
    if (words.size() != 1) throw UsageError("targets " + action + " NAME");
    const remote::Target& t = need(words[0]);
    remote::SessionConfig config = session_config(env, true);
    if (config.ssh.control_dir.empty())
      throw Error("no private folder for ssh's control socket: cannot keep a connection");
    if (action == "disconnect") {
      const auto argv = remote::ssh_exit_argv(t, config.ssh);
      std::vector<char*> cargv;
      std::vector<std::string> copy = argv;
      for (std::string& a : copy) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      std::cout.flush();
      ::execvp(cargv[0], cargv.data());
      throw Error("cannot start " + argv[0]);
    }
    // An interactive login that stays as the master connection (frontend::connect_argv); runs then reuse it.
    std::vector<std::string> argv = frontend::connect_argv(t, config);
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::cout << "connecting to " << printable(t.host) << " (the connection is kept for an hour)\n";
    std::cout.flush();
    ::execvp(cargv[0], cargv.data());
    throw Error("cannot start " + argv[0]);
  }
  throw UsageError("unknown targets action '" + printable(action) +
                   "': list, add, remove, probe, connect or disconnect");
}

}  // namespace mnv2::cli
