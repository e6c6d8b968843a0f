// What both front ends say the same way of remote targets (mnv2/remote.h): a target's description (`mnv2 targets
// list`, the app's Targets dialog) and what a model must be to travel to one.
#pragma once

#include <string>

#include "mnv2/model.h"
#include "mnv2/printable.h"
#include "mnv2/remote.h"

namespace mnv2::frontend {

// The parts of a target's description, escaped: "user@gpu-login:2222" (with ", ssh -F FILE" where it names one);
// "srun --partition=gpu --gres=gpu:1; pending at most 300 s" ("" without Slurm); the setup lines joined by "; ".
inline std::string describe_destination(const remote::Target& t) {
  std::string s = t.host + (t.port > 0 ? ":" + std::to_string(t.port) : std::string());
  if (!t.ssh_config.empty()) s += ", ssh -F " + t.ssh_config;
  return printable(s);
}
inline std::string describe_launcher(const remote::Target& t) {
  if (!t.slurm) return {};
  const remote::SlurmLauncher& l = *t.slurm;
  std::string s = "srun";
  if (!l.partition.empty()) s += " --partition=" + l.partition;
  if (!l.gres.empty()) s += " --gres=" + l.gres;
  if (!l.time_limit.empty()) s += " --time=" + l.time_limit;
  if (!l.account.empty()) s += " --account=" + l.account;
  for (const std::string& e : l.extra) s += " " + e;
  s += "; pending at most " + std::to_string(l.pending_timeout_s) + " s";
  return printable(s);
}
inline std::string describe_setup(const remote::Target& t) {
  std::string s;
  for (const std::string& line : t.setup) s += (s.empty() ? "" : "; ") + line;
  return printable(s);
}

// "user@gpu-login:2222, ssh -F FILE, through Slurm (srun --partition=gpu; pending at most 300 s); setup: module
// load cuda": what `mnv2 targets list` prints for a target.
inline std::string describe_target(const remote::Target& t) {
  std::string s = describe_destination(t);
  if (t.slurm) s += ", through Slurm (" + describe_launcher(t) + ")";
  for (const std::string& line : t.setup) s += "; setup: " + printable(line);
  return s;
}

// Why `model` cannot run on a target, or "": a run sends its model file, and external data files do not travel yet.
inline std::string remote_model_refusal(const Model& model) {
  if (model.synthetic)
    return "a run on a target sends the model file it runs, and this is the built-in model with synthetic weights "
           "(no model file was found): open a model file (--model FILE or $MNV2_MODEL)";
  if (!model.file.external_files.empty())
    return "a model with external data files does not travel yet; use a single-file .onnx";
  return {};
}

}  // namespace mnv2::frontend
