// What both front ends read from the process environment, in one place: the variables the option table
// (mnv2/options.h) names, offered with source "environment", and the folders and switches the engine takes
// as ProcessSettings. The engine itself reads no environment variable.
#pragma once

#include <cstdlib>
#include <string>

#include "mnv2/options.h"

namespace mnv2::frontend {

// Offers every table variable that is set ($MNV2_CPU_THREADS, $MNV2_CUDA_FUSE, ...) to `values`.
inline void offer_environment(OptionValues& values) {
  values.offer_environment([](const char* name) { return std::getenv(name); });
}

inline std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The process settings of these values: the model option when it came from the environment, the caches, the
// CUPTI switch, the kernel lab's folder and threads, and the XDG folders and toolkit path from the environment.
inline ProcessSettings process_settings_of(const OptionValues& values) {
  ProcessSettings s;
  s.home = env_or_empty("HOME");
  s.xdg_data_home = env_or_empty("XDG_DATA_HOME");
  s.xdg_data_dirs = env_or_empty("XDG_DATA_DIRS");
  s.xdg_cache_home = env_or_empty("XDG_CACHE_HOME");
  s.cuda_toolkit = env_or_empty("CUDA_PATH");
  if (s.cuda_toolkit.empty()) s.cuda_toolkit = env_or_empty("CUDA_HOME");
  const OptionValue& model = values.at("model");
  if (model.source == OptionSource::environment) s.model_env = model.value;
  s.cache_dir = values.value("cache-dir");
  s.cudnn_plan_cache = values.value("cudnn-plan-cache");
  const OptionValue& cupti = values.at("cupti");
  s.cupti_off = cupti.value == "off";
  if (s.cupti_off)
    s.cupti_off_reason = cupti.source == OptionSource::environment
                             ? "MNV2_DISABLE_CUPTI=" + env_or_empty("MNV2_DISABLE_CUPTI")
                             : std::string("the cupti option (") + to_string(cupti.source) + ")";
  s.lab_dir = values.value("lab-dir");
  s.cpu_threads = static_cast<int>(values.integer("threads"));
  return s;
}

// The model file the user named with a flag or a saved setting ("" = none: the engine's lookup, which takes
// the environment's from ProcessSettings).
inline std::string explicit_model(const OptionValues& values) {
  const OptionValue& m = values.at("model");
  return m.source == OptionSource::flag || m.source == OptionSource::saved ? m.value : std::string();
}

// Remote targets (mnv2/remote.h): what the environment says about where they are kept and how ssh is reached.
struct RemoteEnvironment {
  std::string targets_file;  // $XDG_CONFIG_HOME/mnv2-profiler/targets.json (~/.config when unset)
  std::string runtime_dir;   // $XDG_RUNTIME_DIR ("" = unset: /tmp with the uid)
  std::string temp_root;     // $TMPDIR, else /tmp: the agent's private run folders
  std::string slurm_job;     // $SLURM_JOB_ID: the agent runs inside a job
  std::string ssh_program;   // $MNV2_SSH, else "ssh" (a test or a wrapper may name another)
};

inline RemoteEnvironment remote_environment() {
  RemoteEnvironment e;
  std::string config = env_or_empty("XDG_CONFIG_HOME");
  if (config.empty() || config.front() != '/') config = env_or_empty("HOME") + "/.config";
  e.targets_file = config + "/mnv2-profiler/targets.json";
  e.runtime_dir = env_or_empty("XDG_RUNTIME_DIR");
  e.temp_root = env_or_empty("TMPDIR");
  if (e.temp_root.empty() || e.temp_root.front() != '/') e.temp_root = "/tmp";
  e.slurm_job = env_or_empty("SLURM_JOB_ID");
  e.ssh_program = env_or_empty("MNV2_SSH");
  if (e.ssh_program.empty()) e.ssh_program = "ssh";
  return e;
}

}  // namespace mnv2::frontend
