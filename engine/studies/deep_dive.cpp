// The deep-dive study (mnv2/deep_dive.h): Nsight Compute run as a child process on one step's kernels, its report
// imported as CSV pages and read by metric name.
#include "mnv2/deep_dive.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

#include "mnv2/backend.h"
#include "mnv2/error.h"
#include "mnv2/json_io.h"
#include "mnv2/ncu.h"
#include "remote/process.h"

namespace mnv2 {
namespace {

namespace fs = std::filesystem;
using remote::Child;
using remote::Clock;

// A fresh folder of this process's own (mkdtemp: 0700, a name nobody held) for ncu's report; removed on every path.
class PrivateDir {
 public:
  PrivateDir() {
    std::string name = (fs::temp_directory_path() / "mnv2-ncu-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      throw Error("cannot create a private folder in " + fs::temp_directory_path().string() + ": " +
                  std::strerror(errno));
    path_ = name;
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string not_found(const std::string& ncu, const std::string& why) {
  return "Nsight Compute's ncu cannot be started (" + ncu + ": " + why +
         "): install Nsight Compute (the CUDA toolkit has it in /usr/local/cuda/bin) and put ncu on PATH, or name it";
}

Child start(const std::vector<std::string>& argv) {
  remote::SpawnOptions o;
  o.pipe_stdin = false;
  o.null_stdin = true;
  try {
    return Child::spawn(argv, o);
  } catch (const Error& e) {
    // spawn's message: "cannot start PROGRAM: strerror"
    const std::string what = e.what();
    const size_t colon = what.rfind(": ");
    throw Error(not_found(argv.front(), colon == std::string::npos ? what : what.substr(colon + 2)));
  }
}

// A captured ncu call (an import, the version): its standard output, or Error with its last line.
std::string capture(const std::vector<std::string>& argv, int timeout_s, const char* what) {
  const remote::Captured c = remote::run_captured(argv, timeout_s, size_t{512} << 20);
  if (c.code == -1) throw Error(not_found(argv.front(), c.err));
  if (c.code != 0) {
    std::string last = c.err.empty() ? c.out : c.err;
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    if (const size_t nl = last.rfind('\n'); nl != std::string::npos) last.erase(0, nl + 1);
    throw Error(std::string("ncu ") + what +
                (c.code == 124 ? " ran out of time" : " failed (exit status " + std::to_string(c.code) + ")") +
                (last.empty() ? "" : ": " + last));
  }
  return c.out;
}

// The profiling run's argv: the program named, clocks left alone (durations then match our own timings, which run at
// the clocks the GPU chooses), the report written into `dir`. Returns the report's path.
std::string place_report(std::vector<std::string>& argv, const std::string& ncu, const fs::path& dir) {
  if (argv.empty() || argv.front() != "ncu") throw Error("deep dive: the command does not start with ncu");
  argv.front() = ncu;
  bool clock = false;
  std::string report;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "--clock-control") clock = true;
    if ((argv[i] == "-o" || argv[i] == "--export") && i + 1 < argv.size()) {
      argv[i + 1] = (dir / fs::path(argv[i + 1]).filename()).string();
      report = argv[i + 1] + ".ncu-rep";
      break;  // ncu's own options end before the program it starts
    }
  }
  if (report.empty()) throw Error("deep dive: the ncu command names no report (-o)");
  if (!clock) argv.insert(argv.begin() + 1, {"--clock-control", "none"});
  return report;
}

}  // namespace

std::string ncu_permission_message() {
  return "ERR_NVGPUCTRPERM: this user may not read the GPU's performance counters; an administrator must allow it "
         "(Linux: 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d, then reload the driver or "
         "reboot) or run it as root / with CAP_SYS_ADMIN (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
}

NcuRunResult run_ncu(const NcuRun& run, const DeepDiveProgress& progress) {
  NcuRunResult result;
  PrivateDir dir;
  std::vector<std::string> argv = run.argv;
  const std::string report = place_report(argv, run.ncu, dir.path());
  result.command = argv;

  Child child = start(argv);
  remote::LineReader out(child.out), err(child.err);
  std::deque<std::string> tail;  // the last lines, for a failure's message
  bool permission = false, cancelled = false;
  std::string last_error;    // ncu's last "==ERROR==" line
  std::string last_program;  // the profiled program's last line (not ncu's "==...==" ones): its own error
  const auto take = [&](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find("ERR_NVGPUCTRPERM") != std::string::npos) permission = true;
    if (line.rfind("==ERROR==", 0) == 0) last_error = line;
    if (!line.empty() && line.rfind("==", 0) != 0) last_program = line;
    if (!line.empty()) {
      tail.push_back(line);
      if (tail.size() > 20) tail.pop_front();
    }
    if (progress && !progress(line)) cancelled = true;
  };
  while (!cancelled && !(out.eof() && err.eof())) {
    const int i = remote::wait_readable({out.eof() ? -1 : out.fd(), err.eof() ? -1 : err.fd()},
                                        Clock::now() + std::chrono::milliseconds(200));
    if (i < 0) {
      take("");
      continue;
    }
    remote::LineReader& r = i == 0 ? out : err;
    if (!r.fill()) {
      if (std::string rest = r.rest(); !rest.empty()) take(rest);
      continue;
    }
    while (auto line = r.take_line()) take(*line);
  }
  if (cancelled) {
    child.terminate(std::chrono::milliseconds(1000));  // ncu and the program it profiles: one process group
    throw Error("cancelled");
  }
  const int status = child.wait_until(Clock::now() + std::chrono::seconds(30)).value_or(-1);
  if (status == -1) {
    child.terminate();
    throw Error("ncu did not end after closing its output");
  }
  if (permission) throw Error(ncu_permission_message());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = last_error;
    if (!last_program.empty()) why += (why.empty() ? "" : "; the program's last line: ") + last_program;
    if (why.empty() && !tail.empty()) why = tail.back();
    throw Error("ncu failed (" + remote::describe_status(status) + ")" + (why.empty() ? "" : ": " + why));
  }
  std::error_code ec;
  if (!fs::is_regular_file(report, ec))
    throw Error("ncu profiled no kernel (no report was written)" + (tail.empty() ? "" : ": " + tail.back()));

  std::string version = capture({run.ncu, "--version"}, 60, "--version");
  while (!version.empty() && (version.back() == '\n' || version.back() == '\r')) version.pop_back();
  if (const size_t nl = version.rfind('\n'); nl != std::string::npos) version.erase(0, nl + 1);
  result.ncu_version = version;
  const std::string raw = capture({run.ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base"},
                                  run.import_timeout_s, "--import (raw page)");
  std::vector<NcuKernel> kernels = parse_ncu_raw(raw);
  const std::string details =
      capture({run.ncu, "--import", report, "--csv", "--page", "details"}, run.import_timeout_s, "--import (details)");
  add_ncu_details(details, kernels);
  result.summary = summarise_ncu(kernels);
  return result;
}

