// mnv2: the headless command-line front end. It drives the same engine objects as the desktop app.
// Exit codes: 0 success, 1 runtime error ("error: ..." on stderr), 2 usage error.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/environment.h"
#include "common/omp_wait_policy.h"
#include "mnv2/backend.h"
#include "mnv2/bench.h"
#include "mnv2/bench_report.h"
#include "mnv2/cpu_info.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/eval.h"
#include "mnv2/eval_report.h"
#include "mnv2/image.h"
#include "mnv2/json_io.h"
#include "mnv2/lab.h"
#include "mnv2/labels.h"
#include "mnv2/memory.h"
#include "mnv2/memory_report.h"
#include "mnv2/model.h"
#include "mnv2/model_lookup.h"
#include "mnv2/model_summary.h"
#include "mnv2/ncu.h"
#include "mnv2/options.h"
#include "mnv2/output_files.h"
#include "mnv2/profiler.h"
#include "mnv2/report.h"
#include "mnv2/roofline.h"
#include "mnv2/roofline_report.h"
#include "mnv2/studies.h"
#include "mnv2/sweep.h"
#include "mnv2/timing.h"
#include "mnv2/topology_report.h"

namespace mnv2::cli {
namespace {

// The notes under `mnv2 --help`: what no single option says.
constexpr const char* kFooter =
    R"(The model is --model F, else $MNV2_MODEL, else a weights/ folder next to the program, else
mnv2-profiler/ in $XDG_DATA_HOME (~/.local/share) or in $XDG_DATA_DIRS (/usr/local/share:/usr/share); with
none, a built-in MobileNetV2 with synthetic weights runs (timing only: its predictions are meaningless).
--tensor F: raw little-endian float32 NCHW, a whole number of 3xHxW images (default 224x224).
--precision fp32|tf32|fp16: the arithmetic of the GPU backends (default fp32; 'mnv2 info' lists what each
backend supports). A reduced mode is judged against the cpu reference, which stays fp32. compare: the first
backend is the reference and alone may run fp32 in place of a mode it lacks; every other backend must have the
mode; diffs are judged in the mode asked for.
--cuda-variant, --cuda-fusion, --cuda-graph, --cuda-gemm-tile, --cuda-pdl, --cuda-splitk: the cuda backend's
options; unset, the environment's MNV2_CUDA_VARIANT, MNV2_CUDA_FUSE, MNV2_CUDA_GRAPH, MNV2_CUDA_GEMM_TILE,
MNV2_CUDA_PDL, MNV2_CUDA_SPLITK, else fast, none, auto, the planner's tile, auto and separate.
--cudnn-variant fused|naive, --cudnn-graph auto|on|off, --cudnn-layout auto|nchw|nhwc: the cudnn backend's
options (default fused, auto, auto). The fused variant keeps its tuned plans in
$XDG_CACHE_HOME/mnv2-profiler/cudnn_plans.json ($MNV2_CUDNN_PLAN_CACHE: another file, or off).
--threads N: the cpu backends' thread count (default $MNV2_CPU_THREADS, else one per core). Their idle OpenMP
threads spin ~10 us, then sleep (GOMP_SPINCOUNT=1000), unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set: on a
busy machine long spins turn into long tails; OMP_WAIT_POLICY=passive gives the best median there.
Every profile and bench says whether its figures are reliable: end-to-end CV and tail, noisy layers, SM clock
changes, other GPU processes, other processes on the host's cores (docs/PERFORMANCE.md).
Backends: cpu (oneDNN, CPUID-dispatched kernels), cpu-ref (the plain float32 reference every other backend
is judged against), cudnn and cuda (the GPU plugin: NVIDIA GPU, driver 580+, CUDA 13, cuDNN 9).
Exit codes: 0 success, 1 runtime error, 2 usage error. 'mnv2 COMMAND --help' lists a command's options.)";

// One command's options as CLI11 parsed them (CLI11 writes the help and refuses unknown options, missing values
// and repeats); the command reads them by name. Values stay text: each command checks its own (ranges, lists)
// with messages that name the option.
class Args {
 public:
  explicit Args(CLI::App& app) : app_(app) {}
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  void value(const std::string& name, const std::string& help) {
    options_[name] = app_.add_option(name, values_[name], help);
  }
  // A value naming a file the command writes: checked and reserved by reserve_outputs() before the command
  // runs, given its contents by put() and written, all or nothing, when the command has succeeded.
  void output(const std::string& name, const std::string& help) {
    value(name, help);
    output_names_.push_back(name);
  }
  void flag(const std::string& name, const std::string& help) { flags_[name] = app_.add_flag(name, help); }
  // An option of the engine's table (mnv2/options.h) as the flag --NAME, its help from the table: what it
  // does, its values, its default (`command_default` where this command has its own) and its variable.
  void table(const std::string& name, const std::string& command_default = {}) {
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr) throw Error("no run option '" + name + "'");
    if (options_.count("--" + name)) return;
    if (!command_default.empty()) command_defaults_[name] = command_default;
    std::string help = spec->help;
    if (!spec->choices.empty()) {
      help += ": ";
      for (size_t i = 0; i < spec->choices.size(); ++i) help += (i ? ", " : "") + spec->choices[i];
    }
    if (spec->type == OptionType::integer)
      help += " (" + std::to_string(spec->min) + ".." + std::to_string(spec->max) + ")";
    const std::string def = command_default.empty() ? spec->default_value : command_default;
    if (!def.empty())
      help += " (default " + def + (spec->env.empty() ? ")" : ", or $" + spec->env + ")");
    else if (!spec->env.empty())
      help += " (or $" + spec->env + ")";
    if (!spec->backends.empty() && spec->backends.size() < 4) {
      help += " [";
      for (size_t i = 0; i < spec->backends.size(); ++i) help += (i ? ", " : "") + spec->backends[i];
      help += "]";
    }
    value("--" + name, help);
    table_names_.push_back(name);
  }
  // "options from the environment: threads=2 ($MNV2_CPU_THREADS)" for the per-run options this command takes
  // whose value came from the environment; "" when none did.
  std::string environment_note() const {
    const OptionValues v = options();
    std::string list;
    for (const std::string& name : table_names_) {
      const OptionSpec* spec = find_option(name);
      const OptionValue& value = v.at(name);
      if (spec->per_run && value.source == OptionSource::environment)
        list += (list.empty() ? "" : ", ") + name + "=" + value.value + " ($" + spec->env + ")";
    }
    return list.empty() ? list : "options from the environment: " + list;
  }
  // Every option's value and source: this command's defaults, then the environment, then the flags given.
  OptionValues options() const {
    OptionValues v(command_defaults_);
    frontend::offer_environment(v);
    for (const std::string& name : table_names_)
      if (auto given = get("--" + name)) v.offer(name, *given, OptionSource::flag);
    return v;
  }
  void positional(const std::string& name, const std::string& help) { app_.add_option(name, positionals_, help); }

  std::optional<std::string> get(const std::string& name) const {
    auto it = options_.find(name);
    if (it == options_.end() || it->second->count() == 0) return std::nullopt;
    return values_.at(name);
  }
  std::string get_or(const std::string& name, const std::string& fallback) const {
    return get(name).value_or(fallback);
  }
  bool flag(const std::string& name) const {
    auto it = flags_.find(name);
    return it != flags_.end() && it->second->count() > 0;
  }
  const std::vector<std::string>& positionals() const { return positionals_; }

  void reserve_outputs() {
    for (const std::string& name : output_names_)
      if (auto path = get(name)) outputs_.add(name, *path);
  }
  bool wants(const std::string& name) const { return outputs_.has(name); }
  void put(const std::string& name, std::string bytes) const { outputs_.put(name, std::move(bytes)); }
  OutputSet& outputs() const { return outputs_; }

 private:
  CLI::App& app_;
  std::map<std::string, std::string> values_;  // nodes stay put: CLI11 writes into them
  std::map<std::string, CLI::Option*> options_;
  std::map<std::string, CLI::Option*> flags_;
  std::vector<std::string> positionals_;
  std::vector<std::string> output_names_;
  std::vector<std::string> table_names_;                 // table options this command takes as flags
  std::map<std::string, std::string> command_defaults_;  // table defaults this command overrides
  mutable OutputSet outputs_;                            // filled by the command (const Args&), committed by dispatch
};

int parse_int(const std::string& text, const std::string& what, int lo, int hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw UsageError(what + " must be an integer, got '" + text + "'");
  }
  if (used != text.size()) throw UsageError(what + " must be an integer, got '" + text + "'");
  if (v < lo || v > hi)
    throw UsageError(what + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  return static_cast<int>(v);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!text.empty() && text.back() == sep) out.push_back("");
  return out;
}

// "224x224" (height x width); also a single number for a square.
std::pair<int, int> parse_size(const std::string& text) { return parse_input_size(text); }

struct LoadedModel {
  Model model;
  ModelLocation location;
};

LoadedModel load_model(const Args& args) {
  LoadedModel m;
  m.location = locate_model(frontend::explicit_model(args.options()), executable_dir());
  m.model = load_located_model(m.location);
  for (const auto& w : m.model.warnings) std::cerr << "WARNING: " << w << "\n";
  return m;
}

// The cuda and cudnn backends' options from the table's flags over the environment over the defaults.
CudaOptions cuda_options(const Args& args) { return prepare_config_of(args.options(), {224, 224}).cuda; }
CudnnOptions cudnn_options(const Args& args) { return prepare_config_of(args.options(), {224, 224}).cudnn; }
Precision precision_of(const Args& args) { return parse_precision(args.options().value("precision")); }

json::Json warnings_json(const Model& model) { return json::Json(model.warnings); }

// --threads (or $MNV2_CPU_THREADS): the cpu backends' thread count for this run (PrepareConfig::cpu_threads); 0
// when neither is given (the backend's default).
int cpu_threads(const Args& args) { return static_cast<int>(args.options().integer("threads")); }
int gpu_device_of(const Args& args) { return static_cast<int>(args.options().integer("device")); }

