// NVML through dlopen (see nvml.h). Only the entry points needed are looked up.
#include "util/nvml.h"

#include <dlfcn.h>

#include <mutex>

#include "mnv2/device.h"

namespace mnv2 {

namespace {

// NVML's C API, declared here so that no NVML header or link-time library is needed.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
constexpr int kNvmlClockSm = 1;                  // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;                 // NVML_CLOCK_MEM
constexpr unsigned kNvmlUuidSize = 96;           // NVML_DEVICE_UUID_V2_BUFFER_SIZE

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
  NvmlReturn (*device_by_pci)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;                       // optional
  NvmlReturn (*applications_clock)(NvmlDevice, int, unsigned*) = nullptr;              // optional
  NvmlReturn (*power_limit)(NvmlDevice, unsigned*) = nullptr;                          // optional, milliwatts
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned) = nullptr;                           // optional
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
    n.device_by_pci =
        reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    using Clock = NvmlReturn (*)(NvmlDevice, int, unsigned*);
    n.clock_info = reinterpret_cast<Clock>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<Clock>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.applications_clock = reinterpret_cast<Clock>(dlsym(lib, "nvmlDeviceGetApplicationsClock"));
    n.power_limit =
        reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned*)>(dlsym(lib, "nvmlDeviceGetEnforcedPowerLimit"));
    n.uuid = reinterpret_cast<NvmlReturn (*)(NvmlDevice, char*, unsigned)>(dlsym(lib, "nvmlDeviceGetUUID"));
    n.driver_version = reinterpret_cast<NvmlReturn (*)(char*, unsigned)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    n.compute_processes = reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfo*)>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    n.ok = n.init && n.device_by_pci && n.clock_info && n.init() == kNvmlSuccess;
  });
  return n;
}

// The NVML handle of the card at `pci_bus_id`, or nullptr.
NvmlDevice handle_at(const Nvml& n, const std::string& pci_bus_id) {
  NvmlDevice handle = nullptr;
  if (!n.ok || pci_bus_id.empty() || n.device_by_pci(pci_bus_id.c_str(), &handle) != kNvmlSuccess) return nullptr;
  return handle;
}

// The NVML handle of CUDA device `device`, found by its PCI bus id; nullptr when there is none.
NvmlDevice handle_of(const Nvml& n, int device) {
  if (!n.ok) return nullptr;
  for (const GpuDevice& d : cuda_environment().devices)
    if (d.index == device) return handle_at(n, d.pci_bus_id);
  return nullptr;
}

int clock_of(NvmlReturn (*get)(NvmlDevice, int, unsigned*), NvmlDevice handle, int which) {
  unsigned mhz = 0;
  return get && get(handle, which, &mhz) == kNvmlSuccess && mhz > 0 ? static_cast<int>(mhz) : -1;
}

}  // namespace

int current_sm_clock_mhz(int device) {
  const Nvml& n = nvml();
  NvmlDevice handle = handle_of(n, device);
  return handle ? clock_of(n.clock_info, handle, kNvmlClockSm) : -1;
}

NvmlCard nvml_card(const std::string& pci_bus_id) {
  NvmlCard card;
  const Nvml& n = nvml();
  if (!n.ok) {
    card.problem = "NVML is not available";
    return card;
  }
  NvmlDevice handle = handle_at(n, pci_bus_id);
  if (!handle) {
    card.problem = "NVML shows no card at PCI bus id " + (pci_bus_id.empty() ? std::string("(unknown)") : pci_bus_id);
    return card;
  }
  card.found = true;
  card.sm_clock_mhz = clock_of(n.clock_info, handle, kNvmlClockSm);
  card.memory_clock_mhz = clock_of(n.clock_info, handle, kNvmlClockMem);
  card.sm_clock_max_mhz = clock_of(n.max_clock, handle, kNvmlClockSm);
  card.sm_clock_applications_mhz = clock_of(n.applications_clock, handle, kNvmlClockSm);
  if (unsigned mw = 0; n.power_limit && n.power_limit(handle, &mw) == kNvmlSuccess && mw > 0)
    card.power_limit_w = mw / 1000.0;
  if (char buf[kNvmlUuidSize] = {}; n.uuid && n.uuid(handle, buf, kNvmlUuidSize) == kNvmlSuccess) {
    buf[kNvmlUuidSize - 1] = '\0';
    card.uuid = buf;
  }
  return card;
}

std::optional<int> gpu_compute_processes(int device, std::vector<unsigned>* pids) {
  const Nvml& n = nvml();
  if (!n.compute_processes) return std::nullopt;
  NvmlDevice handle = handle_of(n, device);
  if (!handle) return std::nullopt;
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
