// Every run option as data: the one table that the CLI's flags and help, the app's run settings and saved
// settings, the --ncu-command line, a report's options object and the comparability check all come from.
// Precedence is one rule for every option and front end: flag > environment > saved setting > default. The
// engine reads no environment variable: a front end reads the variable a spec names and offers its value here.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "mnv2/backend.h"

namespace mnv2 {

// Where a value came from, weakest first (the precedence rule is this order). unknown: read from a report
// written before sources were recorded.
enum class OptionSource { unknown, default_value, saved, environment, flag };
const char* to_string(OptionSource s);                      // "unknown", "default", "saved", "environment", "flag"
OptionSource parse_option_source(const std::string& text);  // throws Error

enum class OptionType {
  choice,   // one of `choices`
  integer,  // a whole number in [min, max]
  size,     // HxW or one side (input size); "" = the model's
  text,     // free text checked by the engine where it is used (a GEMM tile)
  path,     // a file or folder; "" = the engine's default
};

struct OptionSpec {
  std::string name;  // "cuda-fusion": the flag --cuda-fusion, the app's setting and the report's key
  OptionType type = OptionType::choice;
  std::vector<std::string> choices;   // choice: the accepted values, the default among them
  long long min = 0, max = 0;         // integer: the accepted range
  std::string default_value;          // as text; "" where the engine decides (integer 0 = the engine's default)
  std::string help;                   // one line, no trailing period
  std::vector<std::string> backends;  // the backends that honour it; empty: every backend
  std::string env;                    // the environment variable a front end maps to it; "" = none
  // A value the variable holds as the option's value ("" = the same text; MNV2_DISABLE_CUPTI=1 means "off").
  std::function<std::string(const std::string&)> from_env;
  bool per_run = true;          // part of a run's description (stored in reports, compared); false: where files are
  bool affects_figures = true;  // a difference between two runs makes their figures not directly comparable
};

// The table, in the order front ends show it.
const std::vector<OptionSpec>& option_table();
// The spec of `name`; nullptr if there is none.
const OptionSpec* find_option(std::string_view name);
// Whether `backend` honours the option.
bool honours(const OptionSpec& spec, const std::string& backend);

struct OptionValue {
  std::string value;
  OptionSource source = OptionSource::default_value;
  bool operator==(const OptionValue&) const = default;
};

// Every option's value and where it came from. Starts at the table's defaults (or a command's own defaults,
// e.g. bench's warm-up count); offer() applies the precedence rule.
class OptionValues {
 public:
  OptionValues();
  explicit OptionValues(const std::map<std::string, std::string>& command_defaults);

  // Takes `value` from `source` unless the option already holds one from a stronger source. An unknown
  // option is an Error; a value outside the spec is a UsageError naming the option and where the value came
  // from ("--batch", "$MNV2_CPU_THREADS", "saved setting batch").
  void offer(const std::string& name, const std::string& value, OptionSource source);
  // Sets a recorded value and source as they are, whatever the precedence (a report's options read back);
  // the value is checked like offer()'s.
  void assign(const std::string& name, const std::string& value, OptionSource source);
  // The environment's values through `lookup` (a front end passes getenv): for every spec that names a
  // variable, its non-empty value is offered with source environment.
  void offer_environment(const std::function<const char*(const char*)>& lookup);

  const OptionValue& at(const std::string& name) const;  // throws Error for an unknown name
  const std::string& value(const std::string& name) const { return at(name).value; }
  long long integer(const std::string& name) const;
  const std::map<std::string, OptionValue>& all() const { return values_; }
  // Options whose value came from the environment, in table order ("threads=4 (MNV2_CPU_THREADS)").
  std::vector<std::string> from_environment() const;
  bool operator==(const OptionValues&) const = default;

 private:
  std::map<std::string, OptionValue> values_;
};

// What the values make of a backend's preparation (batch, size: `model_hw` where input-size is unset;
// precision; cuda and cudnn options; host threads).
PrepareConfig prepare_config_of(const OptionValues& values, std::pair<int, int> model_hw);

// "--cuda-fusion block --batch 8 ...": the flags that reproduce a run of `backend` with these values, in table
// order: every per-run option the backend honours (but `skip` and the backend itself) whose value is not the
// default, or that has an environment variable (another environment must not change what runs). Empty text
// values are left out (unset is their default). For the --ncu-command line and a report's "run it again".
std::vector<std::string> option_flags(const OptionValues& values, const std::string& backend,
                                      const std::set<std::string>& skip = {});

// One line for a run's first line of output when any value came from the environment:
// "options from the environment: threads=4 (MNV2_CPU_THREADS)"; "" when none did.
std::string environment_note(const OptionValues& values);

// What the engine needs once per process and would otherwise read from the environment: where files are and
// the CUPTI switch. A front end fills it from its OptionValues and the environment (app/common/environment.h)
// and hands it over with set_process_settings() before the engine's first use; the engine reads no variable.
struct ProcessSettings {
  // The XDG base directories and HOME as the front end read them ("" = unset).
  std::string home, xdg_data_home, xdg_data_dirs, xdg_cache_home;
  std::string model_env;         // the model option's value when it came from the environment (MNV2_MODEL)
  std::string cache_dir;         // option cache-dir ("" = the XDG default)
  std::string cudnn_plan_cache;  // option cudnn-plan-cache ("" = cudnn_plans.json in the cache folder; "off")
  bool cupti_off = false;        // option cupti = off
  std::string cupti_off_reason;  // "MNV2_DISABLE_CUPTI=1", "--cupti off": said where CUPTI is not used
  std::string lab_dir;           // option lab-dir ("" = the installed or source tree's)
  std::string cuda_toolkit;      // $CUDA_PATH or $CUDA_HOME (NVRTC's headers for the kernel lab), "" = unset
  int cpu_threads = 0;           // option threads: the default of a PrepareConfig that says 0
};
void set_process_settings(const ProcessSettings& settings);
const ProcessSettings& process_settings();

}  // namespace mnv2
