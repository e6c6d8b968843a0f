// The kernel lab study (mnv2/lab.h): slots, where the slot headers are, NVRTC compilation with its cache and
// diagnostics, and the parent's side of a run: compile here, then check and time in a worker process under a
// time-out (lab_worker.cpp is the worker's side).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>

#include "gpu/plugin_api.h"
#include "mnv2/device.h"
#include "mnv2/error.h"
#include "mnv2/exit_codes.h"
#include "mnv2/input_files.h"
#include "mnv2/lab.h"
#include "mnv2/model_lookup.h"
#include "mnv2/options.h"
#include "mnv2/output_files.h"
#include "mnv2/private_cache.h"
#include "studies/lab_cache.h"
#include "util/sha256.h"

namespace mnv2 {
namespace {

namespace fs = std::filesystem;

// ---- slots -----------------------------------------------------------------------------------------------------

std::string read_text(const std::string& path, const char* what) {
  const InputBudget budget{what, 16 * inputs::kMiB};
  return read_input_file(path, budget);
}

// A fresh folder of this process's own (mkdtemp: 0700, a name nobody held), in the temporary folder.
fs::path private_temp_dir() {
  std::string name = (fs::temp_directory_path() / "mnv2-lab-XXXXXX").string();
  if (::mkdtemp(name.data()) == nullptr)
    throw Error("cannot create a private folder in " + fs::temp_directory_path().string() + ": " +
                std::strerror(errno));
  return name;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// The first __global__ function's name in `source` (comments not stripped: display only).
std::string first_kernel_name(const std::string& source) {
  static const std::regex kGlobal(
      R"(__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\()");
  std::smatch m;
  return std::regex_search(source, m, kGlobal) ? m[1].str() : std::string();
}

std::mutex g_lab_mutex;
std::map<std::string, LabKernelSpec>& lab_registry() {
  static std::map<std::string, LabKernelSpec> registry;
  return registry;
}

}  // namespace

const std::vector<LabSlot>& lab_slots() {
  static const std::vector<LabSlot> slots = {
      {"depthwise", "depthwise 3x3 convolution (+bias, clip/ReLU6), NHWC", "mnv2_lab/depthwise.h",
       "mnv2_lab::DepthwiseParams",
       "one work item = tile a channels x tile b output columns of one output row of one image; items = batch * "
       "out_h * ceil(out_w / b) * ceil(channels / a); grid.x = ceil(items / threads per block)",
       ""},
      {"pointwise", "1x1 convolution as a GEMM on NHWC maps (+bias, clip/ReLU6, residual add)", "mnv2_lab/pointwise.h",
       "mnv2_lab::PointwiseParams",
       "one work item = tile a output channels x tile b pixels; items = ceil(out_channels / a) * ceil(pixels / b); "
       "grid.x = ceil(items / threads per block)",
       ""},
      {"stem",
       "the convolution reading the network input (the stem's 3x3 stride 2, +bias, clip/ReLU6), NCHW float32 in, NHWC "
       "out",
       "mnv2_lab/stem.h", "mnv2_lab::StemParams",
       "one work item = tile a output channels x tile b output columns of one output row of one image; items = "
       "batch * out_h * ceil(out_w / b) * ceil(out_channels / a); grid.x = ceil(items / threads per block)",
       ""},
      {"pool", "global average pool (mean over each channel's map), NHWC", "mnv2_lab/pool.h", "mnv2_lab::PoolParams",
       "one work item = tile a channels of one image (tile b not used); items = batch * ceil(channels / a); grid.x = "
       "ceil(items / threads per block)",
       ""},
      {"classifier", "the classifier (Linear as a GEMM, +bias)", "mnv2_lab/classifier.h", "mnv2_lab::ClassifierParams",
       "one work item = tile a output features x tile b images; items = ceil(out_features / a) * ceil(batch / b); "
       "grid.x = ceil(items / threads per block)",
       ""},
      {"block", "a whole inverted-residual block", "", "", "",
       "the lab runs the unfused plan, where each layer of a block is its own step (the depthwise and pointwise "
       "slots replace those); a whole-block slot needs the planner's whole-block step (--cuda-fusion block) with a "
       "slot header and a lowering hook of its own, which the lab does not have yet"},
  };
  return slots;
}

const LabSlot& lab_slot(const std::string& name) {
  std::vector<std::string> names;
  for (const LabSlot& s : lab_slots()) {
    if (s.name == name) {
      if (!s.why_not.empty()) throw UsageError("lab slot '" + name + "': " + s.why_not);
      return s;
    }
    names.push_back(s.name);
  }
  throw UsageError("unknown lab slot '" + name + "' (choose " + join(names, ", ") + ")");
}

std::vector<int> lab_slot_layers(const Model& model, const std::string& slot) {
  return lab_slot_layers(model.layers, slot);
}

std::vector<int> lab_slot_layers(const std::vector<Layer>& topology, const std::string& slot) {
  std::vector<int> layers;
  for (const Layer& l : topology) {
    // As the cuda planner's fast variant picks its kernels (planner.cpp, plan_fast_conv, plan_pool, plan_linear).
    if (l.kind == LayerKind::GlobalAveragePool) {
      if (slot == "pool") layers.push_back(l.index);
      continue;
    }
    if (l.kind == LayerKind::Linear) {
      if (slot == "classifier") layers.push_back(l.index);
      continue;
    }
    if (l.kind != LayerKind::Conv2d || l.inputs.empty()) continue;
    const ConvParams& c = l.conv;
    if (l.inputs.front() == kNetworkInput) {  // the direct convolution on the NCHW input, whatever its shape
      if (slot == "stem") layers.push_back(l.index);
      continue;
    }
    if (slot == "depthwise" && c.depthwise() && c.kernel_h == 3 && c.kernel_w == 3 && c.dilation_h == 1 &&
        c.dilation_w == 1)
      layers.push_back(l.index);
    if (slot == "pointwise" && c.pointwise() && c.stride_h == 1 && c.stride_w == 1 && c.pad_top == 0 &&
        c.pad_left == 0 && c.pad_bottom == 0 && c.pad_right == 0)
      layers.push_back(l.index);
  }
  return layers;
}

std::string lab_dir() {
  std::vector<fs::path> candidates;
  if (const std::string& d = process_settings().lab_dir; !d.empty()) candidates.emplace_back(d);  // lab-dir option
  const fs::path exe = executable_dir();
  candidates.push_back(exe.parent_path() / "share" / "mnv2-profiler" / "lab");  // installed, or the device bundle
#ifdef MNV2_SOURCE_DIR
  candidates.push_back(fs::path(MNV2_SOURCE_DIR) / "kernels" / "lab");  // a build tree
#endif
  std::error_code ec;
  std::vector<std::string> tried;
  for (const fs::path& c : candidates) {
    if (fs::exists(c / "include" / "mnv2_lab" / "lab.h", ec)) return fs::absolute(c, ec).string();
    tried.push_back(c.string());
  }
  throw Error("the kernel lab's slot headers (include/mnv2_lab/lab.h) are not installed; looked in " +
              join(tried, ", ") + " (MNV2_LAB_DIR names another folder)");
}

std::string lab_template(const std::string& slot) {
  lab_slot(slot);
  return read_text((fs::path(lab_dir()) / "templates" / (slot + ".cu")).string(), "lab template");
}

void register_lab_kernel(const LabKernelSpec& spec) {
  std::lock_guard<std::mutex> lock(g_lab_mutex);
  lab_registry()[spec.name] = spec;
}

std::optional<LabKernelSpec> registered_lab_kernel(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_lab_mutex);
  auto it = lab_registry().find(name);
  if (it == lab_registry().end()) return std::nullopt;
  return it->second;
}

// ---- diagnostics -------------------------------------------------------------------------------------------------

std::vector<LabDiagnostic> parse_nvrtc_log(const std::string& log) {
  // "FILE(LINE): error: TEXT", "FILE(LINE): warning #177-D: TEXT", "FILE(LINE): catastrophic error: TEXT"; EDG
  // prints the source line and a caret under the column after a diagnostic.
  static const std::regex kLine(R"(^(.+?)\((\d+)\): (catastrophic error|error|warning|remark)(?: #[\w-]+)?: (.*)$)");
  std::vector<std::string> lines;
  std::stringstream ss(log);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  std::vector<LabDiagnostic> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, kLine)) continue;
    LabDiagnostic d;
    d.file = m[1].str();
    d.line = std::atoi(m[2].str().c_str());
    const std::string kind = m[3].str();
    d.severity = kind == "warning" || kind == "remark" ? "warning" : "error";
    d.message = m[4].str();
    // The excerpt is the source line indented by two spaces, the caret line points at the column.
    if (i + 2 < lines.size()) {
      const std::string& caret = lines[i + 2];
      const size_t at = caret.find('^');
      if (at != std::string::npos && caret.find_first_not_of(' ') == at && at >= 2) d.column = static_cast<int>(at) - 1;
    }
    out.push_back(d);
  }
  return out;
}