// A run's reliability (mnv2/reliability.h) under its summary: the verdict, then one line per finding, worst
// first as found ("    unreliable: end-to-end CV 80% (> 10%)").
void print_reliability(const Reliability& rel, const char* indent) {
  std::printf("%sreliability: %s\n", indent,
              rel.verdict() == Verdict::unreliable ? "UNRELIABLE (see below; figures not to be trusted)"
                                                   : to_string(rel.verdict()));
  for (const auto& f : rel.findings) std::printf("%s  %s: %s\n", indent, to_string(f.verdict), f.reason.c_str());
}

void print_warnings(std::ostream& out, const Model& model, const char* prefix = "WARNING: ") {
  for (const auto& w : model.warnings) out << prefix << w << "\n";
}

// ---- info -------------------------------------------------------------------------------------------

int cmd_info(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("info takes no positional arguments");
  const CudaEnvironment& env = cuda_environment();
  json::Json j = json::Json::object();
  j["version"] = MNV2_VERSION;
  j["commit"] = MNV2_GIT_COMMIT;
  json::Json build = json::Json::object();
  build["cuda"] = env.built_with_cuda;
  build["cuda_runtime"] = cuda_version_string(env.runtime_version);
  json::Json archs = json::Json::array();
  for (const CudaArch& a : built_cuda_architectures()) archs.emplace_back(a.to_string());
  build["cuda_architectures"] = archs;
  const GpuPluginInfo plugin = gpu_plugin_info();
  json::Json pj = json::Json::object();
  pj["path"] = plugin.path;
  pj["loaded"] = plugin.loaded;
  if (!plugin.loaded) pj["problem"] = plugin.problem;
  json::Json missing = json::Json::array();
  for (const auto& lib : plugin.missing_libraries) missing.emplace_back(lib);
  pj["missing_libraries"] = missing;
  build["gpu_plugin"] = pj;
  build["image_decoding"] = image_decoding_available();
  j["build"] = build;
  json::Json cuda = json::Json::object();
  cuda["driver"] = cuda_version_string(env.driver_version);
  cuda["driver_release"] = env.driver_release;
  json::Json devices = json::Json::array();
  for (const auto& d : env.devices) {
    json::Json dj = json::Json::object();
    dj["index"] = d.index;
    dj["name"] = d.name;
    dj["uuid"] = d.uuid;
    dj["pci_bus_id"] = d.pci_bus_id;
    dj["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    dj["memory_bytes"] = d.memory_bytes;
    dj["multiprocessors"] = d.multiprocessors;
    if (d.cannot_run.empty()) {
      dj["code"] = d.code;
      if (plugin.loaded) {
        std::string why;
        const int arch = kernel_code_arch(d.index, &why);
        dj["kernel_code_arch"] = arch > 0 ? json::Json("compute_" + std::to_string(arch)) : json::Json(why);
      }
    } else {
      dj["cannot_run"] = d.cannot_run;
    }
    devices.push_back(dj);
  }
  cuda["devices"] = devices;
  if (env.devices.empty()) cuda["why_none"] = env.why_none;
  j["cuda"] = cuda;
  const CpuKernelInfo cpu = cpu_kernel_info();  // which CPU kernels the cpu backends run here, and why
  j["cpu"] = cpu;
  json::Json backends = json::Json::array();
  for (const auto& name : backend_names()) {
    auto b = make_backend(name);
    Availability a = b->availability();
    json::Json bj = json::Json::object();
    bj["name"] = name;
    bj["description"] = b->description();
    bj["available"] = a.available;
    if (!a.available) bj["reason"] = a.reason;
    json::Json precisions = json::Json::array();
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16})
      if (b->supports(p)) precisions.emplace_back(to_string(p));
    bj["precisions"] = precisions;
    backends.push_back(bj);
  }
  j["backends"] = backends;
  ModelLocation loc = locate_model(frontend::explicit_model(args.options()), executable_dir());
  json::Json mj = json::Json::object();
  mj["path"] = loc.path.empty() ? json::Json() : json::Json(loc.path);
  mj["found_by"] = loc.how;
  json::Json searched = json::Json::array();
  for (const auto& s : loc.searched) searched.emplace_back(s);
  mj["searched"] = searched;
  // The located model itself; one that cannot be read is reported after everything else, exit code 1.
  std::optional<Model> model;
  std::string model_error, labels;
  if (!loc.path.empty()) {
    try {
      model = load_located_model(loc);
      const std::string labels_file = args.get_or("--labels", "");
      if (!labels_file.empty() && static_cast<int>(read_labels_file(labels_file).size()) != model->num_classes)
        throw Error(labels_file + ": the number of labels differs from the model's " +
                    std::to_string(model->num_classes) + " classes");
      labels = labels_source(model->num_classes, labels_file);
      mj["file"] = model_summary_json(*model, labels);
      mj["warnings"] = warnings_json(*model);
    } catch (const Error& e) {
      model_error = e.what();
      mj["error"] = model_error;
    }
  }
  j["model"] = mj;

  if (args.flag("--json")) {
    std::cout << json::dump(j, 2) << "\n";
    return model_error.empty() ? 0 : 1;
  }
  std::cout << "mnv2 " << MNV2_VERSION << " (commit " << MNV2_GIT_COMMIT << ")\n";
  std::cout << "build:   CUDA " << (env.built_with_cuda ? "yes" : "no") << ", image decoding "
            << (image_decoding_available() ? "OpenCV" : "none (--tensor only)") << "\n";
  if (env.built_with_cuda) {
    std::cout << "gpu:     code for " << env.architectures << "\n";
    if (plugin.loaded)
      std::cout << "         plugin " << plugin.path << " (CUDA runtime " << cuda_version_string(env.runtime_version)
                << ", cuDNN " << env.cudnn_version << ")\n";
    else
      std::cout << "         plugin not loaded: " << plugin.problem << "\n";
  }
  if (env.driver_version == 0)
    std::cout << "driver:  none\n";
  else
    std::cout << "driver:  " << (env.driver_release.empty() ? "" : env.driver_release + ", ") << "supports CUDA "
              << cuda_version_string(env.driver_version) << "\n";
  if (env.devices.empty())
    std::cout << "devices: "
              << (plugin.built && !plugin.loaded ? "not probed (the GPU plugin is not loaded)"
                                                 : "none (" + env.why_none + ")")
              << "\n";
  for (size_t i = 0; i < env.devices.size(); ++i) {
    const GpuDevice& d = env.devices[i];
    std::cout << "device " << d.index << ": " << d.name << ", sm_" << d.cc_major << d.cc_minor << ", "
              << d.multiprocessors << " SMs, " << (d.memory_bytes >> 20) << " MiB, " << d.uuid << " at PCI "
              << d.pci_bus_id << "; ";
    if (!d.cannot_run.empty()) {
      std::cout << "cannot run this build's kernels: " << d.cannot_run << "\n";
      continue;
    }
    std::cout << "runs " << d.code;
    if (const json::Json* arch = json::find(devices[i], "kernel_code_arch"))
      std::cout << " (kernels: " << json::as_string(*arch) << ")";
    std::cout << "\n";
  }
  std::cout << "cpu:     " << cpu.model_name << ", " << cpu.threads << (cpu.threads == 1 ? " thread" : " threads")
            << "; CPUID:";
  for (const std::string& f : cpu.features) std::cout << " " << f;
  std::cout << "\n         kernels: cpu " << cpu.cpu_kernels << "; cpu-ref " << cpu.reference_kernels
            << "\n         why: " << cpu.why << "\n";
  std::cout << "backends:\n";
  for (const auto& b : backends) {
    std::cout << "  " << json::string_at(b, "name") << ": "
              << (json::bool_at(b, "available") ? "available" : "unavailable") << " — "
              << json::string_at(b, "description");
    if (const json::Json* r = json::find(b, "reason")) std::cout << " (" << json::as_string(*r) << ")";
    std::cout << "; precision";
    for (const auto& p : json::array_at(b, "precisions")) std::cout << " " << json::as_string(p);
    std::cout << "\n";
  }
  if (loc.path.empty()) {
    std::cout << "model:   none found (searched --model, MNV2_MODEL";
    for (const auto& s : loc.searched) std::cout << ", " << s;
    std::cout << "): the built-in topology with synthetic weights will run; predictions are meaningless\n";
  } else {
    std::cout << "model:   " << loc.path << " (" << loc.how << ")\n";
  }
  if (model) {
    for (const auto& [key, value] : model_summary_rows(*model, labels))
      std::cout << "  " << key << ": " << value << "\n";
    print_warnings(std::cout, *model, "  WARNING: ");
  }
  if (!model_error.empty()) std::cerr << "error: " << model_error << "\n";
  return model_error.empty() ? 0 : 1;
}

// ---- topology ---------------------------------------------------------------------------------------

// ---- plan --------------------------------------------------------------------------------------------

// The cuda backend's plan for a GPU this machine need not have: which layers each step covers, which kernel
// and tile runs it (the planner is plain C++ in the engine; nothing is allocated or launched).
int cmd_plan(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("plan takes no positional arguments");
  const std::string gpu_name = args.get_or("--gpu", "h200");
  GpuProperties gpu;
  if (gpu_name == "t4") {
    gpu = GpuProperties::t4();
  } else if (gpu_name == "a100") {
    gpu = GpuProperties::a100();
  } else if (gpu_name == "rtx4090") {
    gpu = GpuProperties::rtx4090();
  } else if (gpu_name == "h200") {
    gpu = GpuProperties::h200();
  } else {
    throw UsageError("unknown --gpu '" + gpu_name + "' (choose t4, a100, rtx4090, h200)");
  }
  if (auto arch = args.get("--code-arch")) gpu.code_arch = parse_int(*arch, "--code-arch", 50, 200);
  LoadedModel m = load_model(args);
  PrepareConfig pc;
  pc.batch = parse_int(args.get_or("--batch", "1"), "--batch", 1, 65536);
  std::tie(pc.height, pc.width) = args.get("--input-size")
                                      ? parse_size(*args.get("--input-size"))
                                      : std::pair<int, int>{m.model.input_height, m.model.input_width};
  pc.precision = precision_of(args);
  pc.cuda = cuda_options(args);
  pc.cudnn = cudnn_options(args);
  print_warnings(std::cout, m.model);
  std::cout << describe(plan_cuda_network(m.model, pc, gpu));
  return 0;
}

