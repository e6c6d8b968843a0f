// CUDA environment discovery; without CUDA in the build it reports why there is no GPU.
#include "mnv2/device.h"

#include "profile/gpu_clock.h"

#ifdef MNV2_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif

namespace mnv2 {

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

namespace {

CudaEnvironment query() {
  CudaEnvironment env;
#ifdef MNV2_HAVE_CUDA
  env.built_with_cuda = true;
  cudaRuntimeGetVersion(&env.runtime_version);
  const size_t cudnn = cudnnGetVersion();  // 91400 for 9.14.0
  env.cudnn_version =
      std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100);
  if (cudaDriverGetVersion(&env.driver_version) != cudaSuccess || env.driver_version == 0) {
    env.why_none = "no NVIDIA driver found (libcuda.so is not loadable)";
    return env;
  }
  env.driver_release = nvidia_driver_release();
  int count = 0;
  if (cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    env.why_none = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    return env;
  }
  if (count == 0) {
    env.why_none = "no CUDA device";
    return env;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    GpuDevice d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.multiprocessors = prop.multiProcessorCount;
    d.l2_bytes = prop.l2CacheSize;
    env.devices.push_back(d);
  }
  if (env.devices.empty()) env.why_none = "CUDA devices could not be queried";
#else
  env.why_none = "this build has no CUDA support (configured with MNV2_WITH_CUDA=OFF)";
  env.cudnn_version = "none";
#endif
  return env;
}

}  // namespace

const CudaEnvironment& cuda_environment() {
  static const CudaEnvironment env = query();
  return env;
}

}  // namespace mnv2
