// NVML through dlopen (see nvml.h). Only the three entry points needed are looked up.
#include "util/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace mnv2 {

namespace {

// NVML's C API, declared here so that no NVML header or link-time library is needed.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*device_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;  // optional
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

std::string nvidia_driver_release() {
  const Nvml& n = nvml();
  if (!n.ok || !n.driver_version) return {};
  char buf[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
  if (n.driver_version(buf, sizeof buf) != kNvmlSuccess) return {};
  buf[sizeof buf - 1] = '\0';
  return buf;
}

}  // namespace mnv2
