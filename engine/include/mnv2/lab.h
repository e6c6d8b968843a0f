// The kernel lab (issue 18, docs/KERNEL_LAB.md): a user's CUDA kernel for one slot (an op kind the cuda backend
// lowers) compiled at run time with NVRTC, put in place of ours in the unfused plan, checked layer by layer
// against the cpu reference and our kernel, then timed beside ours and cuDNN. The parent process compiles; a
// worker process (`mnv2 lab-worker`) loads and runs the user's code, so a crash or a hang kills only the worker.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/json_io.h"
#include "mnv2/model.h"

namespace mnv2 {

// ---- slots -----------------------------------------------------------------------------------------------

struct LabSlot {
  std::string name;           // "depthwise", "pointwise", "stem", "pool", "classifier", "block"
  std::string op;             // what the slot's kernel computes
  std::string header;         // the slot header user code includes ("mnv2_lab/depthwise.h"); empty if none yet
  std::string params_struct;  // "mnv2_lab::DepthwiseParams"
  std::string grid_rule;      // what one work item is (MNV2_LAB_TILE's a and b), docs/KERNEL_LAB.md
  std::string why_not;        // empty where the lab runs this slot; else why it refuses it
};
const std::vector<LabSlot>& lab_slots();
// The slot called `name`; UsageError naming the slots for an unknown one, or saying why a listed one is refused.
const LabSlot& lab_slot(const std::string& name);
// The topology layers (indices) whose kernel the slot replaces: for depthwise, every 3x3 depthwise convolution.
std::vector<int> lab_slot_layers(const Model& model, const std::string& slot);
std::vector<int> lab_slot_layers(const std::vector<Layer>& layers, const std::string& slot);  // a report's topology

// The folder holding include/mnv2_lab/*.h and templates/*.cu: $MNV2_LAB_DIR, else beside the program
// (../share/mnv2-profiler/lab, as installed; or the source tree's kernels/lab for a build tree). Error if none.
std::string lab_dir();
// The slot's template kernel source (templates/SLOT.cu).
std::string lab_template(const std::string& slot);

// ---- compilation (in the calling process: NVRTC needs no GPU and cannot touch a CUDA context) -----------------

struct LabDiagnostic {
  std::string file;  // as NVRTC names it (the kernel file's name, or a header's path)
  int line = 0;
  int column = 0;        // 0 where NVRTC gives none
  std::string severity;  // "error" or "warning" (NVRTC's "remark"s are warnings)
  std::string message;
  bool operator==(const LabDiagnostic&) const = default;
};
// NVRTC's log as diagnostics: lines "FILE(LINE): error: TEXT" and "FILE(LINE): warning #N-D: TEXT" (the lines
// that follow a diagnostic, source excerpt and caret, stay in the raw log).
std::vector<LabDiagnostic> parse_nvrtc_log(const std::string& log);

struct LabCompileConfig {
  std::string source;     // the kernel's text
  std::string file_name;  // what diagnostics call it ("my_dw.cu")
  std::string arch;       // "sm_90"; empty: that of GPU `device` (Error without a GPU: give one)
  int device = 0;         // the CUDA ordinal whose architecture an empty `arch` means
  std::string cache_dir;  // empty: cache_dir()/lab
  bool use_cache = true;
};
struct LabCompileResult {
  bool ok = false;
  bool cached = false;  // the CUBIN came from the cache (key below), NVRTC did not run
  double seconds = 0;   // NVRTC's time (0 for a cache hit)
  std::string arch;
  std::vector<std::string> options;  // as given to NVRTC
  std::string log;                   // NVRTC's raw log
  std::vector<LabDiagnostic> diagnostics;
  std::string nvrtc_version;  // "13.0"
  std::string key;            // sha256 of source, options, NVRTC version, slot headers, arch
  std::string cubin_path;     // the compiled module in the cache (ok only)
  std::string kernel_name;    // the first __global__ function's name in the source (for display; "" if unseen)
};
// Throws Error when NVRTC is not available (no GPU plugin) or the toolkit's headers cannot be found.
LabCompileResult lab_compile(const LabCompileConfig& config);

// ---- a compiled kernel as a backend: "cuda+lab:NAME" --------------------------------------------------------

struct LabKernelSpec {
  std::string name;         // the kernel file's stem: the backend is "cuda+lab:NAME"
  std::string slot;         // lab_slots()[...].name
  std::string cubin_path;   // the compiled module
  std::vector<int> layers;  // topology layers to replace; empty: every layer of the slot
};
// Makes make_backend("cuda+lab:" + spec.name) return our cuda backend (fast variant, unfused plan) with the
// user's kernel in the slot, for this process.
void register_lab_kernel(const LabKernelSpec& spec);
std::optional<LabKernelSpec> registered_lab_kernel(const std::string& name);

// ---- the result (JSON "mnv2.lab" version 1, /work/lab-protocol.md) ---------------------------------------------

struct LabFailure {
  int64_t flat_index = 0;
  std::vector<int64_t> coords;  // N, C, H, W of the output
  double expected = 0;          // the cpu reference's value
  double got = 0;               // the user kernel's
};
struct LabCheck {
  bool passed = false;
  double max_abs_vs_reference = 0, rel_l2_vs_reference = 0, max_abs_vs_ours = 0;
  double bound = 0;  // the per-precision layer bound of compare/diff (precision_layer_threshold)
  std::optional<LabFailure> first_failure;
};
struct LabLayer {
  int index = 0;                                     // the slot's layer (topology index)
  std::string name;                                  // as in the topology
  std::string op;                                    // "depthwise 3x3 s1"
  std::string shape;                                 // "N,C,H,W" of the output
  std::optional<LabCheck> check;                     // empty when the run stopped before checking the layer
  std::optional<double> user_us, ours_us, cudnn_us;  // CUPTI kernel time, median
  std::optional<double> flops, bytes;                // roofline inputs of the layer
};
struct LabEndToEnd {
  std::optional<double> user_ms, ours_unfused_ms, ours_default_ms, cudnn_ms;  // GPU time of a graph replay, median
};
struct LabResult {
  std::string slot, kernel_file, kernel_name, source_sha256, precision = "fp32", device;
  int batch = 1;
  // "passed", "check_failed", "compile_error", "crashed", "timeout" (and "error" for anything else)
  std::string status;
  std::string message;
  std::optional<LabCompileResult> compile;
  bool has_launch = false;
  int block[3] = {0, 0, 0};
  int tile[2] = {1, 1};
  std::string grid_rule;
  int shared_bytes = 0;
  std::vector<LabLayer> layers;
  std::optional<LabEndToEnd> end_to_end;
  std::string compute_sanitizer_command, ncu_command;
  std::string report_json, report_csv;  // the usual profile reports of the cuda+lab run, where written
};
json::Json lab_result_json(const LabResult& r);
// The one reader of the document, for the CLI, the worker's parent and the app: the format and the version first
// (another is refused by name), then every field with its type; Error with one line naming the field by its path
// ("layers[3].check.bound should be a number, is a string") when the document is not such a result. Optional fields
// may be absent or null; element values (first_failure's expected and got) may be null or "nan" / "inf" / "-inf".
LabResult lab_result_from_json(const json::Json& j);
LabResult read_lab_result(const std::string& text);  // the same from the document's text (Error: not JSON, ...)
// The exit code of `mnv2 lab` for a result: 0 passed, 1 check failed (or another error), 3 compile error,
// 4 crashed or timed out.
int lab_exit_code(const LabResult& r);

// ---- running ---------------------------------------------------------------------------------------------------

struct LabConfig {
  std::string slot;
  std::string kernel_file;
  std::vector<int> layers;  // empty: all of the slot's layers
  Precision precision = Precision::fp32;
  int batch = 1;
  std::string input;                    // "" or "random": random (seed 1); else a raw float32 NCHW tensor file
  std::string model_path;               // the located model ("" = the built-in network)
  double timeout_s = 60;                // the worker's wall time
  int runs = 100;                       // timed iterations per phase
  bool compile_only = false;            // stop after compiling
  bool no_time = false;                 // stop after the check
  std::string arch;                     // compile for this architecture ("" = the device's)
  int device = 0;                       // the GPU the worker checks and times on (CUDA ordinal)
  std::string report_json, report_csv;  // the usual profile reports of the cuda+lab run
  std::string program;                  // the mnv2 executable the worker is started from
  std::vector<std::string> argv;        // the user's command line, for the sanitizer and ncu lines
};
using LabProgress = std::function<void(const std::string& line)>;

// Compiles, then runs the check and the timings in a worker process under the time-out. Never throws for
// anything the user's kernel does (the result says it); throws UsageError for a bad configuration.
LabResult run_lab(const LabConfig& config, const LabProgress& progress = {});

// The worker's side (`mnv2 lab-worker --request FILE --result-fd N`): loads the request run_lab() wrote, runs,
// writes the LabResult JSON to the descriptor. Returns the exit code.
int lab_worker_main(const std::string& request_path, int result_fd);

}  // namespace mnv2