namespace {

void refuse_unavailable(const std::string& backend) {
  if (is_host_backend(backend))
    throw UsageError("the " + backend + " backend launches no GPU kernels: a deep dive profiles cudnn and cuda runs");
  if (const Availability a = make_backend(backend)->availability(); !a.available)
    throw Error("no deep dive here: the " + backend + " backend cannot run on this machine (" + a.reason + ")");
}

DeepDiveResult dive(const NcuCommand& command, const std::vector<Layer>& topology, const DeepDiveConfig& config,
                    const DeepDiveProgress& progress, DeepDiveResult r) {
  r.layer = command.layer;
  r.step_name = command.nvtx_range;
  r.layers = command.step_layers;
  for (int l : r.layers)
    if (l >= 0 && l < static_cast<int>(topology.size())) r.layer_names.push_back(topology[static_cast<size_t>(l)].name);
  NcuRun run;
  run.argv = command.argv;
  run.ncu = config.ncu;
  r.ncu = run_ncu(run, progress);
  return r;
}

}  // namespace

DeepDiveResult deep_dive(const RunReport& run, int layer, const DeepDiveConfig& config,
                         const DeepDiveProgress& progress) {
  refuse_unavailable(run.backend);
  const NcuCommand command = ncu_command(run, layer, config.mnv2_path);
  DeepDiveResult r;
  r.backend = run.backend;
  r.device = run.device;
  r.timer = run.timer;
  r.step = run.layers[static_cast<size_t>(layer)].step;
  const StepProfile& p = run.steps[static_cast<size_t>(r.step)];
  r.measured_median_ns = p.time_ns.median;
  r.gflops = p.gflops;
  if (p.bytes > 0) r.intensity_flop_per_byte = 2.0 * static_cast<double>(p.macs) / static_cast<double>(p.bytes);
  return dive(command, run.topology, config, progress, std::move(r));
}

