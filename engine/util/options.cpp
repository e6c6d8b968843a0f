// The run-option table and the precedence rule (mnv2/options.h).
#include "mnv2/options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "mnv2/error.h"
#include "mnv2/option_values.h"
#include "mnv2/sweep.h"

namespace mnv2 {

namespace {

constexpr const char* kGpu[] = {"cudnn", "cuda"};

std::vector<std::string> gpu_backends() { return {kGpu[0], kGpu[1]}; }

OptionSpec choice(std::string name, std::vector<std::string> choices, std::string def, std::string help,
                  std::vector<std::string> backends = {}, std::string env = {}) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = OptionType::choice;
  s.choices = std::move(choices);
  s.default_value = std::move(def);
  s.help = std::move(help);
  s.backends = std::move(backends);
  s.env = std::move(env);
  return s;
}

OptionSpec integer(std::string name, long long lo, long long hi, std::string def, std::string help,
                   std::vector<std::string> backends = {}, std::string env = {}) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = OptionType::integer;
  s.min = lo;
  s.max = hi;
  s.default_value = std::move(def);
  s.help = std::move(help);
  s.backends = std::move(backends);
  s.env = std::move(env);
  return s;
}

OptionSpec other(std::string name, OptionType type, std::string help, std::vector<std::string> backends = {},
                 std::string env = {}) {
  OptionSpec s;
  s.name = std::move(name);
  s.type = type;
  s.help = std::move(help);
  s.backends = std::move(backends);
  s.env = std::move(env);
  return s;
}

// The accepted values of an enumerated option, from the one list the parsers accept (mnv2/option_values.h).
template <typename Values>
std::vector<std::string> names(const Values& values) {
  std::vector<std::string> out;
  for (auto v : values) out.emplace_back(to_string(v));
  return out;
}

std::vector<OptionSpec> make_table() {
  std::vector<OptionSpec> t;
  t.push_back(
      choice("backend", {"cpu", "cpu-ref", "cudnn", "cuda"}, "cpu",
             "cpu (oneDNN), cpu-ref (the float32 reference), cudnn (NVIDIA's libraries) or cuda (our kernels)"));
  t.push_back(integer("device", 0, 1023, "0",
                      "the GPU the GPU backends run on: its CUDA ordinal among the visible GPUs (mnv2 info lists them)",
                      gpu_backends()));
  t.push_back(
      choice("precision", names(kPrecisions), "fp32", "the GPU backends' arithmetic; the cpu backends run fp32 only"));
  t.push_back(integer("batch", 1, 65536, "1", "images per forward pass"));
  t.push_back(other("input-size", OptionType::size,
                    "HxW (or one side) of random and tensor inputs; "
                    "unset: the model's"));
  t.push_back(integer("warmup", 0, 1000000, "10", "untimed runs before each timed phase"));
  t.push_back(integer("iters", 1, 1000000, "100", "timed runs in each phase"));
  t.push_back(choice("timing", {"event", "cupti"}, "event",
                     "the GPU backends' per-layer timer: cudaEvent pairs or CUPTI kernel records", gpu_backends()));
  t.push_back(choice("exec", {"layers", "graph"}, "layers",
                     "per-layer phase: step by step, or CUPTI inside CUDA graph replays", gpu_backends()));
  t.push_back(integer("threads", 1, 4096, "0", "the cpu backends' host threads; unset (0): one per core",
                      {"cpu", "cpu-ref"}, "MNV2_CPU_THREADS"));
  t.push_back(choice("cuda-variant", names(kCudaVariants), "fast",
                     "cuda backend: tensor-core GEMMs and fused steps, or the v1 kernels", {"cuda"},
                     "MNV2_CUDA_VARIANT"));
  t.push_back(choice("cuda-fusion", names(kCudaFusions), "auto",
                     "cuda backend: auto (the plan measured fastest on this GPU: `mnv2 plan` says which and why), "
                     "none (a step per layer), expand_dw (fp32 expansion + depthwise), block (the stem + first "
                     "block and each inverted-residual block in one kernel) or block_split (block, with the fused "
                     "blocks the GPU's measured table lists split over more CTAs)",
                     {"cuda"}, "MNV2_CUDA_FUSE"));
  t.push_back(choice("cuda-graph", names(kCudaGraphs), "auto",
                     "cuda backend: replay one CUDA graph (auto: unless steps are timed)", {"cuda"},
                     "MNV2_CUDA_GRAPH"));
  t.push_back(other("cuda-gemm-tile", OptionType::text,
                    "cuda backend: force a GEMM tile, e.g. 128x64; unset: the "
                    "planner's",
                    {"cuda"}, "MNV2_CUDA_GEMM_TILE"));
  t.push_back(choice(
      "cuda-pdl", names(kCudaPdls), "auto",
      "cuda backend: Programmatic Dependent Launch between the graph's kernels (auto: where sm_90+ "
      "code runs on an sm_90+ GPU, at batch 1, in fp16 up to 64); each kernel loads its weights before waiting for the "
      "previous one (late_weights: on, the weights after the wait)",
      {"cuda"}, "MNV2_CUDA_PDL"));
  t.push_back(choice("cuda-splitk", names(kCudaSplitKs), "separate",
                     "cuda backend: split-K partial sums added by a separate kernel, by the tile's last block, or by "
                     "the tile's thread-block cluster through distributed shared memory (sm_90; tensor-core GEMMs)",
                     {"cuda"}, "MNV2_CUDA_SPLITK"));
  t.push_back(choice("cudnn-variant", names(kCudnnVariants), "fused",
                     "cudnn backend: graph-API conv+bias+ReLU6+add, autotuned, or a legacy call per layer", {"cudnn"}));
  t.push_back(choice("cudnn-graph", names(kCudnnGraphs), "auto",
                     "cudnn backend: replay a CUDA graph (auto: unless steps are timed)", {"cudnn"}));
  t.push_back(choice("cudnn-layout", names(kCudnnLayouts), "auto",
                     "cudnn backend, fused: activation layout (auto: NHWC in tf32 and fp16)", {"cudnn"}));
  // Where files are: not part of what a run measured.
  OptionSpec model =
      other("model", OptionType::path,
            "the ONNX model; unset: a weights/ folder beside the program, then the XDG data folders", {}, "MNV2_MODEL");
  model.per_run = false;
  t.push_back(model);
  OptionSpec cache = other("cache-dir", OptionType::path,
                           "the folder of the caches (roofline ceilings, cuDNN plans, kernel lab builds); unset: "
                           "$XDG_CACHE_HOME/mnv2-profiler or ~/.cache/mnv2-profiler",
                           {}, "MNV2_CACHE_DIR");
  cache.per_run = false;
  t.push_back(cache);
  OptionSpec plans =
      other("cudnn-plan-cache", OptionType::path,
            "cudnn backend: the file of tuned plans, or off; unset: cudnn_plans.json in the cache folder", {"cudnn"},
            "MNV2_CUDNN_PLAN_CACHE");
  plans.per_run = false;
  t.push_back(plans);
  OptionSpec cupti = choice("cupti", {"auto", "off"}, "auto",
                            "CUPTI for the GPU timers: auto (used where it works) or off (events instead, with a "
                            "warning)",
                            gpu_backends(), "MNV2_DISABLE_CUPTI");
  cupti.from_env = [](const std::string& v) { return v == "0" ? std::string("auto") : std::string("off"); };
  cupti.per_run = false;
  t.push_back(cupti);
  OptionSpec lab = other("lab-dir", OptionType::path,
                         "the kernel lab's slot headers and templates; unset: share/mnv2-profiler/lab beside the "
                         "program",
                         {"cuda"}, "MNV2_LAB_DIR");
  lab.per_run = false;
  t.push_back(lab);
  return t;
}

