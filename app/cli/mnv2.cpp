// mnv2: the headless command-line front end. It drives the same engine objects as the desktop app. This file is
// the dispatcher: the command table, the usage and help, the run options resolved once and the process settings
// taken from them, the output files; each command is a file of its own (commands.h).
// Exit codes: mnv2/exit_codes.h (0 success, 1 runtime error, "error: ..." on stderr, 2 usage error; lab 3 and 4).
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "commands.h"
#include "common/environment.h"
#include "common/omp_wait_policy.h"
#include "mnv2/build_info.h"
#include "mnv2/error.h"
#include "mnv2/exit_codes.h"
#include "mnv2/options.h"
#include "mnv2/printable.h"
#include "output.h"

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
MNV2_CUDA_PDL, MNV2_CUDA_SPLITK, else fast, auto, auto, the planner's tile, auto and separate.
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
'mnv2 COMMAND --help' lists a command's options.)";

// The footer of `mnv2 --help`: the notes, then the exit codes from their table, wrapped like the notes.
std::string footer_text() {
  std::string codes = "Exit codes:";
  for (const ExitCodeDoc& e : kExitCodes)
    codes += std::string(e.code == kExitCodes.front().code ? " " : "; ") + std::to_string(e.code) + " " + e.meaning;
  codes += ".";
  constexpr size_t kWidth = 110;
  std::string s = kFooter, line;
  std::istringstream words(codes);
  for (std::string w; words >> w;) {
    if (!line.empty() && line.size() + 1 + w.size() > kWidth) {
      s += "\n" + line;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  return s + "\n" + line;
}

struct Command {
  const char* name;
  const char* help;
  void (*declare)(Args&);
  int (*run)(const Args&, const OptionValues&);
  const char* examples = "";  // two command lines, one per line: under the command's --help and in `mnv2 man`
};

const Command kCommands[] = {
    {"info", "build, devices, backends and why unavailable, model lookup; the model's format, producer, input, classes",
     declare_info, cmd_info, "mnv2 info\nmnv2 info --model mobilenet_v2.onnx --json"},
    {"topology", "the layers with output shapes, params and MACs", declare_topology, cmd_topology,
     "mnv2 topology\nmnv2 topology --batch 8 --input-size 160 --format csv"},
    {"classify", "top-K classes for each image (or each image of a tensor)", declare_classify, cmd_classify,
     "mnv2 classify photo.jpg\nmnv2 classify --backend cuda --precision fp16 --top 3 a.jpg b.png"},
    {"plan", "the cuda backend's plan for a GPU (steps, kernels, tiles), made without one", declare_plan, cmd_plan,
     "mnv2 plan --gpu h200 --batch 256 --precision fp16\nmnv2 plan --gpu t4 --code-arch 75 --cuda-fusion block"},
    {"bench", "end-to-end latency and throughput (no instrumentation), every backend x input size x batch",
     declare_bench, cmd_bench,
     "mnv2 bench --backends cuda,cudnn --batch 1,8,64,256 --json bench.json\nmnv2 bench --show "
     "bench.json,pytorch.json"},
    {"profile", "an end-to-end run, then a per-layer run: table and reports", declare_profile, cmd_profile,
     "mnv2 profile --backend cuda --precision fp16 --image photo.jpg --json run.json\nmnv2 profile --backend cudnn "
     "--ncu-command block3.dw"},
    {"roofline", "the device's measured ceilings (cached per device) and each layer's intensity and GFLOP/s",
     declare_roofline, cmd_roofline,
     "mnv2 roofline --backend cuda --precision fp16\nmnv2 roofline --backend cpu --csv roofline.csv"},
    {"deep-dive", "one layer's step under Nsight Compute: speed of light, occupancy, stalls, bytes, tensor pipes",
     declare_deep_dive, cmd_deep_dive,
     "mnv2 deep-dive --backend cuda --precision fp16 --layer 25\nmnv2 deep-dive --report run.json --layer block3.dw "
     "--json dive.json"},
    {"memory", "activation and weight bytes per layer; what the prepared backend holds and what the driver saw",
     declare_memory, cmd_memory,
     "mnv2 memory --backend cuda --batch 64\nmnv2 memory --backend cudnn --precision fp16 --json memory.json"},
    {"eval", "top-1/top-5 accuracy over labelled images", declare_eval, cmd_eval,
     "mnv2 eval --images photos/ --backend cpu\nmnv2 eval --list labelled.txt --backend cuda --precision fp16 --json "
     "eval.json"},
    {"compare", "profiles each backend, side by side, with each layer's output error against the first backend",
     declare_compare, cmd_compare,
     "mnv2 compare --backends cpu-ref,cudnn,cuda --image photo.jpg\nmnv2 compare --backends cpu,cuda --precision fp16 "
     "--json compare.json"},
    {"runs", "report or session files side by side: every setting that differs, weighed, and the layers", declare_runs,
     cmd_runs, "mnv2 runs a.json b.json\nmnv2 runs --baseline 2 session.json"},
    {"lab", "the kernel lab: your CUDA kernel for one slot, compiled (NVRTC), checked per layer, timed beside ours",
     declare_lab, cmd_lab,
     "mnv2 lab --template depthwise > dw.cu\nmnv2 lab --slot depthwise --kernel dw.cu --json lab.json"},
    {"targets", "remote targets (SSH hosts, Slurm): list, add, remove, probe, connect, disconnect", declare_targets,
     cmd_targets, "mnv2 targets add lab gpu-box\nmnv2 targets probe lab"},
    {"remote", "remote install TARGET: copy this mnv2 to a target (no root needed)", declare_remote, cmd_remote,
     "mnv2 remote install lab\nmnv2 remote install slurm-a100"},
    {"completion", "bash|zsh: the shell completion script, from the commands and the option table", declare_completion,
     cmd_completion,
     "mnv2 completion bash > ~/.local/share/bash-completion/completions/mnv2\nmnv2 completion zsh > ~/.zfunc/_mnv2"},
    {"man", "the manual page (roff), from the commands and the option table: mnv2 man | man -l -", declare_man, cmd_man,
     "mnv2 man | man -l -\nmnv2 man > mnv2.1"},
    {"lab-worker", "", declare_lab_worker, cmd_lab_worker},
    {"agent", "", declare_agent, cmd_agent},
};

// The command between its output files: every one is checked before any work starts and the set is written
// (mnv2/output_files.h) only when the command succeeded. When an output goes to standard output, the
// command's text goes to standard error, so `--json - | jq` reads JSON only.
int run_command(const Command& command, Args& args, const OptionValues& options) {
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
  if (const std::string note = args.environment_note(options); !note.empty()) {
    if (args.flag("--json"))
      std::cerr << note << "\n";
    else
      std::cout << note << "\n";
  }
  const int rc = command.run(args, options);
  std::fflush(stdout);
  std::cout.flush();
  if (rc == 0)
    for (const std::string& line : args.outputs().commit()) std::cerr << line << "\n";
  return rc;
}

}  // namespace

std::string check_remote_args(const std::string& command, const std::vector<std::string>& args) {
  const Command* found = nullptr;
  for (const Command& c : kCommands)
    if (command == c.name) found = &c;
  // The studies a target runs this round: each declares every file it reads or writes as such (input(),
  // output()), so the check below sees them all.
  if (found == nullptr || (command != "profile" && command != "compare" && command != "bench" && command != "memory" &&
                           command != "roofline" && command != "eval"))
    return "'" + command + "' is not a study a target runs (profile, compare, bench, memory, roofline, eval)";
  CLI::App app("", "mnv2");
  CLI::App* sub = app.add_subcommand(found->name, "");
  Args parsed(*sub);
  found->declare(parsed);
  process_options(parsed);
  std::vector<std::string> argv = {"mnv2", command};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    return std::string("the run's arguments: ") + e.what();
  }
  if (const auto files = parsed.file_options_given(); !files.empty())
    return "the run's arguments name a file (" + files.front() +
           "): on a target the agent names every file, and files travel with the run";
  for (const char* a : {"--target", "--progress-fd"})
    if (parsed.get(a)) return std::string("the run's arguments hold ") + a;
  return {};
}

