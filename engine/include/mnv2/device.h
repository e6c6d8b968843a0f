// What the machine offers for GPU work: CUDA devices, driver and runtime versions, or why there are none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnv2 {

// One CUDA architecture a build carries code for, as CMAKE_CUDA_ARCHITECTURES names it: machine code
// ("sm_86", from "86-real"), PTX ("compute_120", from "120-virtual"; "120" alone gives both), and the
// architecture-specific forms ("sm_90a") that run on exactly that chip.
struct CudaArch {
  int major = 0, minor = 0;
  bool ptx = false;               // PTX (the driver compiles it for the GPU at first use); else machine code
  bool arch_specific = false;     // "a" suffix: sm_90a runs on compute capability 9.0 only
  std::string to_string() const;  // "sm_90", "sm_90a", "compute_120"
};

// Parses a CMake CUDA architecture list ("75-real;80-real;90a-real;120", or with commas); entries it cannot read (e.g.
// "all") are skipped.
std::vector<CudaArch> parse_cuda_architectures(const std::string& cmake_list);
// What the GPU code carries: the loaded plugin's CMAKE_CUDA_ARCHITECTURES, else this build's; empty without CUDA.
const std::vector<CudaArch>& built_cuda_architectures();
// "sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120, PTX compute_120".
std::string describe_architectures(const std::vector<CudaArch>& archs);

// Which of `carried` a GPU of compute capability major.minor runs, as the CUDA driver chooses: the newest
// machine code of the same major version and an equal or lower minor (exactly equal for "a" forms), else
// the newest PTX at or below the GPU (JIT-compiled), else nothing, with `why_not` in one line.
struct DeviceCode {
  bool runs = false;
  CudaArch arch;        // what runs
  std::string code;     // "sm_90 machine code" / "compute_120 PTX, JIT-compiled by the driver"
  std::string why_not;  // when !runs
};
DeviceCode code_for_device(const std::vector<CudaArch>& carried, int cc_major, int cc_minor);

// "" when a driver that supports CUDA `driver_version` (e.g. 12040) can run this build's CUDA runtime
// `runtime_version` (13000), else one line: the driver must support the runtime's major version
// (CUDA 13: NVIDIA driver 580 or newer).
std::string driver_problem(int driver_version, int runtime_version);

struct GpuDevice {
  int index = 0;  // the CUDA ordinal among the visible GPUs (CUDA_VISIBLE_DEVICES applies)
  std::string name;
  std::string uuid;                // "GPU-8f2e65d4-...", as `nvidia-smi -L` prints it; "" when CUDA does not say
  std::string pci_bus_id;          // "0000:19:00.0" (cudaDeviceGetPCIBusId): how NVML finds this card
  int cc_major = 0, cc_minor = 0;  // compute capability
  int64_t memory_bytes = 0;
  int multiprocessors = 0;
  int l2_bytes = 0;
  std::string code;        // what of this build runs here (DeviceCode::code)
  std::string cannot_run;  // why this build's kernels cannot run here ("" when they can)
};

struct CudaEnvironment {
  bool built_with_cuda = false;  // this build made the GPU plugin (MNV2_WITH_CUDA=ON)
  std::string architectures;     // describe_architectures(built_cuda_architectures()); "" without CUDA
  std::string gpu_plugin;        // the loaded plugin's path; "" when it is not loaded (why_none says why)
  int driver_version = 0;        // CUDA version the driver supports, e.g. 13000 for 13.0; 0 when no driver
  std::string driver_release;    // the NVIDIA driver itself, e.g. "580.159.04" (NVML); empty when unknown
  int runtime_version = 0;       // CUDA runtime this build uses
  std::string cudnn_version;     // the cuDNN library loaded, e.g. "9.14.0" (no GPU needed); "none" without CUDA
  std::vector<GpuDevice> devices;
  std::string why_none;  // set when devices is empty: the plugin, its libraries, the driver, no device
};

// Queried once per process and cached; never throws.
const CudaEnvironment& cuda_environment();

// The visible GPU of CUDA ordinal `index` (PrepareConfig::device). Throws UsageError naming the ordinal and the
// GPUs there are ("--device 2: this machine shows 1 GPU: 0 NVIDIA H100"), or Error saying why there are none.
const GpuDevice& gpu_device(int index);

// A GPU as a run records it: which card, and the settings that bound its speed, read at the run's start
// through NVML from the card at the device's PCI bus id (never by NVML's own index, which is another card
// under CUDA_VISIBLE_DEVICES). -1 and "" where not known: no NVML, a setting the card does not report, or a
// report written before these fields.
struct GpuRecord {
  int index = -1;  // the CUDA ordinal the run used; -1: no GPU recorded (a CPU run, an older report)
  std::string uuid, name, pci_bus_id;
  int sm_clock_max_mhz = -1;           // the highest SM clock the card allows
  int sm_clock_applications_mhz = -1;  // the SM clock it targets under load (nvidia-smi -ac)
  int memory_clock_mhz = -1;           // the memory clock at the start
  double power_limit_w = -1;           // the enforced power limit
  std::string nvml_problem;            // why NVML gave nothing, or that its card at that bus id is another one
};
GpuRecord record_gpu(int index);

// "13.0" from 13000.
std::string cuda_version_string(int version);

// The GPU plugin (libmnv2_gpu.so, loaded at run time): where it is, whether it loaded, and if not why (not
// installed, NVIDIA libraries missing: named in missing_libraries, built from another version).
struct GpuPluginInfo {
  bool built = false;  // this build has one (MNV2_WITH_CUDA=ON)
  std::string path;
  bool loaded = false;
  std::string problem;
  std::vector<std::string> missing_libraries;
};
GpuPluginInfo gpu_plugin_info();

// The architecture the kernels' device code was compiled for, as the driver loaded it on `device` (e.g. 75
// for compute_75 PTX JIT-compiled on an H200); -1 with `why` set when unknown. Creates the CUDA context.
int kernel_code_arch(int device, std::string* why);

// Why GPU work (a GPU backend, event or CUPTI timing) cannot run here, or "" when it can: no GPU plugin or
// a library it needs, a driver too old, no device.
std::string why_no_gpu();

}  // namespace mnv2
