// The GPU plugin's side of plugin_api.h: the CUDA environment query, and the table of entry points the
// engine core calls. Compiled into libmnv2_gpu.so only.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "gpu/plugin_api.h"
#include "kernels/common.cuh"
#include "profile/gpu/gpu_timing.h"

namespace mnv2 {

namespace gpu {
const char* plugin_build_id();  // generated from cmake/plugin_build_id.cpp.in
}  // namespace gpu

std::unique_ptr<Backend> make_cudnn_backend();                              // engine/backends/cudnn
std::unique_ptr<Backend> make_cuda_backend();                               // engine/backends/cuda
std::unique_ptr<Backend> make_cuda_lab_backend(const LabKernelSpec& spec);  // engine/backends/cuda
namespace cuda_backend {
void lab_module_info(int device, const std::string& cubin_path, gpu_plugin::LabModuleInfo& info);  // lab_kernel.cpp
}  // namespace cuda_backend

namespace gpu_plugin {
void lab_nvrtc_compile(const LabNvrtcJob& job, LabNvrtcOutput& out);  // engine/gpu/lab_nvrtc.cpp
}  // namespace gpu_plugin

namespace gpu_plugin {
namespace {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex, as nvidia-smi and NVML print a GPU's UUID; "" when
// CUDA gave none (all zero).
std::string uuid_string(const cudaUUID_t& uuid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(uuid.bytes[i]);
    any = any || b != 0;
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return any ? out : std::string();
}

void query_environment(CudaEnvironment& env) {
  cudaRuntimeGetVersion(&env.runtime_version);
  const size_t cudnn = cudnnGetVersion();  // 91400 for 9.14.0; no GPU needed
  env.cudnn_version =
      std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100);
  if (cudaDriverGetVersion(&env.driver_version) != cudaSuccess || env.driver_version == 0) {
    env.driver_version = 0;
    env.why_none = "no NVIDIA driver found (libcuda.so.1 is not loadable)";
    return;
  }
  // Checked before any device call: with too old a driver the runtime only says "insufficient driver".
  if (std::string why = driver_problem(env.driver_version, env.runtime_version); !why.empty()) {
    env.why_none = why;
    return;
  }
  int count = 0;
  if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    env.why_none = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    return;
  }
  if (count == 0) {
    env.why_none = "no CUDA device";
    return;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    GpuDevice d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.multiprocessors = prop.multiProcessorCount;
    d.l2_bytes = prop.l2CacheSize;
    d.uuid = uuid_string(prop.uuid);
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess)
      d.pci_bus_id = bus;
    else
      cudaGetLastError();
    const DeviceCode code = code_for_device(built_cuda_architectures(), d.cc_major, d.cc_minor);
    d.code = code.runs ? code.code : "";
    d.cannot_run = code.runs ? "" : code.why_not;
    env.devices.push_back(d);
  }
  if (env.devices.empty()) env.why_none = "CUDA devices could not be queried";
}

int kernel_code_arch(int device, std::string* why) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) {
    cudaGetLastError();
    if (cudaSetDevice(device) != cudaSuccess) {
      cudaGetLastError();
      if (why != nullptr) *why = "cannot select CUDA device " + std::to_string(device);
      return -1;
    }
  }
  kernels::KernelImage image;
  if (const cudaError_t e = kernels::probe_kernel_image(&image); e != cudaSuccess) {
    if (why != nullptr) *why = std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
    return -1;
  }
  return image.ptx_version;
}

std::unique_ptr<TimingSource> cupti_source(std::string* why_not) {
  auto source = gpu::make_cupti_timing_source();
  if (!source && why_not != nullptr) *why_not = gpu::cupti_unavailable_reason();
  return source;
}

bool memory_use(int device, int64_t* used_bytes, int64_t* total_bytes) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) {
    cudaGetLastError();  // clear a sticky "no device" from the probe
    return false;
  }
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  *used_bytes = static_cast<int64_t>(total - free_bytes);
  *total_bytes = static_cast<int64_t>(total);
  return true;
}

bool create_context(int device) {
  if (cudaSetDevice(device) == cudaSuccess && cudaFree(nullptr) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

const Api kApi = [] {
  Api a;
  a.api_version = kApiVersion;
  a.build_id = gpu::plugin_build_id();
  a.cuda_architectures = MNV2_CUDA_ARCHITECTURES;
  a.query_environment = &query_environment;
  a.kernel_code_arch = &kernel_code_arch;
  a.make_cudnn_backend = &make_cudnn_backend;
  a.make_cuda_backend = &make_cuda_backend;
  a.lab_nvrtc_compile = &lab_nvrtc_compile;
  a.make_cuda_lab_backend = &make_cuda_lab_backend;
  a.lab_module_info = &cuda_backend::lab_module_info;
  a.make_event_timing_source = &gpu::make_event_timing_source_with_warnings;
  a.make_cupti_timing_source = &cupti_source;
  a.make_event_run_timer = &gpu::make_event_run_timer;
  a.calibrate = &gpu::calibrate_device;
  a.calibration_key = &gpu::calibration_key;
  a.memory_use = &memory_use;
  a.create_context = &create_context;
  return a;
}();

}  // namespace
}  // namespace gpu_plugin
}  // namespace mnv2

extern "C" __attribute__((visibility("default"))) const mnv2::gpu_plugin::Api* mnv2_gpu_plugin_api_v1() {
  return &mnv2::gpu_plugin::kApi;
}
