// CUDA environment discovery through the GPU plugin (engine/gpu/plugin_api.h), and what this build's CUDA
// architectures mean for a given GPU and driver. Nothing here links against CUDA: without the plugin or its
// NVIDIA libraries the environment says why there is no GPU.
#include "mnv2/device.h"

#include <algorithm>
#include <sstream>

#include "gpu/plugin_api.h"
#include "mnv2/error.h"
#include "util/nvml.h"

namespace mnv2 {

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string CudaArch::to_string() const {
  return std::string(ptx ? "compute_" : "sm_") + std::to_string(major) + std::to_string(minor) +
         (arch_specific ? "a" : "");
}

std::vector<CudaArch> parse_cuda_architectures(const std::string& cmake_list) {
  std::vector<CudaArch> out;
  std::string list = cmake_list;  // ';' as CMake writes it, or ',' (how the build passes it to the compiler)
  std::replace(list.begin(), list.end(), ',', ';');
  std::stringstream in(list);
  std::string item;
  auto add = [&out](CudaArch a) {
    for (const CudaArch& b : out)
      if (b.major == a.major && b.minor == a.minor && b.ptx == a.ptx && b.arch_specific == a.arch_specific) return;
    out.push_back(a);
  };
  while (std::getline(in, item, ';')) {
    std::string number = item, kind;
    if (const auto dash = item.find('-'); dash != std::string::npos) {
      number = item.substr(0, dash);
      kind = item.substr(dash + 1);
    }
    CudaArch a;
    if (!number.empty() && (number.back() == 'a' || number.back() == 'f')) {
      a.arch_specific = number.back() == 'a';
      number.pop_back();
    }
    // "75", "86", "120": the last digit is the minor version.
    if (number.size() < 2 || number.size() > 3 || !std::all_of(number.begin(), number.end(), ::isdigit)) continue;
    a.major = std::stoi(number.substr(0, number.size() - 1));
    a.minor = number.back() - '0';
    if (kind.empty() || kind == "real") add(a);
    if (kind.empty() || kind == "virtual") {
      a.ptx = true;
      add(a);
    }
  }
  return out;
}

const std::vector<CudaArch>& built_cuda_architectures() {
  // The loaded plugin's own list (it holds the device code); without one, what this build configured.
  static const std::vector<CudaArch> archs = [] {
    if (const gpu_plugin::Api* api = gpu_plugin::api()) return parse_cuda_architectures(api->cuda_architectures);
#ifdef MNV2_CUDA_ARCHITECTURES
    return parse_cuda_architectures(MNV2_CUDA_ARCHITECTURES);
#else
    return std::vector<CudaArch>{};
#endif
  }();
  return archs;
}

std::string describe_architectures(const std::vector<CudaArch>& archs) {
  std::string sass, ptx;
  for (const CudaArch& a : archs) {
    std::string& list = a.ptx ? ptx : sass;
    list += (list.empty() ? "" : " ") + a.to_string();
  }
  if (ptx.empty()) return sass;
  return sass.empty() ? "PTX " + ptx : sass + ", PTX " + ptx;
}

DeviceCode code_for_device(const std::vector<CudaArch>& carried, int cc_major, int cc_minor) {
  DeviceCode dc;
  const int cc = cc_major * 10 + cc_minor;
  const CudaArch* best = nullptr;
  for (const CudaArch& a : carried) {  // machine code: same major, minor at or below (exact for "a" forms)
    if (a.ptx || a.major != cc_major || a.minor > cc_minor || (a.arch_specific && a.minor != cc_minor)) continue;
    if (best == nullptr || a.minor > best->minor || (a.minor == best->minor && a.arch_specific)) best = &a;
  }
  if (best != nullptr) {
    dc.runs = true;
    dc.arch = *best;
    dc.code = best->to_string() + " machine code";
    return dc;
  }
  for (const CudaArch& a : carried) {  // PTX at or below the GPU, compiled by the driver
    const int v = a.major * 10 + a.minor;
    if (!a.ptx || v > cc || (a.arch_specific && v != cc)) continue;
    if (best == nullptr || v > best->major * 10 + best->minor) best = &a;
  }
  if (best != nullptr) {
    dc.runs = true;
    dc.arch = *best;
    dc.code = best->to_string() + " PTX, JIT-compiled by the driver";
    return dc;
  }
  const std::string gpu = "compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor);
  if (carried.empty()) {
    dc.why_not = "this build carries no CUDA code";
  } else if (cc < 75) {
    dc.why_not = gpu + " is older than CUDA 13 supports (7.5, Turing, and newer); this build carries " +
                 describe_architectures(carried);
  } else {
    dc.why_not = "this build carries " + describe_architectures(carried) + ", none of which runs on " + gpu +
                 "; rebuild with -DCMAKE_CUDA_ARCHITECTURES including " + std::to_string(cc) + "-real";
  }
  return dc;
}

std::string driver_problem(int driver_version, int runtime_version) {
  if (runtime_version <= 0 || driver_version <= 0) return {};
  if (driver_version / 1000 >= runtime_version / 1000) return {};  // minor-version compatibility within a major
  const int major = runtime_version / 1000;
  // The first Linux driver branch of each CUDA major version (NVIDIA's CUDA compatibility table).
  const char* needed = major >= 13 ? "580" : major == 12 ? "525.60.13" : "450.80.02";
  return "the NVIDIA driver supports CUDA up to " + cuda_version_string(driver_version) + ", but this build's CUDA " +
         cuda_version_string(runtime_version) + " runtime needs a driver for CUDA " + std::to_string(major) +
         ".x: NVIDIA driver " + needed + " or newer";
}

namespace {

CudaEnvironment query() {
  CudaEnvironment env;
  env.built_with_cuda = gpu_plugin::status().built;
  env.architectures = describe_architectures(built_cuda_architectures());
  env.cudnn_version = "none";
  // NVML comes with the driver, not with the plugin: the release is known even when the plugin is not.
  env.driver_release = nvidia_driver_release();
  const gpu_plugin::Api* api = gpu_plugin::api();
  if (api == nullptr) {
    env.why_none = gpu_plugin::status().problem;
    return env;
  }
  env.gpu_plugin = gpu_plugin::status().path;
  api->query_environment(env);
  return env;
}

}  // namespace

const CudaEnvironment& cuda_environment() {
  static const CudaEnvironment env = query();
  return env;
}

GpuPluginInfo gpu_plugin_info() {
  const gpu_plugin::Status& st = gpu_plugin::status();
  GpuPluginInfo info;
  info.built = st.built;
  info.path = st.path;
  info.loaded = st.loaded;
  info.problem = st.problem;
  info.missing_libraries = st.missing_libraries;
  return info;
}

int kernel_code_arch(int device, std::string* why) {
  const gpu_plugin::Api* api = gpu_plugin::api();
  if (api == nullptr) {
    if (why != nullptr) *why = gpu_plugin::status().problem;
    return -1;
  }
  if (const std::string no = why_no_gpu(); !no.empty()) {
    if (why != nullptr) *why = no;
    return -1;
  }
  return api->kernel_code_arch(device, why);
}

const GpuDevice& gpu_device(int index) {
  const CudaEnvironment& env = cuda_environment();
  for (const GpuDevice& d : env.devices)
    if (d.index == index) return d;
  if (env.devices.empty()) throw Error("no GPU to run on: " + why_no_gpu());
  std::string shown;
  for (const GpuDevice& d : env.devices) shown += (shown.empty() ? "" : ", ") + std::to_string(d.index) + " " + d.name;
  const size_t n = env.devices.size();
  throw UsageError("--device " + std::to_string(index) + ": this machine shows " + std::to_string(n) + " GPU" +
                   (n == 1 ? "" : "s") + " (" + shown + "; CUDA_VISIBLE_DEVICES chooses which)");
}

GpuRecord record_gpu(int index) {
  const GpuDevice& d = gpu_device(index);
  GpuRecord r;
  r.index = d.index;
  r.uuid = d.uuid;
  r.name = d.name;
  r.pci_bus_id = d.pci_bus_id;
  const NvmlCard card = nvml_card(d.pci_bus_id);
  if (!card.found) {
    r.nvml_problem = card.problem;
    return r;
  }
  if (!card.uuid.empty() && !d.uuid.empty() && card.uuid != d.uuid) {
    // Another card than CUDA's at that bus id (a MIG instance, a virtualised bus): its settings are not this GPU's.
    r.nvml_problem = "NVML's card at " + d.pci_bus_id + " is " + card.uuid + ", not " + d.uuid;
    return r;
  }
  r.sm_clock_max_mhz = card.sm_clock_max_mhz;
  r.sm_clock_applications_mhz = card.sm_clock_applications_mhz;
  r.memory_clock_mhz = card.memory_clock_mhz;
  r.power_limit_w = card.power_limit_w;
  return r;
}

std::string why_no_gpu() {
  const CudaEnvironment& env = cuda_environment();
  if (env.devices.empty()) return env.why_none.empty() ? "no CUDA device" : env.why_none;
  return "";
}

}  // namespace mnv2