int cmd_topology(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("topology takes no positional arguments");
  const std::string format = args.get_or("--format", "table");
  if (format != "table" && format != "csv" && format != "json")
    throw UsageError("--format must be table, csv or json, got '" + format + "'");
  const int batch = parse_int(args.get_or("--batch", "1"), "--batch", 1, 65536);
  LoadedModel m = load_model(args);
  auto [h, w] = args.get("--input-size") ? parse_size(*args.get("--input-size"))
                                         : std::pair<int, int>{m.model.input_height, m.model.input_width};
  const std::vector<LayerStats> stats = analyse(m.model, batch, h, w);
  int64_t total_params = 0, total_macs = 0, total_act = 0;
  for (const auto& s : stats) {
    total_params += s.params;
    total_macs += s.macs;
    total_act += s.activation_bytes;
  }

  if (format == "json") {
    std::cout << json::dump(topology_json(report_model(m.model, m.location.how), m.model, stats, batch, h, w), 2)
              << "\n";
    return 0;
  }
  if (format == "csv") {
    print_warnings(std::cout, m.model, "# WARNING: ");
    std::cout << topology_csv(m.model, stats);
    return 0;
  }
  print_warnings(std::cout, m.model);
  std::cout << "model: " << m.model.source << " (" << m.location.how << ")\n";
  std::cout << "input: " << batch << "x" << m.model.input_channels << "x" << h << "x" << w << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %-22s %-18s %10s %14s\n", "idx: layer", "name", "output", "params", "MACs");
  std::cout << line;
  for (size_t i = 0; i < m.model.layers.size(); ++i) {
    const Layer& l = m.model.layers[i];
    const LayerStats& s = stats[i];
    std::string head = std::to_string(l.index) + ": " + describe(l);
    std::snprintf(line, sizeof line, "%-48s %-22s %-18s %10lld %14lld\n", head.c_str(), l.name.c_str(),
                  s.output.str().c_str(), static_cast<long long>(s.params), static_cast<long long>(s.macs));
    std::cout << line;
  }
  std::cout << "\n" << m.model.layers.size() << " layers (";
  bool first = true;
  for (LayerKind k : {LayerKind::Conv2d, LayerKind::ReLU6, LayerKind::ReLU, LayerKind::ResidualAdd,
                      LayerKind::GlobalAveragePool, LayerKind::Linear}) {
    if (int c = count_layers(m.model, k)) {
      std::cout << (first ? "" : ", ") << c << " " << to_string(k);
      first = false;
    }
  }
  std::cout << "), " << m.model.num_blocks << " bottleneck blocks, " << total_params << " params, " << total_macs
            << " MACs, " << total_act << " activation bytes\n";
  return 0;
}

// ---- classify ---------------------------------------------------------------------------------------

int cmd_classify(const Args& args) {
  const std::string backend_name = args.get_or("--backend", "cpu");
  const int top = parse_int(args.get_or("--top", "5"), "--top", 1, 100000);
  const Precision precision = precision_of(args);
  const auto tensor_path = args.get("--tensor");
  const auto& images = args.positionals();
  if (tensor_path && !images.empty()) throw UsageError("give image files or --tensor, not both");
  if (!tensor_path && images.empty()) throw UsageError("classify needs image files or --tensor F");
  if (!tensor_path && args.get("--input-size"))
    throw UsageError("--input-size applies to --tensor inputs; images are cropped as the model's preprocessing says");
  make_backend(backend_name);  // unknown names are usage errors, before any file work
  if (Availability a = make_backend(backend_name)->availability(); !a.available)
    throw Error("backend '" + backend_name + "' is not available: " + a.reason);

  LoadedModel m = load_model(args);
  std::vector<std::string> labels =
      args.get("--labels") ? read_labels_file(*args.get("--labels")) : builtin_labels(m.model.num_classes);
  if (static_cast<int>(labels.size()) != m.model.num_classes)
    throw Error(args.get_or("--labels", "built-in labels") + ": " + std::to_string(labels.size()) +
                " labels for a model with " + std::to_string(m.model.num_classes) + " classes");

  Tensor input;
  std::vector<std::string> names;
  if (tensor_path) {
    auto [h, w] = args.get("--input-size") ? parse_size(*args.get("--input-size"))
                                           : std::pair<int, int>{m.model.input_height, m.model.input_width};
    input = read_tensor_file(*tensor_path, Shape{1, m.model.input_channels, h, w});
    for (int64_t i = 0; i < input.shape.n; ++i)
      names.push_back(input.shape.n == 1 ? *tensor_path : *tensor_path + "[" + std::to_string(i) + "]");
  } else {
    std::vector<Tensor> batch;
    for (const auto& path : images) {
      batch.push_back(preprocess(decode_image_file(path), m.model.preprocess));
      names.push_back(path);
    }
    input = stack_batch(batch);
  }
  Classifier classifier;
  ClassifyConfig classify_config{backend_name, precision, cuda_options(args), std::max(top, 5), cudnn_options(args)};
  classify_config.device = gpu_device_of(args);
  const ClassifyResult classified = classifier.classify(m.model, labels, classify_config, input);
  // NaN/Inf logits: the results still print (exit 0, as for a model with NaN weights), the warning naming the
  // first layer that produced them goes to stderr, whatever the output format.
  for (const auto& w : classified.warnings) std::cerr << "WARNING: " << w << "\n";
  if (args.flag("--json")) {
    std::vector<ClassifiedImage> images;
    for (size_t i = 0; i < classified.images.size(); ++i) images.push_back({names[i], &classified.images[i]});
    std::cout << json::dump(classify_json(images, backend_name, precision, m.model, top), 2) << "\n";
    return 0;
  }
  for (size_t i = 0; i < classified.images.size(); ++i) {
    const std::vector<Prediction>& preds = classified.images[i].top;
    print_warnings(std::cout, m.model);
    std::cout << names[i] << "  [backend " << backend_name << ", " << to_string(precision) << "]\n";
    for (int k = 0; k < top && k < static_cast<int>(preds.size()); ++k) {
      char line[512];
      std::snprintf(line, sizeof line, "  %2d. %4d  %6.2f%%  %s\n", k + 1, preds[k].index, preds[k].prob * 100.0,
                    preds[k].label.c_str());
      std::cout << line;
    }
  }
  return 0;
}

// ---- bench ------------------------------------------------------------------------------------------

// The table of `mnv2 bench`: fresh and saved results alike. Rows come in groups of one backend, input size
// and precision; a heading names the group where the results hold more than one size or precision.
void print_bench_table(const std::vector<BenchResult>& results) {
  bool sizes = false, precisions = false;
  for (const BenchResult& r : results) {
    sizes = sizes || r.config.height != results.front().config.height || r.config.width != results.front().config.width;
    precisions = precisions || r.config.precision != results.front().config.precision;
  }
  const bool several = sizes || precisions;
  char line[320];
  std::snprintf(line, sizeof line, "%-8s %6s %11s %11s %11s %11s %7s %12s %8s | %10s %10s %12s | %7s\n", "backend",
                "batch", "host_med_ms", "host_p90_ms", "gpu_med_ms", "gpu_p90_ms", "cv", "images/s", "x_cudnn",
                "dev_med_ms", "dev_p90_ms", "dev_images/s", "kernels");
  std::cout << line;
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    if (several &&
        (i == 0 || r.config.height != results[i - 1].config.height || r.config.width != results[i - 1].config.width ||
         r.config.backend != results[i - 1].config.backend || r.config.precision != results[i - 1].config.precision))
      std::cout << "-- " << r.config.backend << ", input " << r.config.height << "x" << r.config.width
                << (precisions ? std::string(", ") + to_string(r.config.precision) : "") << "\n";
    char gmed[32] = "-", gp90[32] = "-", ratio[32] = "-", dmed[32] = "-", dp90[32] = "-", dips[32] = "-",
         kernels[32] = "-";
    if (r.kernels_per_run >= 0)
      std::snprintf(kernels, sizeof kernels, "%lld", static_cast<long long>(r.kernels_per_run));
    if (r.gpu_ms) {
      std::snprintf(gmed, sizeof gmed, "%.3f", r.gpu_ms->median);
      std::snprintf(gp90, sizeof gp90, "%.3f", r.gpu_ms->p90);
      if (const double x = speedup_vs_cudnn(results, r); x > 0) std::snprintf(ratio, sizeof ratio, "%.2f", x);
    }
    if (r.device_ms) {
      std::snprintf(dmed, sizeof dmed, "%.3f", r.device_ms->median);
      std::snprintf(dp90, sizeof dp90, "%.3f", r.device_ms->p90);
      std::snprintf(dips, sizeof dips, "%.1f", r.device_images_per_s);
    }
    std::snprintf(line, sizeof line, "%-8s %6d %11.3f %11.3f %11s %11s %7.3f %12.1f %8s | %10s %10s %12s | %7s\n",
                  r.config.backend.c_str(), r.config.batch, r.latency_ms.median, r.latency_ms.p90, gmed, gp90,
                  r.latency_ms.cv, r.images_per_s, ratio, dmed, dp90, dips, kernels);
    std::cout << line;
  }
}

// The 8-bit input path's figures (mnv2 bench --u8), under the main table: only where results have them.
void print_u8_table(const std::vector<BenchResult>& results) {
  bool any = false;
  for (const BenchResult& r : results) any = any || r.u8_ms.has_value();
  if (!any) return;
  std::cout << "8-bit input path (host clock: network-size RGB bytes on the host .. logits on the host):\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-8s %6s %9s %11s %11s %12s %12s  %s\n", "backend", "batch", "sub_batch",
                "u8_med_ms", "u8_p90_ms", "u8_images/s", "dev_images/s", "path");
  std::cout << line;
  for (const BenchResult& r : results) {
    if (!r.u8_ms) continue;
    char dips[32] = "-";
    if (r.device_ms) std::snprintf(dips, sizeof dips, "%.1f", r.device_images_per_s);
    std::snprintf(line, sizeof line, "%-8s %6d %9d %11.3f %11.3f %12.1f %12s  %s\n", r.config.backend.c_str(),
                  r.config.batch, r.config.sub_batch, r.u8_ms->median, r.u8_ms->p90, r.u8_images_per_s, dips,
                  r.u8_path.c_str());
    std::cout << line;
  }
}

