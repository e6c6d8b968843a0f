// mnv2's commands, one file each (cmd_NAME.cpp): declare_NAME adds the command's options to its Args, cmd_NAME
// runs it on what was parsed and on the run options the dispatcher (mnv2.cpp) resolved once. A command parses,
// calls one engine study and prints or writes its result. Exit codes: 0 success, 1 runtime error (Error), 2 usage
// error (UsageError); a command may return 1 itself where it printed why (runs refused, a failed lab check).
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "mnv2/options.h"

namespace mnv2::cli {

void declare_info(Args& a);
int cmd_info(const Args& args, const OptionValues& options);

void declare_topology(Args& a);
int cmd_topology(const Args& args, const OptionValues& options);

void declare_classify(Args& a);
int cmd_classify(const Args& args, const OptionValues& options);

void declare_plan(Args& a);
int cmd_plan(const Args& args, const OptionValues& options);

void declare_bench(Args& a);
int cmd_bench(const Args& args, const OptionValues& options);

void declare_profile(Args& a);
int cmd_profile(const Args& args, const OptionValues& options);

void declare_roofline(Args& a);
int cmd_roofline(const Args& args, const OptionValues& options);

void declare_deep_dive(Args& a);
int cmd_deep_dive(const Args& args, const OptionValues& options);

void declare_memory(Args& a);
int cmd_memory(const Args& args, const OptionValues& options);

void declare_eval(Args& a);
int cmd_eval(const Args& args, const OptionValues& options);

void declare_compare(Args& a);
int cmd_compare(const Args& args, const OptionValues& options);

void declare_runs(Args& a);
int cmd_runs(const Args& args, const OptionValues& options);

void declare_lab(Args& a);
int cmd_lab(const Args& args, const OptionValues& options);

void declare_targets(Args& a);
int cmd_targets(const Args& args, const OptionValues& options);
void declare_remote(Args& a);
int cmd_remote(const Args& args, const OptionValues& options);
// Hidden: the fixed entry point of a remote target (mnv2/remote.h), started by ssh or srun.
void declare_agent(Args& a);
int cmd_agent(const Args& args, const OptionValues& options);
// For the agent: "" when `args` are a run of `command` a target may take (no option that names a file), else why
// not (mnv2.cpp: it parses them with the command's own declaration).
std::string check_remote_args(const std::string& command, const std::vector<std::string>& args);
// Hidden: the process `mnv2 lab` starts to run a user's kernel apart from itself.
// mnv2 completion bash|zsh and mnv2 man: generated from the commands as declared (their options, the engine's
// option table's values and defaults); the dispatcher hands them every command first.
struct DeclaredCommand {
  const CLI::App* app;
  const Args* args;
  const char* examples;  // two command lines, one per line
};
void set_declared_commands(const CLI::App* root, std::vector<DeclaredCommand> commands);
void declare_completion(Args& a);
int cmd_completion(const Args& args, const OptionValues& options);
void declare_man(Args& a);
int cmd_man(const Args& args, const OptionValues& options);

void declare_lab_worker(Args& a);
int cmd_lab_worker(const Args& args, const OptionValues& options);

}  // namespace mnv2::cli
