// The profile study on a remote target (mnv2/remote.h): the arguments of a configuration, the run, and the report
// that comes back read and named like any report.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/remote.h"
#include "mnv2/report.h"
#include "mnv2/tensor.h"

namespace mnv2::remote {

namespace fs = std::filesystem;

std::vector<std::string> profile_arguments(const ProfileConfig& config, const std::vector<std::string>& backends) {
  const OptionValues values = options_of(config);
  std::vector<std::string> args;
  // Every per-run option, default or not (not option_flags()' short line): the target's environment (its
  // $MNV2_CPU_THREADS, ...) must not change what runs. An empty value is the option unset, and so is a default that
  // no flag may give ("0" threads: one per core there), as `mnv2 profile --target` leaves an option not given.
  for (const OptionSpec& s : option_table()) {
    const std::string& value = values.value(s.name);
    if (!s.per_run || s.name == "backend" || value.empty()) continue;
    if (value == s.default_value) {
      try {
        OptionValues flag;
        flag.offer(s.name, value, OptionSource::flag);
      } catch (const UsageError&) {
        continue;
      }
    }
    args.insert(args.end(), {"--" + s.name, value});
  }
  if (backends.size() > 1) {
    std::string list;
    for (const std::string& b : backends) list += (list.empty() ? "" : ",") + b;
    args.insert(args.end(), {"--backends", list});
  } else {
    args.insert(args.end(), {"--backend", backends.empty() ? config.backend : backends.front()});
  }
  return args;
}

std::vector<RunReport> reports_from_target(const RemoteRunResult& result, const Target& target,
                                           const ProfileConfig& config, const std::string& model_path) {
  if (result.exit_code != 0) {
    std::string last = result.stderr_text;
    while (!last.empty() && last.back() == '\n') last.pop_back();
    if (last.size() > 1500) last = "..." + last.substr(last.size() - 1500);
    throw Error("the run on target '" + target.name + "' (" + result.host + ") ended with exit status " +
                std::to_string(result.exit_code) + (last.empty() ? std::string() : ": " + last));
  }
  auto it = result.outputs.find("--json");
  if (it == result.outputs.end()) throw Error("target '" + target.name + "' sent no report");
  std::vector<RunReport> reports;
  try {
    reports = reports_from_json(json::parse(it->second, inputs::kReport));
  } catch (const Error& e) {
    throw Error("target '" + target.name + "' sent a report that does not read: " + e.what());
  }
  for (RunReport& r : reports) {
    r.origin = RunOrigin{target.name, result.host, result.slurm_job};
    r.model_source = model_path;  // the file sent (the target ran its copy: the same SHA-256, in model_checksum)
    if (!config.input_name.empty()) r.config.input_name = config.input_name;
    // Each option as this front end resolved it (flag, environment, saved setting), where the value is the one that
    // ran.
    for (const OptionSpec& s : option_table()) {
      if (!s.per_run || !config.options.all().count(s.name) || !r.options.all().count(s.name)) continue;
      if (r.options.value(s.name) == config.options.value(s.name))
        r.options.assign(s.name, config.options.value(s.name), config.options.at(s.name).source);
    }
  }
  return reports;
}

std::vector<RunReport> profile_on_target(const Target& target, const SessionConfig& session,
                                         const ProfileConfig& config, const std::vector<std::string>& backends,
                                         const std::string& model_path, const RemoteProgressFn& progress,
                                         const std::function<void(bool, const std::string&)>& on_output) {
  if (model_path.empty())
    throw UsageError("a run on a target needs a model file (--model): the run sends the model it runs");
  RemoteRunRequest request;
  request.command = backends.size() > 1 ? "compare" : "profile";
  request.args = profile_arguments(config, backends);
  request.model_path = model_path;
  request.outputs = {"--json"};
  request.on_output = on_output;
  std::string dir;
  struct Cleanup {
    std::string& dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  if (config.input) {
    std::string d = (fs::temp_directory_path() / "mnv2-remote-XXXXXX").string();
    if (::mkdtemp(d.data()) == nullptr) throw Error("cannot create a private temporary folder");
    dir = d;
    std::string name = fs::path(config.input_name).filename().string();
    if (name.empty() || name == "." || name == "..") name = "input.f32";
    write_tensor_file(dir + "/input.f32", *config.input);
    request.files.push_back({"--tensor", name, dir + "/input.f32"});
  }
  Session s(target, session, progress);
  return reports_from_target(s.run(request), target, config, model_path);
}

}  // namespace mnv2::remote