std::string where(const OptionSpec& spec, OptionSource source) {
  switch (source) {
    case OptionSource::flag:
      return "--" + spec.name;
    case OptionSource::environment:
      return "$" + spec.env;
    case OptionSource::saved:
      return "saved setting " + spec.name;
    default:
      return spec.name;
  }
}

// The value as the option holds it (checked); throws UsageError naming where it came from.
std::string checked(const OptionSpec& spec, const std::string& value, OptionSource source) {
  const std::string from = where(spec, source);
  // The default as the program holds it ("0" threads: unset) is valid where the program set it, not as a flag
  // or a variable a user gave.
  if (value == spec.default_value && source != OptionSource::flag && source != OptionSource::environment) return value;
  switch (spec.type) {
    case OptionType::choice: {
      std::string key = value;  // case-insensitive, as the parsers of mnv2/backend.h
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
      if (std::find(spec.choices.begin(), spec.choices.end(), key) == spec.choices.end()) {
        std::string names;
        for (const std::string& c : spec.choices) names += (names.empty() ? "" : ", ") + c;
        throw UsageError(from + " must be one of " + names + ", got '" + value + "'");
      }
      return key;
    }
    case OptionType::integer: {
      size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (value.empty() || used != value.size()) throw UsageError(from + " must be an integer, got '" + value + "'");
      if (n < spec.min || n > spec.max)
        throw UsageError(from + " must be in " + std::to_string(spec.min) + ".." + std::to_string(spec.max) + ", got " +
                         value);
      return std::to_string(n);
    }
    case OptionType::size:
      if (!value.empty()) parse_input_size(value);  // throws UsageError naming the text
      return value;
    case OptionType::text:
    case OptionType::path:
      if (value.find('\0') != std::string::npos) throw UsageError(from + " holds a NUL character");
      return value;
  }
  return value;
}

}  // namespace

const char* to_string(OptionSource s) {
  switch (s) {
    case OptionSource::unknown:
      return "unknown";
    case OptionSource::default_value:
      return "default";
    case OptionSource::saved:
      return "saved";
    case OptionSource::environment:
      return "environment";
    case OptionSource::flag:
      return "flag";
  }
  return "?";
}

