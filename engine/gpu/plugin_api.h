// The boundary between the engine core (libmnv2_engine.so: no CUDA, runs anywhere) and the GPU plugin
// (libmnv2_gpu.so: the cudnn and cuda backends, our kernels, cudaEvent and CUPTI timing, the GPU
// roofline calibration; it needs the CUDA runtime, cuDNN, cuBLAS and CUPTI). The core loads the plugin
// with dlopen at run time (engine/gpu/plugin_loader.cpp), so the program starts, and its CPU backend
// runs, on a machine without NVIDIA's libraries; a missing library is named, never a start-up failure.
// Core and plugin come from one tree and one compiler, so C++ types cross the boundary; the plugin is
// used only when its API version and build identity equal the core's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/device.h"
#include "mnv2/lab.h"
#include "mnv2/roofline.h"
#include "mnv2/timing.h"

namespace mnv2::gpu_plugin {

inline constexpr int kApiVersion = 1;

// One NVRTC compilation of the kernel lab (engine/gpu/lab_nvrtc.cpp).
struct LabNvrtcJob {
  std::string source;
  std::string file_name;             // the program's name in diagnostics
  std::vector<std::string> options;  // -arch=sm_XX, -I..., -lineinfo, ...
};
struct LabModuleInfo {
  std::string kernel_name;
  int block[3] = {256, 1, 1};
  int tile[2] = {1, 1};
  int shared_bytes = 0;
};
struct LabNvrtcOutput {
  bool ok = false;              // compiled; cubin holds the module
  std::string log;              // NVRTC's program log
  std::string cubin;            // the module's bytes
  std::string error;            // why NVRTC itself failed (not a compile error of the source)
  std::string version;          // "13.0"
  std::string toolkit_include;  // the CUDA headers' folder NVRTC's library sits beside, "" if not found
};

struct Api {
  int api_version = kApiVersion;
  const char* build_id = "";  // version + commit, compared with the core's (mnv2::gpu_plugin::build_id())
  // The CUDA architectures this plugin's device code was compiled for, as CMake listed them
  // ("75-real;80-real;...;120"): what `mnv2 info` reports once the plugin is loaded (a plugin built for other
  // architectures may be installed than the core was configured with).
  const char* cuda_architectures = "";

  // Runtime, driver and cuDNN versions, the devices, and for each device the code of this build that runs
  // there (or why none does). Fills the CUDA fields of `env`; never throws.
  void (*query_environment)(CudaEnvironment& env) = nullptr;
  // The architecture the kernels' device code was compiled for on `device` as the driver loaded it (a
  // kernel's cudaFuncAttributes::ptxVersion, e.g. 75 for compute_75 PTX JIT-compiled on an H200), or -1
  // with `why` set. Creates the CUDA context.
  int (*kernel_code_arch)(int device, std::string* why) = nullptr;

  std::unique_ptr<Backend> (*make_cudnn_backend)() = nullptr;
  std::unique_ptr<Backend> (*make_cuda_backend)() = nullptr;

  // A cudaEvent source reporting `warnings` beside its own.
  std::unique_ptr<TimingSource> (*make_event_timing_source)(std::vector<std::string> warnings) = nullptr;
  // A CUPTI source, or nullptr with `why_not` set when CUPTI cannot start.
  std::unique_ptr<TimingSource> (*make_cupti_timing_source)(std::string* why_not) = nullptr;
  std::unique_ptr<RunTimer> (*make_event_run_timer)() = nullptr;

  Ceilings (*calibrate)(int device, Precision precision) = nullptr;
  std::string (*calibration_key)(int device) = nullptr;

  // cudaMemGetInfo on `device` (false when it is not the current device or the call fails).
  bool (*memory_use)(int device, int64_t* used_bytes, int64_t* total_bytes) = nullptr;
  // Makes `device` current and creates its CUDA context (cudaFree(nullptr)); false when that fails.
  bool (*create_context)(int device) = nullptr;

  // The kernel lab (mnv2/lab.h): NVRTC, which needs no GPU, and the cuda backend with a user's kernel in a slot.
  void (*lab_nvrtc_compile)(const LabNvrtcJob& job, LabNvrtcOutput& out) = nullptr;
  std::unique_ptr<Backend> (*make_cuda_lab_backend)(const LabKernelSpec& spec) = nullptr;
  // Loads a compiled lab module into `device`'s context and reads its kernel's name and launch geometry
  // (MNV2_LAB_BLOCK, _TILE, _SHARED); throws Error naming what is wrong.
  void (*lab_module_info)(int device, const std::string& cubin_path, LabModuleInfo& info) = nullptr;
};

// The plugin's one exported symbol, looked up by name with dlsym.
using EntryPoint = const Api* (*)();
inline constexpr const char* kEntryPointName = "mnv2_gpu_plugin_api_v1";
inline constexpr const char* kPluginFileName = "libmnv2_gpu.so";

// MNV2_VERSION and the commit of this build (mnv2/build_info.h; the plugin compiles its own copy from
// cmake/plugin_build_id.cpp.in).
std::string build_id();

// The loaded plugin, or nullptr with the reason in `plugin_status().problem`. Loaded once per process.
const Api* api();

struct Status {
  bool built = false;  // this build made a GPU plugin (MNV2_WITH_CUDA=ON)
  std::string path;    // where it was looked for (or loaded from)
  bool loaded = false;
  std::string problem;  // why it is not loaded: not installed, a library missing (named), a mismatch
  std::vector<std::string> missing_libraries;  // sonames the dynamic loader could not find
};
const Status& status();

// DT_NEEDED entries of a 64-bit little-endian ELF shared object (what the dynamic loader must find for it);
// empty when the file is not one. Used to name every missing library when the plugin does not load.
std::vector<std::string> elf_needed_libraries(const std::string& path);

}  // namespace mnv2::gpu_plugin