namespace {

int dispatch(int argc, char** argv) {
  CLI::App app(
      "mnv2: MobileNetV2 inference on our CUDA kernels, cuDNN/cuBLAS or the CPU; per-layer profiles, "
      "comparisons and reports.",
      "mnv2");
  app.set_version_flag("--version", std::string("mnv2 ") + MNV2_VERSION + " (commit " + mnv2::build_commit() + ")");
  app.require_subcommand(1);
  app.footer(footer_text());
  std::vector<std::pair<CLI::App*, std::unique_ptr<Args>>> parsed;
  int progress_fd = -1;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    const bool hidden = std::string(c.name) == "lab-worker" || std::string(c.name) == "agent";
    const bool generator = std::string(c.name) == "completion" || std::string(c.name) == "man";  // run nothing
    if (hidden) sub->group("");  // started by 'mnv2 lab' and by ssh or srun only
    if (*c.examples != '\0') {
      std::string lines = std::string("Examples:\n  ") + c.examples;
      for (size_t at = lines.find('\n', 11); at != std::string::npos; at = lines.find('\n', at + 3))
        lines.replace(at, 1, "\n  ");
      sub->footer(lines);
    }
    parsed.emplace_back(sub, std::make_unique<Args>(*sub));
    c.declare(*parsed.back().second);
    if (!hidden && !generator) process_options(*parsed.back().second);
    // The agent's runs report their progress on a descriptor of their own (hidden: remote runs only).
    sub->add_option("--progress-fd", progress_fd, "")->group("");
  }
  std::vector<DeclaredCommand> declared;
  for (size_t i = 0; i < parsed.size(); ++i)
    declared.push_back({parsed[i].first, parsed[i].second.get(), kCommands[i].examples});
  set_declared_commands(&app, std::move(declared));
  if (argc < 2) {
    std::cerr << app.help();
    return kExitUsage;
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
      // The run options, resolved once (a bad value is a usage error before anything runs), and what the engine
      // takes once per process from them (folders, caches, CUPTI).
      const OptionValues options = parsed[i].second->resolve();
      if (progress_fd >= 0) set_progress_fd(progress_fd);
      set_process_settings(frontend::process_settings_of(options));
      return run_command(kCommands[i], *parsed[i].second, options);
    }
  throw UsageError("no command given ('mnv2 --help' lists them)");
}

}  // namespace
}  // namespace mnv2::cli

