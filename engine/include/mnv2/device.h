// What the machine offers for GPU work: CUDA devices, driver and runtime versions, or why there are none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnv2 {

struct GpuDevice {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability
  int64_t memory_bytes = 0;
  int multiprocessors = 0;
  int l2_bytes = 0;
};

struct CudaEnvironment {
  bool built_with_cuda = false;
  int driver_version = 0;   // CUDA version the driver supports, e.g. 13000 for 13.0; 0 when no driver
  std::string driver_release;  // the NVIDIA driver itself, e.g. "580.159.04" (NVML); empty when unknown
  int runtime_version = 0;  // CUDA runtime this build uses
  std::string cudnn_version;  // the cuDNN library loaded, e.g. "9.14.0" (no GPU needed); "none" without CUDA
  std::vector<GpuDevice> devices;
  std::string why_none;  // set when devices is empty: "no CUDA driver", "no CUDA device", ...
};

// Queried once per process and cached; never throws.
const CudaEnvironment& cuda_environment();

// "13.0" from 13000.
std::string cuda_version_string(int version);

}  // namespace mnv2