// ---- compilation -------------------------------------------------------------------------------------------------

LabCompileResult lab_compile(const LabCompileConfig& config) {
  if (!config.arch.empty() && !std::regex_match(config.arch, std::regex(R"(sm_\d{2,3}[af]?)")))
    throw UsageError("architecture '" + config.arch + "' is not of the form sm_XX (e.g. sm_90)");
  const gpu_plugin::Api* gpu = gpu_plugin::api();
  if (gpu == nullptr || gpu->lab_nvrtc_compile == nullptr)
    throw Error("the kernel lab needs NVRTC from the GPU plugin: " + gpu_plugin::status().problem);
  LabCompileResult r;
  r.kernel_name = first_kernel_name(config.source);
  gpu_plugin::LabNvrtcOutput probe;
  gpu->lab_nvrtc_compile(gpu_plugin::LabNvrtcJob{}, probe);  // the version and the toolkit's include folder
  if (!probe.error.empty()) throw Error("NVRTC: " + probe.error);
  r.nvrtc_version = probe.version;

  r.arch = config.arch;
  if (r.arch.empty()) {
    const CudaEnvironment& env = cuda_environment();
    if (env.devices.empty())
      throw UsageError("no GPU to compile for (" + env.why_none + "): give the architecture, e.g. --arch sm_90");
    const GpuDevice& d = gpu_device(config.device);
    r.arch = "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor);
  }
  if (!std::regex_match(r.arch, std::regex(R"(sm_\d{2,3}[af]?)")))
    throw UsageError("architecture '" + r.arch + "' is not of the form sm_XX (e.g. sm_90)");

  std::string toolkit = probe.toolkit_include;
  std::error_code ec;
  // $CUDA_PATH or $CUDA_HOME, as the front end read them.
  if (const std::string& d = process_settings().cuda_toolkit;
      toolkit.empty() && !d.empty() && fs::exists(fs::path(d) / "include" / "cuda_fp16.h", ec))
    toolkit = (fs::path(d) / "include").string();
  if (toolkit.empty() && fs::exists("/usr/local/cuda/include/cuda_fp16.h", ec)) toolkit = "/usr/local/cuda/include";
  if (toolkit.empty())
    throw Error(
        "the CUDA toolkit's headers (cuda_fp16.h) were not found beside NVRTC's library, in $CUDA_PATH or "
        "/usr/local/cuda/include; NVRTC needs them");

  const fs::path dir = lab_dir();
  r.options = {"-arch=" + r.arch, "-lineinfo", "-std=c++17", "-I" + (dir / "include").string(), "-I" + toolkit};

  // The key: source, options, NVRTC's version, every slot header's text, the architecture (in the options).
  std::string keyed = config.source + '\0' + join(r.options, "\n") + '\0' + r.nvrtc_version + '\0';
  std::vector<fs::path> headers;
  for (const auto& e : fs::directory_iterator(dir / "include" / "mnv2_lab", ec)) headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  for (const fs::path& h : headers) keyed += h.filename().string() + '\0' + read_text(h.string(), "slot header") + '\0';
  r.key = sha256_hex(keyed);

  // The private cache (checked: this user's, 0700, no link followed); an entry is a hit only when its CUBIN hashes
  // to what lab_compile stored beside it.
  const std::string cache_path = !config.cache_dir.empty()
                                     ? config.cache_dir
                                     : (cache_dir().empty() ? std::string() : (fs::path(cache_dir()) / "lab").string());
  const PrivateCache cache = PrivateCache::open(cache_path);
  if (config.use_cache) {
    if (std::optional<lab_cache::Entry> hit = lab_cache::find(cache, r.key)) {
      r.ok = true;
      r.cached = true;
      r.cubin_path = hit->cubin_path;
      r.log = hit->log;
      r.diagnostics = parse_nvrtc_log(r.log);
      return r;
    }
  }
  gpu_plugin::LabNvrtcOutput out;
  const auto start = std::chrono::steady_clock::now();
  gpu->lab_nvrtc_compile(gpu_plugin::LabNvrtcJob{config.source, config.file_name, r.options}, out);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.error.empty() && out.log.empty()) throw Error("NVRTC: " + out.error);
  r.log = out.log;
  r.diagnostics = parse_nvrtc_log(r.log);
  r.ok = out.ok;
  if (!r.ok) return r;
  if (cache.usable()) {
    r.cubin_path = lab_cache::store(cache, r.key, out.cubin, r.log).cubin_path;
  } else {
    // No usable cache (its note says why): the module goes to a fresh private folder of its own.
    const fs::path dir = private_temp_dir();
    write_output_file((dir / (r.key + ".cubin")).string(), out.cubin);
    r.cubin_path = (dir / (r.key + ".cubin")).string();
  }
  return r;
}