// The files of --with or --show, all read before anything runs or prints: a bad one stops the command with
// its message alone.
std::vector<std::pair<std::string, BenchFile>> read_bench_files(const std::string& option, const std::string& list) {
  std::vector<std::pair<std::string, BenchFile>> files;
  for (const std::string& path : split(list, ',')) {
    if (path.empty()) throw UsageError(option + ": an empty file name in '" + list + "'");
    BenchFile f = read_bench_file(path);
    if (f.results.empty()) throw Error(path + ": the bench file holds no results");
    files.emplace_back(path, std::move(f));
  }
  return files;
}

// One line per saved file: what it is, so that its rows are not taken for this build's.
void print_saved_files(const std::vector<std::pair<std::string, BenchFile>>& files, const std::string& checksum) {
  for (const auto& [path, f] : files) {
    std::set<std::string> backends;
    for (const BenchResult& r : f.results) backends.insert(r.config.backend);
    std::string names;
    for (const std::string& b : backends) names += (names.empty() ? "" : ", ") + b;
    std::cout << "saved: " << path << ": " << f.results.size() << " result(s) of " << names << ", model "
              << f.model.source << " (" << f.model.checksum << "), commit " << f.commit << "\n";
    std::set<std::string> described;  // each way the file's results were run, once
    for (const BenchResult& r : f.results)
      if (described.insert(r.config.backend + ": " + r.backend_description).second)
        std::cout << "  " << r.config.backend << " " << to_string(r.config.precision) << ": " << r.backend_description
                  << "\n";
    if (checksum.empty()) continue;
    const ChecksumMatch m = match_checksums(f.model.checksum, checksum);
    if (m == ChecksumMatch::different)
      std::cout << "WARNING: " << path << " was measured on another model (" << f.model.checksum << ") than this run ("
                << checksum << ")\n";
    else if (m == ChecksumMatch::unknown)
      std::cout << "note: " << path << "'s model checksum (" << f.model.checksum
                << ") is of another algorithm than this run's (" << checksum
                << "): whether it was measured on the same model is unknown\n";
  }
}

// Reliability lines of saved results: only where the file recorded findings (another program's file records
// none, which is not a verdict).
void print_saved_reliability(const std::vector<std::pair<std::string, BenchFile>>& files) {
  for (const auto& [path, f] : files)
    for (const BenchResult& r : f.results) {
      if (r.reliability.findings.empty()) continue;
      std::cout << std::flush;
      std::printf("%s batch %d %dx%d (%s): ", r.config.backend.c_str(), r.config.batch, r.config.height, r.config.width,
                  path.c_str());
      print_reliability(r.reliability, "");
    }
}

int cmd_bench(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("bench takes no positional arguments");
  if (const auto show = args.get("--show")) {
    for (const char* o : {"--with", "--backends", "--backend", "--batch", "--input-size", "--warmup", "--iters",
                          "--precision", "--model", "--threads", "--cuda-variant", "--cuda-fusion", "--cuda-graph",
                          "--cuda-gemm-tile", "--cuda-pdl", "--cuda-splitk", "--sub-batch"})
      if (args.get(o))
        throw UsageError(std::string("--show prints saved files and runs nothing: ") + o + " does not apply");
    const auto files = read_bench_files("--show", *show);
    std::vector<BenchResult> results;
    for (const auto& [path, f] : files) results.insert(results.end(), f.results.begin(), f.results.end());
    print_saved_files(files, "");
    std::cout << "  end to end: host = wall time per run (input upload .. logits download, synchronised); gpu = event"
                 " pair around the same run; device-resident (dev): input already on the GPU, event pair around one"
                 " forward or graph replay; each file's backend_description says how it ran\n";
    print_bench_table(results);
    print_u8_table(results);
    print_saved_reliability(files);
    std::fflush(stdout);
    if (args.wants("--csv")) args.put("--csv", bench_csv(results));
    if (args.wants("--json")) args.put("--json", bench_json(results, files.front().second.model));
    return 0;
  }
  if (args.get("--backends") && args.get("--backend")) throw UsageError("give --backends or --backend, not both");
  const auto backend_list = split(args.get("--backends").value_or(args.get_or("--backend", "cpu")), ',');
  std::vector<int> batches;
  for (const auto& b : split(args.get_or("--batch", "1"), ',')) batches.push_back(parse_int(b, "--batch", 1, 65536));
  const int warmup = parse_int(args.get_or("--warmup", "5"), "--warmup", 0, 1000000);
  const int iters = parse_int(args.get_or("--iters", "50"), "--iters", 1, 1000000);
  const Precision precision = precision_of(args);
  for (const auto& b : backend_list) make_backend(b);  // unknown names fail here, as usage errors
  // Saved results to show beside the fresh ones: read (and refused) before anything runs.
  const auto saved = args.get("--with") ? read_bench_files("--with", *args.get("--with"))
                                        : std::vector<std::pair<std::string, BenchFile>>{};
  LoadedModel m = load_model(args);
  SweepConfig sweep;
  sweep.backends = backend_list;
  sweep.batches = batches;
  sweep.sizes = args.get("--input-size")
                    ? parse_size_list(*args.get("--input-size"))
                    : std::vector<std::pair<int, int>>{{m.model.input_height, m.model.input_width}};
  sweep.warmup = warmup;
  sweep.iters = iters;
  sweep.precision = precision;
  sweep.cuda = cuda_options(args);
  sweep.cudnn = cudnn_options(args);
  sweep.cpu_threads = cpu_threads(args);
  sweep.device = gpu_device_of(args);
  sweep.u8_input = args.flag("--u8");
  if (args.get("--sub-batch")) {
    if (!sweep.u8_input) throw UsageError("--sub-batch applies to the 8-bit input path: add --u8");
    sweep.sub_batch = parse_int(*args.get("--sub-batch"), "--sub-batch", 1, 65536);
  }
  const std::vector<BenchConfig> points = sweep_points(sweep);
  const bool tty = isatty(2);
  std::vector<BenchResult> results = run_sweep(m.model, sweep, [&](int i, int count, int done, int total) {
    const BenchConfig& p = points[static_cast<size_t>(i)];
    if (tty)
      std::cerr << "\r\033[K[" << i + 1 << "/" << count << "] " << p.backend << " " << p.height << "x" << p.width
                << " batch " << p.batch << ": " << done << "/" << total
                << (i + 1 == count && done == total ? "\r\033[K" : "") << std::flush;
    return true;
  });
  const size_t fresh = results.size();
  for (const auto& [path, f] : saved) results.insert(results.end(), f.results.begin(), f.results.end());
  std::string sizes_text;
  for (const auto& [h, w] : sweep.sizes)
    sizes_text += (sizes_text.empty() ? "" : ", ") + std::to_string(h) + "x" + std::to_string(w);
  print_warnings(std::cout, m.model);
  std::cout << "model: " << m.model.source << "; input " << sizes_text << "; precision " << to_string(precision) << "; "
            << warmup << " warm-up + " << iters
            << " timed runs.\n  end to end: host = wall time per run (input upload .. logits download,"
               " synchronised), images/s from its median; gpu = cudaEvent pair on the stream around the same run;"
               " x_cudnn = cudnn's gpu median / this gpu median, same batch\n  device-resident (dev): the network"
               " alone on an input already on the GPU, one CUDA graph replay, event pair; no upload, no download"
               " (what PyTorch CUDA-graph timings measure); '-' where the backend has no such mode\n  kernels: kernel"
               " launches per run (the CUDA graph's kernel nodes; '-' where the backend does not count them)\n";
  print_saved_files(saved, m.model.checksum);
  print_bench_table(results);
  print_u8_table(results);
  for (size_t i = 0; i < fresh; ++i) {
    const BenchResult& r = results[i];
    std::cout << std::flush;
    std::printf("%s batch %d %dx%d: ", r.config.backend.c_str(), r.config.batch, r.config.height, r.config.width);
    print_reliability(r.reliability, "");
  }
  print_saved_reliability(saved);
  std::fflush(stdout);
  if (args.wants("--csv")) args.put("--csv", bench_csv(results));
  if (args.wants("--json")) args.put("--json", bench_json(results, report_model(m.model, m.location.how)));
  return 0;
}

// ---- memory -----------------------------------------------------------------------------------------

std::string mib(int64_t bytes) { return format_mib(bytes); }
std::string memory_line(const MemoryReport& m) { return describe_memory(m); }

int cmd_memory(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  const std::string backend = args.get_or("--backend", "cpu");
  make_backend(backend);  // unknown names are usage errors
  PrepareConfig pc;
  pc.batch = parse_int(args.get_or("--batch", "1"), "--batch", 1, 65536);
  pc.precision = precision_of(args);
  pc.cuda = cuda_options(args);
  pc.cudnn = cudnn_options(args);
  pc.device = gpu_device_of(args);
  LoadedModel m = load_model(args);
  std::tie(pc.height, pc.width) = args.get("--input-size")
                                      ? parse_size(*args.get("--input-size"))
                                      : std::pair<int, int>{m.model.input_height, m.model.input_width};
  const MemoryStudy s = memory_study(m.model, backend, pc);
  print_warnings(std::cout, m.model);
  std::printf("model %s; backend %s (%s); batch %d; %dx%d; %s\n", m.model.source.c_str(), backend.c_str(),
              s.backend_description.c_str(), pc.batch, pc.height, pc.width, to_string(pc.precision));
  std::printf("%-4s %-22s %-18s %-18s %16s %14s\n", "idx", "name", "kind", "output", "activation_bytes",
              "weight_bytes");
  for (const LayerMemory& l : s.layers) {
    const Layer& layer = s.topology[static_cast<size_t>(l.layer)];
    std::printf("%-4d %-22s %-18s %-18s %16lld %14lld\n", layer.index, layer.name.c_str(), to_string(layer.kind),
                s.stats[static_cast<size_t>(l.layer)].output.str().c_str(), static_cast<long long>(l.activation_bytes),
                static_cast<long long>(l.weight_bytes));
  }
  std::printf("model: weights %s in %d tensors; activations %s in %d tensors (the input and every layer's output)\n",
              mib(s.model_weight_bytes).c_str(), s.weight_tensors, mib(s.model_activation_bytes).c_str(),
              s.activation_tensors);
  std::printf("held by the %s backend: %s\n", backend.c_str(), memory_line(s.held).c_str());
  if (s.held.driver_held_bytes() < 0)
    std::printf("driver: not measured (%s)\n",
                backend == "cpu" ? "host backend: host memory, as accounted above" : "no reading");
  if (args.wants("--csv")) args.put("--csv", memory_csv(s));
  if (args.wants("--json")) args.put("--json", memory_json(s));
  return 0;
}

