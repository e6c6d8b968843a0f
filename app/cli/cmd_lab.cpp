// mnv2 lab: the kernel lab (issue 18, docs/KERNEL_LAB.md): a user's CUDA kernel for one slot, compiled (NVRTC),
// checked per layer and timed beside ours, through the lab study.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "mnv2/error.h"
#include "mnv2/lab.h"
#include "mnv2/model_lookup.h"
#include "mnv2/output_files.h"
#include "run_request.h"

namespace mnv2::cli {
namespace {

constexpr int kMaxLabBatch = 4096;  // the lab's batches, fewer than the table's

std::string opt_us(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", *v);
  return b;
}

void print_lab_table(const LabResult& r) {
  if (r.layers.empty()) return;
  std::printf("\n%-6s %-22s %-18s %-14s %-8s %11s %11s %11s %9s %9s\n", "layer", "name", "op", "shape (NCHW)", "check",
              "max abs", "user us", "ours us", "cudnn us", "user/ours");
  for (const LabLayer& l : r.layers) {
    char ratio[32] = "-";
    if (l.user_us && l.ours_us && *l.ours_us > 0) std::snprintf(ratio, sizeof ratio, "%.2f", *l.user_us / *l.ours_us);
    std::printf("%-6d %-22s %-18s %-14s %-8s %11.3g %11s %11s %11s %9s\n", l.index, l.name.c_str(), l.op.c_str(),
                l.shape.c_str(),
                !l.check          ? "-"
                : l.check->passed ? "passed"
                                  : "FAILED",
                l.check ? l.check->max_abs_vs_reference : std::nan(""), opt_us(l.user_us).c_str(),
                opt_us(l.ours_us).c_str(), opt_us(l.cudnn_us).c_str(), ratio);
  }
  if (r.end_to_end) {
    const LabEndToEnd& e = *r.end_to_end;
    std::printf(
        "\nend to end (GPU time of one CUDA graph replay, median, ms): user %s | ours unfused %s | ours default "
        "%s | cudnn fused %s\n",
        opt_us(e.user_ms).c_str(), opt_us(e.ours_unfused_ms).c_str(), opt_us(e.ours_default_ms).c_str(),
        opt_us(e.cudnn_ms).c_str());
  }
}

std::vector<int> parse_layer_list(const std::string& text) {
  std::vector<int> layers;
  for (const std::string& item : split(text, ','))
    layers.push_back(parse_int(item, "--layers (a comma-separated list of layer indices)", 0, 1 << 20));
  return layers;
}

}  // namespace

void declare_lab(Args& a) {
  a.value("--slot", "depthwise (pointwise, stem, pool, classifier, block: listed by --list-slots)");
  a.input("--kernel", "FILE.cu: the kernel (its module's one __global__ function), see docs/KERNEL_LAB.md");
  a.value("--layers", "comma-separated layer indices of the slot to replace (default: all of them)");
  precision_option(a);
  device_option(a);
  batch_option(a);
  model_options(a);
  a.input("--input", "random (default, seed 1) or a raw float32 NCHW tensor file (one image or the batch)");
  a.value("--timeout", "seconds the worker may take before it is killed (default 60)");
  a.value("--json", "write the result (format mnv2.lab) here, also when the check fails");
  a.value("--csv", "write the per-layer CSV report of the cuda+lab run here");
  a.value("--out", "DIR: lab.json, profile.json and profile.csv of the run");
  a.flag("--compile-only", "compile and report diagnostics only");
  a.flag("--no-time", "check only, no timing");
  a.value("--runs", "timed runs per phase (default 100)");
  a.value("--arch", "compile for this architecture, e.g. sm_90 (default: the GPU's; needed without a GPU)");
  a.value("--template", "SLOT: print the slot's template kernel and exit");
  a.flag("--list-slots", "one line per slot: its op and the layers it covers");
}

int cmd_lab(const Args& args, const OptionValues& options) {
  if (!args.positionals().empty()) throw UsageError("lab takes no positional arguments");
  if (auto slot = args.get("--template")) {
    std::cout << lab_template(*slot);
    return 0;
  }
  if (args.flag("--list-slots")) {
    const LoadedModel m = load_model(args, options);
    for (const LabSlot& s : lab_slots()) {
      std::string layers;
      for (int l : lab_slot_layers(m.model, s.name)) layers += (layers.empty() ? "" : ",") + std::to_string(l);
      std::printf("%-11s %s; layers: %s%s\n", s.name.c_str(), s.op.c_str(), layers.empty() ? "-" : layers.c_str(),
                  s.why_not.empty() ? "" : ("  (refused: " + s.why_not + ")").c_str());
    }
    return 0;
  }
  LabConfig c;
  c.slot = args.get_or("--slot", "");
  if (c.slot.empty()) throw UsageError("lab needs --slot (or --template SLOT, --list-slots)");
  lab_slot(c.slot);  // unknown or refused: a usage error before anything runs
  c.kernel_file = args.get_or("--kernel", "");
  if (c.kernel_file.empty()) throw UsageError("lab needs --kernel FILE.cu");
  const LoadedModel m = load_model(args, options);
  c.model_path = m.location.path;
  if (auto layers = args.get("--layers")) {
    c.layers = parse_layer_list(*layers);
    const std::vector<int> slot_layers = lab_slot_layers(m.model, c.slot);
    std::string list;
    for (int l : slot_layers) list += (list.empty() ? "" : ",") + std::to_string(l);
    for (int l : c.layers)
      if (std::find(slot_layers.begin(), slot_layers.end(), l) == slot_layers.end())
        throw UsageError("--layers: layer " + std::to_string(l) + " is not a " + c.slot + " layer (they are " + list +
                         ")");
  }
  c.precision = parse_precision(options.value("precision"));
  if (args.get("--batch")) c.batch = table_integer_at_most(args, options, "batch", kMaxLabBatch);
  c.input = args.get_or("--input", "random");
  if (auto t = args.get("--timeout")) c.timeout_s = parse_int(*t, "--timeout (seconds)", 1, 86400);
  if (auto n = args.get("--runs")) c.runs = parse_int(*n, "--runs", 1, 100000);
  c.compile_only = args.flag("--compile-only");
  c.no_time = args.flag("--no-time");
  c.arch = args.get_or("--arch", "");
  c.device = static_cast<int>(options.integer("device"));
  const std::string json_path = args.get_or("--json", "");
  c.report_csv = args.get_or("--csv", "");
  if (auto out = args.get("--out")) {
    std::error_code ec;
    std::filesystem::create_directories(*out, ec);
    if (ec) throw UsageError("--out: cannot create " + *out + ": " + ec.message());
    c.report_json = (std::filesystem::absolute(*out) / "profile.json").string();
    if (c.report_csv.empty()) c.report_csv = (std::filesystem::absolute(*out) / "profile.csv").string();
  }
  if (!c.report_csv.empty()) c.report_csv = std::filesystem::absolute(c.report_csv).string();
  c.program = executable_dir() + "/mnv2";
  std::error_code ec;
  if (const auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) c.program = self.string();

  std::string out_json = json_path;
  if (out_json.empty() && args.get("--out"))
    out_json = (std::filesystem::path(*args.get("--out")) / "lab.json").string();
  {
    // Every file the run will write, checked before it starts (a missing folder, a directory, a read-only file, one
    // of its inputs, two of them the same file) as a command's output set is: the worker writes the report files,
    // this process the result, after a run that may take minutes.
    OutputSet planned;
    planned.add_input("--kernel", c.kernel_file);
    if (c.input != "random") planned.add_input("--input", c.input);
    planned.add_input("the model", c.model_path);
    if (!out_json.empty()) planned.add(json_path.empty() ? "--out (lab.json)" : "--json", out_json);
    if (!c.report_csv.empty()) planned.add(args.get("--csv") ? "--csv" : "--out (profile.csv)", c.report_csv);
    if (!c.report_json.empty()) planned.add("--out (profile.json)", c.report_json);
  }
  const LabResult r = run_lab(c, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  print_lab_table(r);
  std::printf("\n%s: %s\n", r.status.c_str(), r.message.c_str());
  if (r.status != "compile_error") {
    std::printf("memory checker: %s\n", r.compute_sanitizer_command.c_str());
    std::printf("Nsight Compute: %s\n", r.ncu_command.c_str());
  }
  // Written after the run (also when the check failed), so outside the command's set; its inputs still may not be
  // replaced by it.
  if (!out_json.empty())
    write_output_file(out_json, lab_result_json(r).dump(2) + "\n",
                      {{"--kernel", c.kernel_file}, {"--input", c.input}, {"the model", c.model_path}});
  std::fflush(stdout);
  return lab_exit_code(r);
}

}  // namespace mnv2::cli
