// The Nsight Compute command line for one layer (see mnv2/ncu.h).
#include "mnv2/ncu.h"

#include <algorithm>
#include <cctype>

#include "mnv2/error.h"

namespace mnv2 {

std::vector<std::string> ncu_argv(const NcuTarget& t) {
  // --nvtx-include "NAME/": the trailing slash selects a push/pop range (nvtxRangePushA) named NAME in
  // the default domain; only kernels launched inside it are profiled. --set full collects every section.
  std::vector<std::string> a = {"ncu",
                                "--nvtx",
                                "--nvtx-include",
                                t.nvtx_range + "/",
                                "--set",
                                "full",
                                "-f",
                                "-o",
                                "mnv2_" + t.backend + "_layer" + std::to_string(t.layer),
                                t.mnv2_path,
                                "profile",
                                "--backend",
                                t.backend};
  if (!t.model_path.empty()) a.insert(a.end(), {"--model", t.model_path});
  a.insert(a.end(), {"--batch", std::to_string(t.batch)});
  if (!t.image.empty()) {
    a.insert(a.end(), {"--image", t.image});
  } else {
    if (!t.tensor.empty()) a.insert(a.end(), {"--tensor", t.tensor});
    a.insert(a.end(), {"--input-size", std::to_string(t.height) + "x" + std::to_string(t.width)});
  }
  for (const std::string& f :
       option_flags(t.options, t.backend, {"batch", "input-size", "warmup", "iters", "timing", "exec"}))
    a.push_back(f);
  // Event timing: CUPTI cannot run beside Nsight Compute, which owns the profiling interfaces.
  a.insert(a.end(), {"--warmup", "0", "--iters", "1", "--timing", "event"});
  return a;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    bool safe = !arg.empty();
    for (unsigned char c : arg)
      if (!std::isalnum(c) && std::string_view("_-./,:=+@%").find(static_cast<char>(c)) == std::string_view::npos)
        safe = false;
    if (!out.empty()) out += ' ';
    if (safe) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

int resolve_layer(const Model& model, const std::string& spec) {
  const int count = static_cast<int>(model.layers.size());
  if (!spec.empty() && std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (spec.size() > 6 || std::stoi(spec) >= count)
      throw UsageError("layer " + spec + " does not exist (the model has layers 0.." + std::to_string(count - 1) + ")");
    return std::stoi(spec);
  }
  for (const Layer& l : model.layers)
    if (l.name == spec) return l.index;
  throw UsageError("no layer is named '" + spec + "' (give an index 0.." + std::to_string(count - 1) +
                   " or a name from 'mnv2 topology')");
}

int step_of_layer(const std::vector<ExecStep>& steps, int layer) {
  for (size_t s = 0; s < steps.size(); ++s)
    for (int l : steps[s].layers)
      if (l == layer) return static_cast<int>(s);
  return -1;
}

std::string default_step_name(const Model& model, int layer) {
  return std::string(to_string(model.layers.at(static_cast<size_t>(layer)).kind)) + " " + std::to_string(layer);
}

}  // namespace mnv2
