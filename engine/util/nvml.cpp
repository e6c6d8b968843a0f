// NVML through dlopen (see nvml.h). Only the entry points needed are looked up.
#include "util/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace mnv2 {

namespace {

// NVML's C API, declared here so that no NVML header or link-time library is needed.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kNvmlClockSm = 1;                  // NVML_CLOCK_SM

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it (pid, usedGpuMemory, gpuInstanceId,
// computeInstanceId).
struct NvmlProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*device_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;                             // optional
  NvmlReturn (*compute_processes)(NvmlDevice, unsigned*, NvmlProcessInfo*) = nullptr;  // optional
  bool ok = false;
};

const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    n.init = reinterpret_cast<NvmlReturn (*)()>(dlsym(lib, "nvmlInit_v2"));
    n.device_by_index =
        reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    n.clock_info = reinterpret_cast<NvmlReturn (*)(NvmlDevice, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.driver_version = reinterpret_cast<NvmlReturn (*)(char*, unsigned)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    n.compute_processes = reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfo*)>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    n.ok = n.init && n.device_by_index && n.clock_info && n.init() == kNvmlSuccess;
  });
  return n;
}

}  // namespace

int current_sm_clock_mhz(int device) {
  const Nvml& n = nvml();
  if (!n.ok || device < 0) return -1;
  NvmlDevice handle = nullptr;
  unsigned mhz = 0;
  if (n.device_by_index(static_cast<unsigned>(device), &handle) != kNvmlSuccess) return -1;
  if (n.clock_info(handle, kNvmlClockSm, &mhz) != kNvmlSuccess) return -1;
  return static_cast<int>(mhz);
}

std::optional<int> gpu_compute_processes(int device, std::vector<unsigned>* pids) {
  const Nvml& n = nvml();
  if (!n.ok || !n.compute_processes || device < 0) return std::nullopt;
  NvmlDevice handle = nullptr;
  if (n.device_by_index(static_cast<unsigned>(device), &handle) != kNvmlSuccess) return std::nullopt;
  // Asked with room for 64 (more is a crowded GPU: the count is still right, the ids are the first ones).
  std::vector<NvmlProcessInfo> infos(64);
  unsigned count = static_cast<unsigned>(infos.size());
  const NvmlReturn rc = n.compute_processes(handle, &count, infos.data());
  if (rc == kNvmlInsufficientSize) return static_cast<int>(count);
  if (rc != kNvmlSuccess) return std::nullopt;
  if (pids)
    for (unsigned i = 0; i < count && i < infos.size(); ++i) pids->push_back(infos[i].pid);
  return static_cast<int>(count);
}

std::string nvidia_driver_release() {
  const Nvml& n = nvml();
  if (!n.ok || !n.driver_version) return {};
  char buf[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
  if (n.driver_version(buf, sizeof buf) != kNvmlSuccess) return {};
  buf[sizeof buf - 1] = '\0';
  return buf;
}

}  // namespace mnv2