// ---- eval -------------------------------------------------------------------------------------------

// "[#########...........]  120/500 images  85.3 images/s" on a terminal; a line per tenth otherwise.
EvalProgress eval_progress() {
  const bool tty = isatty(2);
  // The rate counts from the first call (done = 0, the backend prepared), as the result's images/s does.
  auto start = std::make_shared<std::chrono::steady_clock::time_point>();
  auto last_tenth = std::make_shared<int>(-1);
  return [tty, start, last_tenth](int done, int total) {
    if (done == 0) *start = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    const double rate = s > 0 ? done / s : 0;
    if (tty) {
      const int width = 30, filled = total ? done * width / total : width;
      std::fprintf(stderr, "\r\033[K[%s%s] %d/%d images  %.1f images/s", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), done, total, rate);
      if (done == total) std::fprintf(stderr, "\r\033[K");
    } else if (int tenth = total ? done * 10 / total : 10; tenth != *last_tenth) {
      std::fprintf(stderr, "eval: %d/%d images, %.1f images/s\n", done, total, rate);
      *last_tenth = tenth;
    }
    return true;
  };
}

int cmd_eval(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  const auto images_dir = args.get("--images");
  if (!images_dir) throw UsageError("eval needs --images DIR");
  EvalConfig cfg;
  cfg.backend = args.get_or("--backend", "cpu");
  cfg.batch = parse_int(args.get_or("--batch", "1"), "--batch", 1, 4096);
  cfg.loader_threads = parse_int(args.get_or("--threads", "0"), "--threads", 0, 256);
  cfg.precision = precision_of(args);
  cfg.cuda = cuda_options(args);
  cfg.cudnn = cudnn_options(args);
  cfg.device = gpu_device_of(args);
  make_backend(cfg.backend);  // unknown names are usage errors, before any file work
  if (!std::filesystem::is_directory(*images_dir)) throw Error(*images_dir + ": no such folder");
  LoadedModel m = load_model(args);
  const std::vector<std::string> labels =
      args.get("--labels") ? read_labels_file(*args.get("--labels")) : builtin_labels(m.model.num_classes);
  if (static_cast<int>(labels.size()) != m.model.num_classes)
    throw Error(args.get_or("--labels", "built-in labels") + ": " + std::to_string(labels.size()) +
                " labels for a model with " + std::to_string(m.model.num_classes) + " classes");
  const std::vector<EvalItem> items = args.get("--list")
                                          ? read_eval_list(*args.get("--list"), *images_dir, m.model.num_classes)
                                          : scan_class_folders(*images_dir, labels);
  const EvalResult r = evaluate(m.model, items, cfg, default_image_loader(m.model.preprocess), eval_progress());

  auto name = [&](int i) {
    return i >= 0 && i < static_cast<int>(labels.size()) ? labels[static_cast<size_t>(i)] : "";
  };
  print_warnings(std::cout, m.model);
  std::printf("model %s; backend %s (%s); precision %s; batch %d; %d loader threads, at most %d batches ahead\n",
              m.model.source.c_str(), cfg.backend.c_str(), r.backend_description.c_str(), to_string(cfg.precision),
              cfg.batch, r.config.loader_threads, r.config.queue_batches);
  std::printf("%d images from %s (%s), %zu skipped as unreadable\n", r.images, images_dir->c_str(),
              args.get("--list") ? ("list " + *args.get("--list")).c_str() : "one sub-folder per class",
              r.skipped.size());
  std::printf("top-1 %.2f%% (%d/%d), top-5 %.2f%% (%d/%d)\n", r.top1 * 100, r.top1_correct, r.images, r.top5 * 100,
              r.top5_correct, r.images);
  std::printf("%.2f s, %.1f images/s (inference %.2f s, waiting for the loaders %.2f s)\n", r.wall_s, r.images_per_s,
              r.inference_s, r.loader_wait_s);
  if (!r.misclassified.empty()) std::printf("misclassified (%zu):\n", r.misclassified.size());
  for (const auto& miss : r.misclassified) {
    std::printf("  %s: label %d (%s), predicted", miss.path.c_str(), miss.label, name(miss.label).c_str());
    for (size_t k = 0; k < miss.top5.size(); ++k)
      std::printf("%s %d%s", k ? "," : "", miss.top5[k], k ? "" : (" (" + name(miss.top5[k]) + ")").c_str());
    std::printf("\n");
  }
  if (!r.skipped.empty()) std::printf("skipped (%zu):\n", r.skipped.size());
  for (const auto& skip : r.skipped)  // the decoder's message names the file already
    std::printf("  %s\n",
                (skip.reason.rfind(skip.path, 0) == 0 ? skip.reason : skip.path + ": " + skip.reason).c_str());
  std::fflush(stdout);
  if (args.wants("--json"))
    args.put("--json",
             eval_json(r, report_model(m.model, m.location.how), EvalSource{*images_dir, args.get_or("--list", "")}));
  return 0;
}

// ---- profile / compare --------------------------------------------------------------------------------

struct ProfileRequest {
  LoadedModel m;
  ProfileConfig base;
  std::vector<std::string> backends;
};

ProfileRequest parse_profile_request(const Args& args, bool compare) {
  if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
  ProfileRequest req;
  if (compare) {
    if (args.get("--backend")) throw UsageError("compare takes --backends B1,B2[,B3]");
    req.backends = split(args.get_or("--backends", "cpu,cudnn"), ',');
    if (req.backends.size() < 2) throw UsageError("compare needs at least two backends, e.g. --backends cpu,cudnn");
  } else {
    if (args.get("--backends")) throw UsageError("profile takes one --backend; use compare for several");
    req.backends = {args.get_or("--backend", "cpu")};
  }
  for (size_t i = 0; i < req.backends.size(); ++i) {
    make_backend(req.backends[i]);  // unknown names are usage errors
    for (size_t k = 0; k < i; ++k)
      if (req.backends[k] == req.backends[i]) throw UsageError("backend '" + req.backends[i] + "' given twice");
  }
  ProfileConfig& c = req.base;
  c.options = args.options();
  const PrepareConfig p = prepare_config_of(c.options, {224, 224});
  c.batch = p.batch;
  c.warmup = static_cast<int>(c.options.integer("warmup"));
  c.iters = static_cast<int>(c.options.integer("iters"));
  c.precision = p.precision;
  c.cuda = p.cuda;
  c.cudnn = p.cudnn;
  c.cpu_threads = p.cpu_threads;
  c.device = p.device;
  c.timer = parse_timer(c.options.value("timing"));
  c.graph_replay = c.options.value("exec") == "graph";
  c.layers_without_graph = compare;  // compare's list mixes backends: those without a graph run layer by layer
  if (args.get("--image") && args.get("--tensor")) throw UsageError("give --image or --tensor, not both");
  if (args.get("--image") && args.get("--input-size"))
    throw UsageError("--input-size applies to random or --tensor inputs; an image is cropped as the model says");
  req.m = load_model(args);
  auto [h, w] = args.get("--input-size") ? parse_size(*args.get("--input-size"))
                                         : std::pair<int, int>{req.m.model.input_height, req.m.model.input_width};
  if (auto image = args.get("--image")) {
    Tensor t = preprocess(decode_image_file(*image), req.m.model.preprocess);
    h = static_cast<int>(t.shape.h);
    w = static_cast<int>(t.shape.w);
    c.input = std::move(t);
    c.input_name = *image;
  } else if (auto tensor = args.get("--tensor")) {
    c.input = read_tensor_file(*tensor, Shape{1, req.m.model.input_channels, h, w});
    c.input_name = *tensor;
  }
  c.height = h;
  c.width = w;
  analyse(req.m.model, c.batch, h, w);  // a size the network cannot take fails before any run
  return req;
}

ProfileProgress stderr_progress(const std::string& backend) {
  const bool tty = isatty(2);
  auto last_phase = std::make_shared<std::string>();
  return [tty, backend, last_phase](const std::string& phase, int done, int total) {
    if (tty) {
      std::cerr << "\r\033[K" << backend << " " << phase << ": " << done << "/" << total << std::flush;
      if (done == total) std::cerr << "\r\033[K";
    } else if (phase != *last_phase) {
      std::cerr << backend << ": " << phase << " (" << total << " runs)\n";
      *last_phase = phase;
    }
    return true;
  };
}

std::string us(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", ns / 1000.0);
  return buf;
}