int lab_exit_code(const LabResult& r) {
  if (r.status == "passed") return kExitSuccess;
  if (r.status == "compile_error") return kExitLabCompileError;
  if (r.status == "crashed" || r.status == "timeout") return kExitLabCrashed;
  return kExitError;
}

// ---- the parent's run ----------------------------------------------------------------------------------------------

namespace {

std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return std::string("signal ") + std::to_string(sig) + (name != nullptr ? std::string(" (SIG") + name + ")" : "");
}

// Runs the worker: `program lab-worker --request REQUEST --result-fd N`, its stdout and stderr the caller's.
// Returns the result it wrote, or one that says how it died or that it was killed at the time-out.
LabResult run_worker(const LabConfig& c, const std::string& request, LabResult base, const LabProgress& progress) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("lab: pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("lab: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    const int fd = ::dup(fds[1]);  // without O_CLOEXEC: the worker writes its result here
    const std::string fd_text = std::to_string(fd);
    std::vector<std::string> args = {c.program, "lab-worker", "--request", request, "--result-fd", fd_text};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(c.program.c_str(), argv.data());
    std::fprintf(stderr, "lab: cannot start the worker %s: %s\n", c.program.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string bytes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(c.timeout_s);
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buffer[65536];
    const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the worker closed its end (it ended)
    bytes.append(buffer, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  if (timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    base.status = "timeout";
    base.message = "the worker did not finish within " + std::to_string(static_cast<int>(c.timeout_s)) +
                   " s and was killed (a kernel that hangs, or a run longer than --timeout)";
    if (progress) progress(base.message);
    return base;
  }
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!bytes.empty()) {
    try {
      LabResult r = read_lab_result(bytes);
      r.compile = base.compile;
      r.kernel_file = base.kernel_file;
      r.source_sha256 = base.source_sha256;
      r.compute_sanitizer_command = base.compute_sanitizer_command;
      r.ncu_command = base.ncu_command;
      return r;
    } catch (const Error& e) {
      base.message = std::string("the worker's result could not be read: ") + e.what();
    }
  }
  base.status = "crashed";
  if (WIFSIGNALED(status))
    base.message = "the worker died with " + signal_text(WTERMSIG(status)) + " before it wrote a result";
  else if (WIFEXITED(status))
    base.message = "the worker exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result" +
                   (base.message.empty() ? "" : ": " + base.message);
  return base;
}

}  // namespace

