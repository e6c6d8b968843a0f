// mnv2's arguments: one command's options as CLI11 parsed them, the run options of the engine's table resolved
// from them once, and the option declarations several commands share.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/options.h"
#include "mnv2/output_files.h"

namespace mnv2::cli {

// One command's options as CLI11 parsed them (CLI11 writes the help and refuses unknown options, missing values
// and repeats); the command reads them by name. Values stay text: each command checks its own (ranges, lists)
// with messages that name the option; the table's options are checked by the table when resolve() runs.
class Args {
 public:
  explicit Args(CLI::App& app) : app_(app) {}
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  void value(const std::string& name, const std::string& help);
  // A value naming a file the command writes: checked and reserved by reserve_outputs() before the command
  // runs, given its contents by put() and written, all or nothing, when the command has succeeded.
  void output(const std::string& name, const std::string& help);
  // A value naming a file (or folder) the command reads, FILE[,FILE...] when `list`: declared to the output set
  // by reserve_outputs(), so an output that is one of them is refused before the command runs.
  void input(const std::string& name, const std::string& help, bool list = false);
  void flag(const std::string& name, const std::string& help);
  // An option of the engine's table (mnv2/options.h) as the flag --NAME, its help from the table: what it
  // does, its values, its default (`command_default` where this command has its own) and its variable.
  void table(const std::string& name, const std::string& command_default = {});
  // The command's positional arguments: files it reads (declared as inputs, as input() does).
  void positional(const std::string& name, const std::string& help);

  // Every option's value and source: this command's defaults, then the environment, then the flags given. The
  // dispatcher resolves them once, after parsing, and hands them to the command; a bad value is a UsageError.
  OptionValues resolve() const;
  // "options from the environment: threads=2 ($MNV2_CPU_THREADS)" for the per-run options this command takes
  // whose value came from the environment; "" when none did.
  std::string environment_note(const OptionValues& values) const;

  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  bool flag(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // The arguments that say the same run on another machine: every option and flag given except those that name
  // files (input(), output(), positionals) and those in `except`, with the per-run table options that came
  // from the environment as flags, each as "--name" "value".
  std::vector<std::string> forwardable(const OptionValues& values, const std::vector<std::string>& except) const;
  // The file options given (inputs and outputs), by name: the agent refuses a run that has any.
  std::vector<std::string> file_options_given() const;
  // A repeatable option (--setup A --setup B): every value, in order.
  void values(const std::string& name, const std::string& help);
  std::vector<std::string> all(const std::string& name) const;

  // Whether the option's value names a file or folder (input(), output(), a table option of type path), for the
  // shell completion.
  bool names_file(const std::string& name) const;

  // Reserves every output given and declares every input (input(), positionals) to the set.
  void reserve_outputs();
  bool wants(const std::string& name) const { return outputs_.has(name); }
  void put(const std::string& name, std::string bytes) const { outputs_.put(name, std::move(bytes)); }
  OutputSet& outputs() const { return outputs_; }

 private:
  CLI::App& app_;
  std::map<std::string, std::string> values_;  // nodes stay put: CLI11 writes into them
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, CLI::Option*> options_;
  std::map<std::string, CLI::Option*> flags_;
  std::vector<std::string> positionals_;
  std::vector<std::string> output_names_;
  std::vector<std::pair<std::string, bool>> input_names_;  // name, FILE[,FILE...]
  std::vector<std::string> table_names_;                   // table options this command takes as flags
  std::map<std::string, std::string> command_defaults_;    // table defaults this command overrides
  mutable OutputSet outputs_;                              // filled by the command (const Args&), committed by dispatch
};

// `text` as an integer in lo..hi, for the flags that are not table options; `what` names the flag in the
// UsageError.
int parse_int(const std::string& text, const std::string& what, int lo, int hi);
// The items of a comma-separated list ("" items kept: the caller refuses them with its own message).
std::vector<std::string> split(const std::string& text, char sep);
// A comma-separated list of values of the table's integer option `name` (bench's --batch 1,8,256), each
// checked by the table as the flag --NAME.
std::vector<int> table_integers(const std::string& name, const std::string& list);
// The table's integer option `name` where this command takes less than the table does (eval's and the lab's
// batch): `max`, said against the flag's text as given.
int table_integer_at_most(const Args& args, const OptionValues& values, const std::string& name, int max);

// The options several commands share: the engine's table (mnv2/options.h) gives their flags and help.
void model_options(Args& a);
void labels_option(Args& a);
void backend_option(Args& a);
void batch_option(Args& a);
void size_option(Args& a);
void precision_option(Args& a);
void cuda_option_set(Args& a);  // every per-run cuda- and cudnn- option
void threads_option(Args& a);
void device_option(Args& a);  // the GPU the GPU backends run on
void counts_options(Args& a, const char* warmup, const char* iters);
// Where files are and the CUPTI switch (the options that are not part of a run): every command takes them.
void process_options(Args& a);
void report_options(Args& a, bool trace);
// --target NAME: where the run happens (a remote target of targets.json; mnv2/remote.h), not a run option.
void target_option(Args& a);
// profile, roofline and compare: one run described the same way.
void run_options(Args& a, bool compare);

}  // namespace mnv2::cli