void print_summary(const RunReport& r) {
  const EndToEnd& e = r.end_to_end;
  std::printf("%s: %s\n", r.backend.c_str(), r.backend_description.c_str());
  std::printf("  end to end (un-instrumented, %lld runs): host median %.3f ms (p90 %.3f, min %.3f, cv %.3f)",
              static_cast<long long>(e.host_ms.n), e.host_ms.median, e.host_ms.p90, e.host_ms.min, e.host_ms.cv);
  if (e.gpu_ms) std::printf("; GPU median %.3f ms (p90 %.3f)", e.gpu_ms->median, e.gpu_ms->p90);
  std::printf("; %.1f images/s\n", e.images_per_s);
  std::printf(
      "  per layer (%s, %s, %d runs): sum of layer medians %.3f ms; gap to end to end %.3f ms"
      " (instrumentation, launch gaps, idle GPU, copies)\n",
      r.timer.c_str(), r.execution.c_str(), r.config.iters, r.sum_of_steps_ms, r.gap_ms);
  std::printf("  memory held: %s\n", memory_line(r.memory).c_str());
  if (r.timeline)
    std::printf("  timeline: iteration %d of %d (%s), %zu layer spans at their own timestamps (--trace, --json)\n",
                r.timeline->iteration, r.timeline->iterations, r.timeline->choice.c_str(), r.timeline->steps.size());
  if (r.sm_clock_mhz_start > 0)
    std::printf("  SM clock: %d MHz at start, %d MHz at end\n", r.sm_clock_mhz_start, r.sm_clock_mhz_end);
  int disagree = 0;
  std::vector<double> gaps;
  for (const auto& p : r.steps) {
    if (!p.event_ns) continue;
    disagree += p.timers_disagree ? 1 : 0;
    gaps.push_back(p.event_ns->median - p.time_ns.median);
  }
  if (!gaps.empty()) {
    const Summary g = summarize(gaps);
    std::printf(
        "  two-timer check: %d of %zu layers differ by more than the event resolution (0.5 us) between"
        " cudaEvent and CUPTI; event minus CUPTI median %.2f us (max %.2f us): launch gaps the events include\n",
        disagree, gaps.size(), g.median / 1000.0, g.max / 1000.0);
  }
  std::string kinds;
  for (const auto& g : r.per_kind) {
    char buf[160];
    if (g.steps == 0 && g.fused_layers > 0)
      std::snprintf(buf, sizeof buf, "%s%s fused (all %d layers run inside other kinds' steps)",
                    kinds.empty() ? "" : ", ", g.name.c_str(), g.fused_layers);
    else
      std::snprintf(buf, sizeof buf, "%s%s %.3f ms (%.1f%%)", kinds.empty() ? "" : ", ", g.name.c_str(),
                    g.median_ns / 1e6, g.share * 100);
    kinds += buf;
  }
  std::printf("  per kind: %s\n", kinds.c_str());
  for (const auto& w : r.warnings) std::printf("  WARNING: %s\n", w.c_str());
  print_reliability(r.reliability, "  ");
}

void print_profile_table(const RunReport& r) {
  std::printf("%-4s %-22s %-18s %-16s %10s %10s %7s %9s %9s %s\n", "idx", "name", "kind", "output", "median_us",
              "p90_us", "share", "GFLOP/s", "GB/s", r.timer == "cupti_kernel" ? "kernels" : "variant");
  for (const auto& lp : r.layers) {
    const Layer& l = r.topology[static_cast<size_t>(lp.layer)];
    const StepProfile& p = r.steps[static_cast<size_t>(lp.step)];
    const std::string out = r.layer_stats[static_cast<size_t>(lp.layer)].output.str();
    if (p.layers.front() != lp.layer) {
      std::printf("%-4d %-22s %-18s %-16s %10s   (fused into %s)\n", l.index, l.name.c_str(), to_string(l.kind),
                  out.c_str(), "-", p.name.c_str());
      continue;
    }
    std::string detail = p.variant;
    if (r.timer == "cupti_kernel") {
      detail = std::to_string(static_cast<int>(std::lround(p.kernels_per_iter))) + "x ";
      for (size_t k = 0; k < p.kernel_names.size() && k < 2; ++k) {
        std::string n = p.kernel_names[k].substr(0, 48);
        detail += (k ? "; " : "") + n;
      }
      if (p.timers_disagree) detail += "  [event " + us(p.event_ns->median) + " us]";
    }
    std::printf("%-4d %-22s %-18s %-16s %10s %10s %6.2f%% %9.1f %9.1f %s\n", l.index, l.name.c_str(), to_string(l.kind),
                out.c_str(), us(p.time_ns.median).c_str(), us(p.time_ns.p90).c_str(), p.share * 100, p.gflops,
                p.gbytes_per_s, detail.c_str());
  }
}

void put_reports(const Args& args, const std::vector<RunReport>& reports) {
  if (args.wants("--csv")) args.put("--csv", report_csv(reports));
  if (args.wants("--json")) args.put("--json", reports_json_text(reports));
  if (args.wants("--trace")) args.put("--trace", trace_json(reports));
}

// --ncu-command: the GPU backend's step names come from preparing it here; where it cannot run (no GPU on
// this machine) the layer's own step name is assumed, with a warning, since a fusing backend names the
// range after the fused step.
int print_ncu_command(const Args& args, const ProfileRequest& req) {
  const std::string& backend = req.backends.front();
  if (is_host_backend(backend))
    throw UsageError("--ncu-command needs a GPU backend (--backend cudnn or cuda): the " + backend +
                     " backend launches no kernels");
  const Model& model = req.m.model;
  const int layer = resolve_layer(model, *args.get("--ncu-command"));
  NcuTarget t;
  t.mnv2_path = std::filesystem::read_symlink("/proc/self/exe").string();
  t.backend = backend;
  if (!req.m.location.path.empty()) t.model_path = std::filesystem::absolute(req.m.location.path).string();
  t.batch = req.base.batch;
  t.height = req.base.height;
  t.width = req.base.width;
  t.options = req.base.options;
  if (auto image = args.get("--image")) t.image = std::filesystem::absolute(*image).string();
  if (auto tensor = args.get("--tensor")) t.tensor = std::filesystem::absolute(*tensor).string();
  t.layer = layer;
  auto b = make_backend(backend);
  if (Availability a = b->availability(); a.available) {
    auto net = b->prepare(
        model, PrepareConfig{t.batch, t.height, t.width, req.base.precision, req.base.cuda, 0, req.base.cudnn});
    t.nvtx_range = net->steps().at(static_cast<size_t>(step_of_layer(net->steps(), layer))).name;
  } else {
    t.nvtx_range = default_step_name(model, layer);
    std::cerr << "WARNING: backend '" << backend << "' cannot run here (" << a.reason << "); the NVTX range '"
              << t.nvtx_range << "' assumes layer " << layer
              << " runs as a step of its own: where the backend fuses it, the range is the fused step's name (see"
                 " the 'step' column of a profile report from the GPU machine)\n";
  }
  std::cout << shell_join(ncu_argv(t)) << "\n";
  return 0;
}

int cmd_profile(const Args& args) {
  ProfileRequest req = parse_profile_request(args, false);
  if (args.get("--ncu-command")) return print_ncu_command(args, req);
  ProfileConfig cfg = req.base;
  cfg.backend = req.backends.front();
  RunReport r = profile(req.m.model, cfg, stderr_progress(cfg.backend));
  print_warnings(std::cout, req.m.model);
  std::printf("model %s; input %s; batch %d; %dx%d; %s; warm-up %d, %d timed runs per phase; percentiles: type 7\n",
              r.model_source.c_str(), r.config.input_name.c_str(), r.config.batch, r.config.height, r.config.width,
              to_string(r.config.precision), r.config.warmup, r.config.iters);
  print_profile_table(r);
  print_summary(r);
  put_reports(args, {r});
  return 0;
}

// ---- roofline -----------------------------------------------------------------------------------------

int cmd_roofline(const Args& args) {
  if (args.get("--trace")) throw UsageError("roofline writes --csv and --json (its points); profile writes traces");
  ProfileRequest req = parse_profile_request(args, false);
  ProfileConfig cfg = req.base;
  cfg.backend = req.backends.front();
  if (Availability a = make_backend(cfg.backend)->availability(); !a.available)
    throw Error("backend '" + cfg.backend + "' is not available: " + a.reason);
  std::string warning;
  const bool tty = isatty(2);
  if (tty) std::cerr << "calibrating (or reading the cache) ..." << std::flush;
  const Ceilings c = device_ceilings(cfg.backend, args.flag("--recalibrate"), &warning, cfg.precision);
  if (tty) std::cerr << "\r\033[K";
  if (!warning.empty()) std::cerr << "WARNING: " << warning << "\n";
  const RunReport r = profile(req.m.model, cfg, stderr_progress(cfg.backend));
  const std::vector<RooflinePoint> points = roofline_points(r, c);
  print_warnings(std::cout, req.m.model);
  std::printf("%s: memory %.1f GB/s, compute %.1f GFLOP/s, ridge %.2f FLOP/byte (%s; %s %s)\n", c.device.c_str(),
              c.bandwidth_gb_s, c.gflop_s, c.ridge(), c.method.c_str(),
              c.from_cache ? "cached in" : "calibrated now, cached in", roofline_cache_file().c_str());
  std::printf("backend %s; batch %d; %dx%d; %s timer, median of %d runs\n", r.backend.c_str(), r.config.batch,
              r.config.height, r.config.width, r.timer.c_str(), r.config.iters);
  std::printf("%-4s %-26s %-18s %10s %10s %12s %7s %s\n", "idx", "step", "kind", "FLOP/B", "GFLOP/s", "roof_GFLOP/s",
              "of_roof", "bound");
  int memory_bound = 0;
  for (const RooflinePoint& p : points) {
    memory_bound += p.memory_bound ? 1 : 0;
    std::printf("%-4d %-26s %-18s %10.2f %10.1f %12.1f %6.1f%% %s\n", p.layer, p.name.c_str(), p.kind.c_str(),
                p.intensity, p.gflop_s, p.attainable_gflop_s,
                p.attainable_gflop_s > 0 ? 100 * p.gflop_s / p.attainable_gflop_s : 0.0,
                p.memory_bound ? "memory" : "compute");
  }
  std::printf("%zu steps: %d below the ridge (memory-bound), %zu above\n", points.size(), memory_bound,
              points.size() - static_cast<size_t>(memory_bound));
  if (args.wants("--csv")) args.put("--csv", roofline_csv(points));
  if (args.wants("--json")) args.put("--json", roofline_json(c, r));
  return 0;
}