LabResult run_lab(const LabConfig& c, const LabProgress& progress) {
  const LabSlot& slot = lab_slot(c.slot);
  if (c.kernel_file.empty()) throw UsageError("lab: --kernel FILE.cu is required");
  std::error_code ec;
  // What the path is, said as such: a FIFO or /dev/null is "not a regular file", not "not found".
  if (struct stat st{}; ::stat(c.kernel_file.c_str(), &st) != 0) {
    const int err = errno;
    throw UsageError(err == ENOENT ? "lab: kernel file not found: " + c.kernel_file
                                   : "lab: kernel file " + c.kernel_file + ": " + std::strerror(err));
  } else if (!S_ISREG(st.st_mode)) {
    throw UsageError("lab: kernel file " + c.kernel_file + " is " + file_kind(st.st_mode) + ", not a regular file");
  }
  if (c.batch < 1) throw UsageError("lab: --batch must be positive");
  if (c.timeout_s <= 0) throw UsageError("lab: --timeout must be positive");
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };

  LabResult r;
  r.slot = slot.name;
  r.kernel_file = fs::absolute(c.kernel_file, ec).string();
  r.precision = to_string(c.precision);
  r.batch = c.batch;
  r.grid_rule = slot.grid_rule;
  const std::string source = read_text(c.kernel_file, "kernel source");
  r.source_sha256 = sha256_hex(source);

  // The same run under the tools: the user's arguments, the check only (no timing), a generous time-out.
  std::string args;
  for (const std::string& a : c.argv) args += " " + quote(a);
  std::string check_args = " lab --slot " + slot.name + " --kernel " + quote(r.kernel_file) + " --precision " +
                           r.precision + " --batch " + std::to_string(c.batch);
  if (!c.layers.empty()) {
    std::string list;
    for (int l : c.layers) list += (list.empty() ? "" : ",") + std::to_string(l);
    check_args += " --layers " + list;
  }
  if (!c.model_path.empty()) check_args += " --model " + quote(fs::absolute(c.model_path, ec).string());
  // --report-api-errors no: the lab asks for optional symbols (MNV2_LAB_SHARED, ...) the kernel may not declare;
  // those "named symbol not found" answers are API errors memcheck would list beside real faults.
  r.compute_sanitizer_command = "compute-sanitizer --tool memcheck --report-api-errors no --target-processes all " +
                                quote(c.program) + check_args + " --no-time --timeout 600";
  r.ncu_command = "ncu --clock-control none --target-processes all --kernel-name regex:'" +
                  (first_kernel_name(source).empty() ? std::string(".*") : first_kernel_name(source)) +
                  "' --launch-count 5 -o lab-%p " + quote(c.program) + check_args + " --no-time --timeout 600";

  say("compiling " + c.kernel_file + " (slot " + slot.name + ") with NVRTC");
  LabCompileConfig cc;
  cc.source = source;
  cc.file_name = fs::path(c.kernel_file).filename().string();
  cc.arch = c.arch;
  cc.device = c.device;
  LabCompileResult compiled = lab_compile(cc);
  r.kernel_name = compiled.kernel_name;
  for (const LabDiagnostic& d : compiled.diagnostics)
    say("  " + d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + ": " + d.severity + ": " +
        d.message);
  r.compile = compiled;
  if (!compiled.ok) {
    r.status = "compile_error";
    int errors = 0;
    const LabDiagnostic* first = nullptr;
    for (const LabDiagnostic& d : compiled.diagnostics)
      if (d.severity == "error" && errors++ == 0) first = &d;
    r.message = first != nullptr
                    ? std::to_string(errors) + " compile error(s); first: " + first->file + ":" +
                          std::to_string(first->line) + ":" + std::to_string(first->column) + ": " + first->message
                    : "NVRTC refused the kernel (see the log)";
    return r;
  }
  say(std::string("compiled for ") + compiled.arch + (compiled.cached ? " (cache hit)" : "") + " in " +
      std::to_string(compiled.seconds).substr(0, 5) + " s");
  if (c.compile_only) {
    r.status = "passed";
    r.message = "compiled (--compile-only: not checked, not timed)";
    return r;
  }

  // The worker's request: everything it needs, nothing it must find again.
  const fs::path run_dir = private_temp_dir();  // fresh and 0700: nobody else can plant the request
  json::Json req = json::Json::object();
  req["slot"] = slot.name;
  req["name"] = fs::path(c.kernel_file).stem().string();
  req["cubin"] = compiled.cubin_path;
  req["kernel_name"] = compiled.kernel_name;
  req["layers"] = c.layers;
  req["precision"] = r.precision;
  req["batch"] = c.batch;
  req["device"] = c.device;
  req["input"] = c.input;
  req["model"] = c.model_path;
  req["runs"] = c.runs;
  req["no_time"] = c.no_time;
  req["report_json"] = c.report_json;
  req["report_csv"] = c.report_csv;
  const std::string request = (run_dir / "request.json").string();
  write_output_file(request, req.dump(2));
  say("checking in a worker process (time-out " + std::to_string(static_cast<int>(c.timeout_s)) + " s)");
  LabResult done = run_worker(c, request, r, progress);
  fs::remove_all(run_dir, ec);
  return done;
}

}  // namespace mnv2