// Idle OpenMP threads spin briefly, then sleep, unless the user chose a policy (set before libgomp starts).
MNV2_DEFAULT_OMP_WAIT_POLICY();

namespace {

int run(int argc, char** argv) {
  try {
    return mnv2::cli::dispatch(argc, argv);
  } catch (const mnv2::UsageError& e) {
    std::cerr << "error: " << mnv2::printable(e.what()) << "\n(run 'mnv2 --help' for usage)\n";
    return mnv2::kExitUsage;
  } catch (const mnv2::Error& e) {
    std::cerr << "error: " << mnv2::printable(e.what()) << "\n";
    return mnv2::kExitError;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return mnv2::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "error: " << mnv2::printable(e.what()) << "\n";
    return mnv2::kExitError;
  }
}

// What the command printed must have reached standard output: a write error there (a full disk, /dev/full) fails
// the command, whatever it returned. The one check, at exit, for printf and std::cout alike (they share stdio's
// buffer).
int check_stdout(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && !std::cout.fail()) return rc;
  std::cerr << "error: cannot write to standard output"
            << (!flushed && err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string()) << "\n";
  return rc == 0 ? 1 : rc;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes write() fail with EFBIG, which the writers report and clean up after,
  // instead of killing the process mid-write (SIGXFSZ's default) with temporaries left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  return check_stdout(run(argc, argv));
}
