// The deep dive: from one slow layer (its execution step) to why it is slow. Nsight Compute profiles exactly that
// step's kernels (the ncu-command study's line, with --clock-control none so that durations match our timings),
// its report is read back through `ncu --import R --csv --page raw --print-units base` (and `--page details`)
// by metric name, never by ncu's human-readable text, and summarised per kernel and over the step.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mnv2/profiler.h"
#include "mnv2/studies.h"

namespace mnv2 {

// The metric names read (Nsight Compute 2025.x, CUDA 13; docs in its "Metrics Reference"). A figure whose metric
// the report lacks (another ncu version, a smaller section set) is absent (std::nullopt), never zero.
namespace ncu_metric {
inline constexpr const char* duration_ns = "gpu__time_duration.sum";
inline constexpr const char* sm_throughput_pct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* memory_throughput_pct = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* dram_throughput_pct = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* achieved_occupancy_pct = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* theoretical_occupancy_pct = "sm__maximum_warps_per_active_cycle_pct";
// Issued mma.sync (HMMA) and wgmma (GMMA, Hopper's warpgroup MMA) instructions against the pipe's peak.
inline constexpr const char* hmma_pipe_pct = "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active";
inline constexpr const char* gmma_pipe_pct = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active";
inline constexpr const char* registers = "launch__registers_per_thread";
inline constexpr const char* occupancy_limit_prefix = "launch__occupancy_limit_";  // + blocks|registers|...: blocks/SM
inline constexpr const char* stall_prefix = "smsp__average_warps_issue_stalled_";  // + REASON + stall_suffix
inline constexpr const char* stall_suffix = "_per_issue_active.ratio";
}  // namespace ncu_metric

// Bytes moved at each level of the memory hierarchy, from the first counter the report has:
//   DRAM: dram__bytes.sum, else dram__bytes_read.sum + dram__bytes_write.sum (`--set full`);
//   L2:   lts__t_bytes.sum, else lts__t_sectors.sum x 32 (every L2 request's sectors, any source);
//   L1:   l1tex__t_bytes.sum, else the LSU pipe's global and local sectors (l1tex__t_sectors_pipe_lsu_mem_{global_op_
//         {ld,st,atom,red},local_op_{ld,st}}.sum) x 32: what the kernel's loads and stores asked of L1 (shared memory
//         not counted);
// and last, the counter's rate times the kernel's duration (X.sum = X.sum.per_second x duration).
struct NcuBytes {
  std::optional<double> l1, l2, dram;
};

struct NcuStall {
  std::string reason;          // the metric's middle part: "long_scoreboard", "barrier", "mio_throttle", ...
  double warps_per_issue = 0;  // warps stalled for this reason per issued instruction (cycles between issues)
};

// One profiled kernel launch.
struct NcuKernel {
  int id = 0;               // ncu's ID column (launch order in the report)
  std::string name;         // "Kernel Name" (demangled, as ncu gives it)
  std::string range;        // the innermost NVTX push/pop range it ran in (the step's name)
  std::string grid, block;  // "(98, 1, 1)"
  std::optional<double> duration_ns;
  std::optional<double> sm_throughput_pct, memory_throughput_pct, dram_throughput_pct;  // speed of light
  std::optional<double> achieved_occupancy_pct, theoretical_occupancy_pct;
  // What bounds the theoretical occupancy: the launch__occupancy_limit_* with the fewest blocks per SM
  // ("registers", "shared_mem", "warps", "blocks", "barriers"; several joined by '+' where they tie), and that count.
  std::string occupancy_limiter;
  std::optional<double> occupancy_limit_blocks;
  std::optional<double> registers_per_thread;
  std::vector<NcuStall> stalls;  // every stall reason the report has, largest first ("selected" left out: issuing)
  NcuBytes bytes;
  std::optional<double> hmma_pipe_pct, gmma_pipe_pct;
  // The details page's rule results for this kernel, the largest estimated speedup first: "OPT RuleName (estimated
  // speedup global 66%): ncu's description" (the description verbatim: shown, never parsed).
  std::vector<std::string> notes;
};

// The step: its kernels and the figures over them. Durations and bytes are sums; percentages and stall ratios are
// duration-weighted means over the kernels that have them; the limiter is the longest kernel's.
struct NcuStepSummary {
  std::vector<NcuKernel> kernels;  // one run of the step (the last one profiled), in launch order
  int runs_in_report = 0;          // how many times the step's kernel sequence was profiled
  NcuKernel total;                 // name: the kernel count ("3 kernels"); id -1
};

// ---- reading a report ------------------------------------------------------------------------------------------

// ncu's raw page (`--csv --page raw --print-units base`): a header row of metric names, a units row, one row per
// kernel; ncu's own "==PROF==" lines may come first. Throws Error naming what is wrong (no header, a row of another
// width, malformed CSV). Numbers are read with ncu's thousands separators ("1,980,000"); "n/a"/"no data" are absent.
std::vector<NcuKernel> parse_ncu_raw(std::string_view csv);
// Adds the details page's rule results (`--page details`: one row per kernel, section and metric or rule) to
// `kernels` by ID.
void add_ncu_details(std::string_view csv, std::vector<NcuKernel>& kernels);
// The last run of the step's kernel sequence, and the figures over it. Throws Error when there is no kernel.
NcuStepSummary summarise_ncu(const std::vector<NcuKernel>& kernels);

// ---- running Nsight Compute ------------------------------------------------------------------------------------

// Progress: one line of ncu's output (its own "==PROF==" lines and the profiled program's), or "" when nothing came
// for a moment (the chance to cancel all the same); return false to cancel.
using DeepDiveProgress = std::function<bool(const std::string& line)>;

struct NcuRun {
  std::vector<std::string> argv;  // the ncu-command study's argv (starts with "ncu"; "-o NAME" is moved into dir)
  std::string ncu = "ncu";        // the program: a path, or a name looked up on PATH
  int import_timeout_s = 300;
};
struct NcuRunResult {
  std::vector<std::string> command;  // what ran, argv[0] the ncu program
  std::string ncu_version;           // `ncu --version`'s last line
  NcuStepSummary summary;
};
// Runs ncu (its report in a private temporary folder, removed afterwards), then imports the raw and details pages.
// Throws Error with one line: ncu not found, the counters not permitted (ERR_NVGPUCTRPERM, with what an
// administrator must set), ncu or the profiled program failing (its status and last line), no kernel profiled,
// "cancelled".
NcuRunResult run_ncu(const NcuRun& run, const DeepDiveProgress& progress = {});

// The one-line explanation of ERR_NVGPUCTRPERM.
std::string ncu_permission_message();

// ---- the study ---------------------------------------------------------------------------------------------------

struct DeepDiveConfig {
  std::string mnv2_path;  // absolute path of the mnv2 program ncu starts
  std::string ncu = "ncu";
};
struct DeepDiveResult {
  std::string backend, device;
  int layer = 0;            // the layer asked for
  int step = -1;            // the run's step that covers it
  std::string step_name;    // the NVTX range: "Conv2d 5 + ReLU6 6 + ..."
  std::vector<int> layers;  // the topology layers the step's kernels cover
  std::vector<std::string> layer_names;
  std::optional<double> measured_median_ns;               // the step's median in the run (our timer)
  std::string timer;                                      // the run's timer
  std::optional<double> intensity_flop_per_byte, gflops;  // the step's roofline point in the run
  NcuRunResult ncu;
};
// A deep dive of `layer` of a finished GPU run: the step's ncu command from the run's report (ncu_command), run with
// --clock-control none. Throws UsageError for a cpu run or a layer the run lacks; Error as run_ncu, and "no GPU"
// where the run's backend cannot run here.
DeepDiveResult deep_dive(const RunReport& run, int layer, const DeepDiveConfig& config,
                         const DeepDiveProgress& progress = {});
// A deep dive of a layer of the run `command_config` describes (the backend is prepared to learn its steps, as for
// `--ncu-command`); no measured time or roofline point (the run was not timed).
DeepDiveResult deep_dive(const Model& model, const NcuCommandConfig& command_config, const DeepDiveConfig& config,
                         const DeepDiveProgress& progress = {});

// The JSON of a result (schema "mnv2.deep_dive/1", as the other reports name theirs).
std::string deep_dive_json(const DeepDiveResult& result);

}  // namespace mnv2