int cmd_compare(const Args& args) {
  ProfileRequest req = parse_profile_request(args, true);
  CompareConfig config;
  config.backends = req.backends;
  config.base = req.base;
  for (const std::string& note : resolve_compare(req.backends, req.base.precision).notes) std::cerr << note << "\n";
  auto phases = std::make_shared<std::vector<ProfileProgress>>();
  for (const auto& b : req.backends) phases->push_back(stderr_progress(b));
  CompareResult result =
      run_compare(req.m.model, config, [&](int i, const std::string& b, const std::string& phase, int done, int total) {
        if (phase != "diff") return (*phases)[static_cast<size_t>(i)](phase, done, total);
        if (done == 0) std::cerr << "diff " << b << " vs " << req.backends.front() << "\n";
        return true;
      });
  std::vector<RunReport>& reports = result.reports;

  print_warnings(std::cout, req.m.model);
  std::printf("model %s; input %s; batch %d; %dx%d; %s; warm-up %d, %d timed runs per phase\n",
              req.m.model.source.c_str(), req.base.input_name.empty() ? "random(seed=1)" : req.base.input_name.c_str(),
              req.base.batch, req.base.height, req.base.width, to_string(req.base.precision), req.base.warmup,
              req.base.iters);
  std::printf("%-4s %-22s %-18s", "idx", "name", "kind");
  for (const auto& r : reports) std::printf(" %12s", (r.backend + "_us").c_str());
  for (size_t i = 1; i < reports.size(); ++i)
    std::printf(" %13s %10s", (reports[i].backend + "_relL2").c_str(), "max_abs");
  std::printf("\n");
  for (size_t l = 0; l < reports.front().layers.size(); ++l) {
    const Layer& layer = reports.front().topology[l];
    std::printf("%-4d %-22s %-18s", layer.index, layer.name.c_str(), to_string(layer.kind));
    for (const auto& r : reports) {
      const StepProfile& p = r.steps[static_cast<size_t>(r.layers[l].step)];
      std::printf(" %12s", p.layers.front() == static_cast<int>(l) ? us(p.time_ns.median).c_str() : "(fused)");
    }
    for (size_t i = 1; i < reports.size(); ++i) {
      const LayerDiff& d = reports[i].diff->layers[l];
      if (d.compared)
        std::printf(" %13.3e %10.3e", d.error.rel_l2, d.error.max_abs);
      else
        std::printf(" %13s %10s", "-", "-");
    }
    std::printf("\n");
  }
  for (const auto& r : reports) print_summary(r);
  for (size_t i = 1; i < reports.size(); ++i) {
    const DiffReport& d = *reports[i].diff;
    std::printf("diff %s vs %s (first image): logits rel L2 %.3e, max abs %.3e, cosine %.9f; top-5 %s; ",
                d.backend.c_str(), d.reference.c_str(), d.logits.rel_l2, d.logits.max_abs, d.logits.cosine,
                d.top5_agree ? "agrees" : "DIFFERS");
    if (d.first_divergent_layer >= 0)
      std::printf("first layer over rel L2 %.0e: %d\n", d.threshold, d.first_divergent_layer);
    if (!d.outputs_plan.empty())
      std::printf("%s: %s\n", d.backend.c_str(), d.outputs_plan.c_str());
    else
      std::printf("no layer over rel L2 %.0e\n", d.threshold);
  }
  put_reports(args, reports);
  return 0;
}

// ---- runs: report files side by side ---------------------------------------------------------------------

// What the app's Runs panel and Run comparison do, headless: the runs of report (or session) files listed, each
// compared with the baseline: every setting that differs, weighed (compare_settings), then the layers side by
// side where the two runs are of one network.
int cmd_runs(const Args& args) {
  const std::vector<std::string>& files = args.positionals();
  if (files.empty()) throw UsageError("runs takes report or session files: mnv2 runs A.json B.json [...]");
  struct Listed {
    RunReport report;
    std::string name, note, file;
  };
  std::vector<Listed> runs;
  int session_baseline = -1;
  for (const std::string& file : files) {
    Session s = read_session_file(file);
    if (s.runs.empty()) throw Error(file + ": the report holds no runs");
    if (s.baseline >= 0 && session_baseline < 0) session_baseline = static_cast<int>(runs.size()) + s.baseline;
    for (size_t i = 0; i < s.runs.size(); ++i) {
      std::string name = s.runs[i].name;
      if (name.empty())
        name =
            std::filesystem::path(file).filename().string() + (s.runs.size() > 1 ? " #" + std::to_string(i + 1) : "");
      runs.push_back({std::move(s.runs[i].report), std::move(name), std::move(s.runs[i].note), file});
    }
  }
  int baseline = session_baseline >= 0 ? session_baseline : 0;
  if (const auto b = args.get("--baseline")) {
    baseline = parse_int(*b, "--baseline", 1, static_cast<int>(runs.size())) - 1;
  }
  std::printf("%-3s %-24s %-10s %-9s %5s %-9s %14s  %s\n", "#", "run", "backend", "precision", "batch", "size",
              "end_to_end_ms", "device");
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunReport& r = runs[i].report;
    std::printf("%-3zu %-24s %-10s %-9s %5d %-9s %14.3f  %s%s\n", i + 1, runs[i].name.c_str(), r.backend.c_str(),
                to_string(r.config.precision), r.config.batch,
                (std::to_string(r.config.height) + "x" + std::to_string(r.config.width)).c_str(),
                r.end_to_end.host_ms.median, r.device.c_str(), static_cast<int>(i) == baseline ? "  (baseline)" : "");
    if (!runs[i].note.empty()) std::printf("    note: %s\n", runs[i].note.c_str());
  }
  int refused = 0;
  const Listed& a = runs[static_cast<size_t>(baseline)];
  for (size_t i = 0; i < runs.size(); ++i) {
    if (static_cast<int>(i) == baseline) continue;
    const Listed& b = runs[i];
    const RunComparability c = compare_settings(a.report, b.report);
    std::printf("\n%s against %s:\n", b.name.c_str(), a.name.c_str());
    if (c.differences.empty()) std::printf("  the same settings\n");
    for (const SettingDifference& d : c.differences)
      std::printf("  %-6s %s %s -> %s: %s\n", to_string(d.weight), d.setting.c_str(), d.a.c_str(), d.b.c_str(),
                  d.consequence.c_str());
    if (c.refused()) {
      std::fprintf(stderr, "mnv2 runs: %s against %s not compared: %s\n", b.name.c_str(), a.name.c_str(),
                   c.refusal().c_str());
      ++refused;
      continue;
    }
    const double ta = a.report.sum_of_steps_ms, tb = b.report.sum_of_steps_ms;
    if (ta > 0 && tb > 0) {
      std::printf("  sum of layer medians %.3f ms -> %.3f ms: B/A %.3g", ta, tb, tb / ta);
      if (c.images_ratio != 1) std::printf(" per run, %.3g per image", tb / ta / c.images_ratio);
      std::printf("\n");
    }
    std::printf("  %-4s %-26s %12s %12s %8s\n", "idx", "layers", "a_us", "b_us", "b/a");
    for (const AlignedSegment& seg : align_runs(a.report, b.report)) {
      const Layer& first = a.report.topology[static_cast<size_t>(seg.first_layer)];
      std::string name = first.name;
      if (seg.layers.size() > 1) name += " +" + std::to_string(seg.layers.size() - 1);
      std::printf("  %-4d %-26s %12s %12s %8.3g%s\n", seg.first_layer, name.c_str(), us(seg.median_a).c_str(),
                  us(seg.median_b).c_str(), seg.median_a > 0 ? seg.median_b / seg.median_a : 0.0,
                  seg.p90_a < seg.p10_b || seg.p90_b < seg.p10_a ? "" : "  (within noise)");
    }
  }
  return refused > 0 ? 1 : 0;
}

// ---- the command line ------------------------------------------------------------------------------

// The options several commands share: the engine's table (mnv2/options.h) gives their flags and help.
void model_options(Args& a) { a.table("model"); }
void labels_option(Args& a) {
  a.value("--labels", "class names, one per line (default: the built-in ImageNet labels)");
}
void backend_option(Args& a) { a.table("backend"); }
void batch_option(Args& a) { a.table("batch"); }
void size_option(Args& a) { a.table("input-size"); }
void precision_option(Args& a) { a.table("precision"); }
void cuda_option_set(Args& a) {
  for (const OptionSpec& s : option_table())
    if (s.per_run && (s.name.rfind("cuda-", 0) == 0 || s.name.rfind("cudnn-", 0) == 0)) a.table(s.name);
}
void threads_option(Args& a) { a.table("threads"); }
void device_option(Args& a) { a.table("device"); }
void counts_options(Args& a, const char* warmup, const char* iters) {
  a.table("warmup", warmup);
  a.table("iters", iters);
}
// Where files are and the CUPTI switch (the options that are not part of a run): every command takes them.
void process_options(Args& a) {
  for (const OptionSpec& s : option_table())
    if (!s.per_run) a.table(s.name);
}
void report_options(Args& a, bool trace) {
  a.output("--csv", "write the results as CSV to this file ('-': standard output)");
  a.output("--json", "write the results as JSON to this file ('-': standard output)");
  if (trace) a.output("--trace", "write a Perfetto/Chrome trace to this file ('-': standard output)");
}
// profile, roofline and compare: one run described the same way.
void run_options(Args& a, bool compare) {
  model_options(a);
  if (compare)
    a.value("--backends", "B1,B2[,B3...]: the first is the reference of the diffs (default cpu,cudnn)");
  else
    backend_option(a);
  batch_option(a);
  size_option(a);
  counts_options(a, "10", "100");
  a.table("timing");
  a.table("exec");
  a.value("--image", "run on this photograph, preprocessed as the model says (default: random input, seed 1)");
  a.value("--tensor", "run on this raw float32 NCHW tensor file");
  precision_option(a);
  device_option(a);
  cuda_option_set(a);
  threads_option(a);
}

// ---- lab (issue 18, docs/KERNEL_LAB.md) -----------------------------------------------------------------

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