OptionSource parse_option_source(const std::string& text) {
  for (OptionSource s : {OptionSource::unknown, OptionSource::default_value, OptionSource::saved,
                         OptionSource::environment, OptionSource::flag})
    if (text == to_string(s)) return s;
  throw Error("unknown option source '" + text + "' (unknown, default, saved, environment or flag)");
}

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec* find_option(std::string_view name) {
  for (const OptionSpec& s : option_table())
    if (s.name == name) return &s;
  return nullptr;
}

bool honours(const OptionSpec& spec, const std::string& backend) {
  return spec.backends.empty() || std::find(spec.backends.begin(), spec.backends.end(), backend) != spec.backends.end();
}

OptionValues::OptionValues() : OptionValues(std::map<std::string, std::string>{}) {}

OptionValues::OptionValues(const std::map<std::string, std::string>& command_defaults) {
  for (const OptionSpec& s : option_table())
    values_[s.name] = OptionValue{s.default_value, OptionSource::default_value};
  for (const auto& [name, value] : command_defaults) {
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr) throw Error("no run option '" + name + "'");
    values_[name] = OptionValue{checked(*spec, value, OptionSource::default_value), OptionSource::default_value};
  }
}

void OptionValues::offer(const std::string& name, const std::string& value, OptionSource source) {
  const OptionSpec* spec = find_option(name);
  if (spec == nullptr) throw Error("no run option '" + name + "'");
  OptionValue& held = values_[name];
  const std::string v = checked(*spec, value, source);  // a weaker bad value is still an error: it was asked for
  if (static_cast<int>(source) < static_cast<int>(held.source)) return;
  held = OptionValue{v, source};
}

void OptionValues::assign(const std::string& name, const std::string& value, OptionSource source) {
  const OptionSpec* spec = find_option(name);
  if (spec == nullptr) throw Error("no run option '" + name + "'");
  values_[name] = OptionValue{checked(*spec, value, source), source};
}

void OptionValues::offer_environment(const std::function<const char*(const char*)>& lookup) {
  for (const OptionSpec& s : option_table()) {
    if (s.env.empty()) continue;
    const char* v = lookup(s.env.c_str());
    if (v == nullptr || *v == '\0') continue;
    offer(s.name, s.from_env ? s.from_env(v) : std::string(v), OptionSource::environment);
  }
}

const OptionValue& OptionValues::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error("no run option '" + name + "'");
  return it->second;
}

long long OptionValues::integer(const std::string& name) const {
  const std::string& v = value(name);
  return v.empty() ? 0 : std::stoll(v);
}

std::vector<std::string> OptionValues::from_environment() const {
  std::vector<std::string> out;
  for (const OptionSpec& s : option_table()) {
    const OptionValue& v = at(s.name);
    if (v.source == OptionSource::environment) out.push_back(s.name + "=" + v.value + " ($" + s.env + ")");
  }
  return out;
}

PrepareConfig prepare_config_of(const OptionValues& values, std::pair<int, int> model_hw) {
  PrepareConfig c;
  c.batch = static_cast<int>(values.integer("batch"));
  auto [h, w] = values.value("input-size").empty() ? model_hw : parse_input_size(values.value("input-size"));
  c.height = h;
  c.width = w;
  c.precision = parse_precision(values.value("precision"));
  c.cpu_threads = static_cast<int>(values.integer("threads"));
  c.device = static_cast<int>(values.integer("device"));
  c.cuda.variant = parse_cuda_variant(values.value("cuda-variant"));
  c.cuda.fusion = parse_cuda_fusion(values.value("cuda-fusion"));
  c.cuda.graph = parse_cuda_graph(values.value("cuda-graph"));
  c.cuda.gemm_tile = values.value("cuda-gemm-tile");
  c.cuda.pdl = parse_cuda_pdl(values.value("cuda-pdl"));
  c.cuda.splitk = parse_cuda_splitk(values.value("cuda-splitk"));
  c.cudnn.variant = parse_cudnn_variant(values.value("cudnn-variant"));
  c.cudnn.graph = parse_cudnn_graph(values.value("cudnn-graph"));
  c.cudnn.layout = parse_cudnn_layout(values.value("cudnn-layout"));
  return c;
}

std::vector<std::string> option_flags(const OptionValues& values, const std::string& backend,
                                      const std::set<std::string>& skip) {
  std::vector<std::string> out;
  for (const OptionSpec& s : option_table()) {
    if (!s.per_run || !honours(s, backend) || s.name == "backend" || skip.count(s.name)) continue;
    const OptionValue& v = values.at(s.name);
    if (v.value.empty() || (v.value == s.default_value && s.env.empty())) continue;
    out.push_back("--" + s.name);
    out.push_back(v.value);
  }
  return out;
}

std::string environment_note(const OptionValues& values) {
  const std::vector<std::string> env = values.from_environment();
  if (env.empty()) return {};
  std::string out = "options from the environment: ";
  for (size_t i = 0; i < env.size(); ++i) out += (i ? ", " : "") + env[i];
  return out;
}

namespace {
ProcessSettings& settings_slot() {
  static ProcessSettings settings;
  return settings;
}
}  // namespace

void set_process_settings(const ProcessSettings& settings) { settings_slot() = settings; }
const ProcessSettings& process_settings() { return settings_slot(); }

}  // namespace mnv2