DeepDiveResult deep_dive(const Model& model, const NcuCommandConfig& command_config, const DeepDiveConfig& config,
                         const DeepDiveProgress& progress) {
  refuse_unavailable(command_config.run.backend);
  const NcuCommand command = ncu_command(model, command_config);
  DeepDiveResult r;
  r.backend = command_config.run.backend;
  return dive(command, model.layers, config, progress, std::move(r));
}

std::string deep_dive_json(const DeepDiveResult& r) {
  using json::Json;
  const auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  const auto kernel = [&](const NcuKernel& k) {
    Json stalls = Json::array();
    for (const NcuStall& s : k.stalls) stalls.push_back({{"reason", s.reason}, {"warps_per_issue", s.warps_per_issue}});
    Json j = {{"id", k.id},
              {"name", k.name},
              {"range", k.range},
              {"grid", k.grid},
              {"block", k.block},
              {"duration_ns", opt(k.duration_ns)},
              {"sm_throughput_pct", opt(k.sm_throughput_pct)},
              {"memory_throughput_pct", opt(k.memory_throughput_pct)},
              {"dram_throughput_pct", opt(k.dram_throughput_pct)},
              {"achieved_occupancy_pct", opt(k.achieved_occupancy_pct)},
              {"theoretical_occupancy_pct", opt(k.theoretical_occupancy_pct)},
              {"occupancy_limiter", k.occupancy_limiter},
              {"occupancy_limit_blocks_per_sm", opt(k.occupancy_limit_blocks)},
              {"registers_per_thread", opt(k.registers_per_thread)},
              {"stalls", stalls},
              {"l1_bytes", opt(k.bytes.l1)},
              {"l2_bytes", opt(k.bytes.l2)},
              {"dram_bytes", opt(k.bytes.dram)},
              {"hmma_pipe_pct", opt(k.hmma_pipe_pct)},
              {"gmma_pipe_pct", opt(k.gmma_pipe_pct)},
              {"notes", k.notes}};
    return j;
  };
  Json kernels = Json::array();
  for (const NcuKernel& k : r.ncu.summary.kernels) kernels.push_back(kernel(k));
  Json j = {{"schema", "mnv2.deep_dive/1"},
            {"backend", r.backend},
            {"device", r.device},
            {"layer", r.layer},
            {"step", r.step},
            {"step_name", r.step_name},
            {"layers", r.layers},
            {"layer_names", r.layer_names},
            {"timer", r.timer},
            {"measured_median_ns", opt(r.measured_median_ns)},
            {"roofline_intensity_flop_per_byte", opt(r.intensity_flop_per_byte)},
            {"roofline_gflops", opt(r.gflops)},
            {"ncu_version", r.ncu.ncu_version},
            {"ncu_command", r.ncu.command},
            {"runs_in_report", r.ncu.summary.runs_in_report},
            {"total", kernel(r.ncu.summary.total)},
            {"kernels", kernels}};
  return json::dump(j, 2) + "\n";
}

}  // namespace mnv2