int cmd_lab(const Args& args) {
  if (!args.positionals().empty()) throw UsageError("lab takes no positional arguments");
  if (auto slot = args.get("--template")) {
    std::cout << lab_template(*slot);
    return 0;
  }
  if (args.flag("--list-slots")) {
    const LoadedModel m = load_model(args);
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
  const LoadedModel m = load_model(args);
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
  c.precision = precision_of(args);
  if (auto b = args.get("--batch")) c.batch = parse_int(*b, "--batch", 1, 4096);
  c.input = args.get_or("--input", "random");
  if (auto t = args.get("--timeout")) c.timeout_s = parse_int(*t, "--timeout (seconds)", 1, 86400);
  if (auto n = args.get("--runs")) c.runs = parse_int(*n, "--runs", 1, 100000);
  c.compile_only = args.flag("--compile-only");
  c.no_time = args.flag("--no-time");
  c.arch = args.get_or("--arch", "");
  c.device = gpu_device_of(args);
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
  std::string out_json = json_path;
  if (out_json.empty() && args.get("--out"))
    out_json = (std::filesystem::path(*args.get("--out")) / "lab.json").string();
  if (!out_json.empty()) write_output_file(out_json, lab_result_json(r).dump(2) + "\n");
  std::fflush(stdout);
  return lab_exit_code(r);
}

int cmd_lab_worker(const Args& args) {
  const std::string request = args.get_or("--request", "");
  const auto fd = args.get("--result-fd");
  if (request.empty() || !fd) throw UsageError("lab-worker is started by 'mnv2 lab' (--request FILE --result-fd N)");
  return lab_worker_main(request, parse_int(*fd, "--result-fd", 3, 1 << 20));
}

struct Command {
  const char* name;
  const char* help;
  void (*declare)(Args&);
  int (*run)(const Args&);
};

const Command kCommands[] = {
    {"info", "build, devices, backends and why unavailable, model lookup; the model's format, producer, input, classes",
     [](Args& a) {
       model_options(a);
       labels_option(a);
       a.flag("--json", "print JSON instead of text");
     },
     cmd_info},
    {"topology", "the layers with output shapes, params and MACs",
     [](Args& a) {
       model_options(a);
       a.value("--format", "table, csv or json (default table)");
       batch_option(a);
       size_option(a);
     },
     cmd_topology},
    {"classify", "top-K classes for each image (or each image of a tensor)",
     [](Args& a) {
       model_options(a);
       labels_option(a);
       backend_option(a);
       a.value("--top", "classes per image (default 5)");
       a.value("--tensor", "classify the images of this raw float32 NCHW tensor file instead");
       size_option(a);
       precision_option(a);
       device_option(a);
       cuda_option_set(a);
       a.flag("--json", "print JSON (top-5, the top K, every logit) instead of text");
       a.positional("images", "image files");
     },
     cmd_classify},
    {"plan", "the cuda backend's plan for a GPU (steps, kernels, tiles), made without one",
     [](Args& a) {
       model_options(a);
       a.value("--gpu", "t4, a100, rtx4090 or h200: the GPU's properties (default h200)");
       a.value("--code-arch",
               "the architecture the code was compiled for, e.g. 75 for compute_75 PTX (default: the GPU's)");
       batch_option(a);
       size_option(a);
       precision_option(a);
       cuda_option_set(a);
     },
     cmd_plan},
    {"bench", "end-to-end latency and throughput (no instrumentation), every backend x input size x batch",
     [](Args& a) {
       model_options(a);
       a.value("--backends", "B[,B...] (default cpu)");
       backend_option(a);
       a.value("--batch", "N[,N...] (default 1)");
       a.value("--input-size", "HxW[,HxW...] (default: the model's)");
       a.value("--with",
               "FILE[,FILE...]: saved mnv2.bench/1 results (ours, scripts/pytorch-anchor.py's) shown and "
               "written beside the fresh ones");
       a.value("--show", "FILE[,FILE...]: print saved mnv2.bench/1 results (and --csv/--json them); runs nothing");
       counts_options(a, "5", "50");
       report_options(a, false);
       precision_option(a);
       device_option(a);
       cuda_option_set(a);
       threads_option(a);
       a.flag("--u8",
              "also time the 8-bit input path: random network-size RGB bytes per image, converted and normalised by "
              "the backend (on the GPU for cuda), host clock from bytes to logits");
       a.value("--sub-batch",
               "N: with --u8, run each batch as sub-batches of N images (a net prepared at N), each upload "
               "overlapping the previous sub-batch's compute; batches up to N run whole (default: whole batches)");
     },
     cmd_bench},
    {"profile", "an end-to-end run, then a per-layer run: table and reports",
     [](Args& a) {
       run_options(a, false);
       report_options(a, true);
       a.value("--ncu-command",
               "instead: print the Nsight Compute command line that profiles only this layer's "
               "kernels (index or name)");
     },
     cmd_profile},
    {"roofline", "the device's measured ceilings (cached per device) and each layer's intensity and GFLOP/s",
     [](Args& a) {
       run_options(a, false);
       report_options(a, false);
       a.flag("--recalibrate", "measure the ceilings again instead of reading the cache");
     },
     cmd_roofline},
    {"memory", "activation and weight bytes per layer; what the prepared backend holds and what the driver saw",
     [](Args& a) {
       model_options(a);
       backend_option(a);
       batch_option(a);
       size_option(a);
       precision_option(a);
       report_options(a, false);
       device_option(a);
       cuda_option_set(a);
     },
     cmd_memory},
    {"eval", "top-1/top-5 accuracy over labelled images",
     [](Args& a) {
       a.value("--images", "DIR: one sub-folder per class (index or name), or the files of --list");
       a.value("--list", "FILE of 'FILENAME LABEL-INDEX' lines (paths relative to --images)");
       model_options(a);
       labels_option(a);
       backend_option(a);
       batch_option(a);
       a.value("--threads", "image loader threads (default min(4, cores))");
       a.output("--json", "write the result as JSON to this file ('-': standard output)");
       precision_option(a);
       device_option(a);
       cuda_option_set(a);
     },
     cmd_eval},
    {"compare", "profiles each backend, side by side, with each layer's output error against the first backend",
     [](Args& a) {
       run_options(a, true);
       report_options(a, true);
     },
     cmd_compare},
    {"runs", "report or session files side by side: every setting that differs, weighed, and the layers",
     [](Args& a) {
       a.positional("files", "report or session JSON files (mnv2 profile/compare --json, the app's Save session)");
       a.value("--baseline",
               "the run the others are compared with, 1-based over the files' runs (default: a "
               "session's pinned baseline, else 1)");
     },
     cmd_runs},
    {"lab", "the kernel lab: your CUDA kernel for one slot, compiled (NVRTC), checked per layer, timed beside ours",
     [](Args& a) {
       a.value("--slot", "depthwise (pointwise, stem, pool, classifier, block: listed by --list-slots)");
       a.value("--kernel", "FILE.cu: the kernel (its module's one __global__ function), see docs/KERNEL_LAB.md");
       a.value("--layers", "comma-separated layer indices of the slot to replace (default: all of them)");
       precision_option(a);
       device_option(a);
       batch_option(a);
       model_options(a);
       a.value("--input", "random (default, seed 1) or a raw float32 NCHW tensor file (one image or the batch)");
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
     },
     cmd_lab},
    {"lab-worker", "",
     [](Args& a) {
       a.value("--request", "the request file mnv2 lab wrote");
       a.value("--result-fd", "the pipe the result goes to");
     },
     cmd_lab_worker},
};

// The command between its output files: every one is checked before any work starts and the set is written
// (mnv2/output_files.h) only when the command succeeded. When an output goes to standard output, the
// command's text goes to standard error, so `--json - | jq` reads JSON only.
int run_command(const Command& command, Args& args) {
  args.reserve_outputs();
  if (args.outputs().writes_stdout()) {
    std::fflush(stdout);
    const int out = ::dup(1);
    if (out < 0 || ::dup2(2, 1) < 0)
      throw Error(std::string("cannot set standard output aside: ") + std::strerror(errno));
    args.outputs().move_stdout(out);
  }
  // A run that took an option from the environment says so first (on standard error where standard output is
  // the command's JSON).
  if (const std::string note = args.environment_note(); !note.empty()) {
    if (args.flag("--json"))
      std::cerr << note << "\n";
    else
      std::cout << note << "\n";
  }
  const int rc = command.run(args);
  std::fflush(stdout);
  std::cout.flush();
  if (rc == 0)
    for (const std::string& line : args.outputs().commit()) std::cerr << line << "\n";
  return rc;
}

int dispatch(int argc, char** argv) {
  CLI::App app(
      "mnv2: MobileNetV2 inference on our CUDA kernels, cuDNN/cuBLAS or the CPU; per-layer profiles, "
      "comparisons and reports.",
      "mnv2");
  app.set_version_flag("--version", std::string("mnv2 ") + MNV2_VERSION + " (commit " + MNV2_GIT_COMMIT + ")");
  app.require_subcommand(1);
  app.footer(kFooter);
  std::vector<std::pair<CLI::App*, std::unique_ptr<Args>>> parsed;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    if (std::string(c.name) == "lab-worker") sub->group("");  // hidden: started by 'mnv2 lab' only
    parsed.emplace_back(sub, std::make_unique<Args>(*sub));
    c.declare(*parsed.back().second);
    if (std::string(c.name) != "lab-worker") process_options(*parsed.back().second);
  }
  if (argc < 2) {
    std::cerr << app.help();
    return 2;
  }
  // An unknown first word is named as a command, not as a stray argument.
  const std::string first = argv[1];
  if (first.rfind('-', 0) != 0 && first != "help") {
    bool known = false;
    for (const Command& c : kCommands) known = known || first == c.name;
    if (!known) throw UsageError("unknown command '" + first + "' ('mnv2 --help' lists them)");
  }
  if (first == "help") {
    std::cout << app.help();
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // the help of the command asked about, on stdout, exit 0
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--batch: 1 required TEXT missing" and "--iters: At Most 1 required but received 2"; say it plainly.
    const std::string text = e.what();
    const std::string option = text.substr(0, text.find(':'));
    if (text.find("missing") != std::string::npos) throw UsageError(option + " needs a value");
    if (text.find("received") != std::string::npos) throw UsageError(option + " given twice");
    throw UsageError(text);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());  // unknown option, stray argument ("not expected"): exit 2
  }
  for (size_t i = 0; i < parsed.size(); ++i)
    if (parsed[i].first->parsed()) {
      // What the engine takes once per process (folders, caches, CUPTI), from the flags and the environment.
      set_process_settings(frontend::process_settings_of(parsed[i].second->options()));
      return run_command(kCommands[i], *parsed[i].second);
    }
  throw UsageError("no command given ('mnv2 --help' lists them)");
}

}  // namespace
}  // namespace mnv2::cli

// Idle OpenMP threads spin briefly, then sleep, unless the user chose a policy (set before libgomp starts).
MNV2_DEFAULT_OMP_WAIT_POLICY();

int main(int argc, char** argv) {
  try {
    return mnv2::cli::dispatch(argc, argv);
  } catch (const mnv2::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n(run 'mnv2 --help' for usage)\n";
    return 2;
  } catch (const mnv2::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
