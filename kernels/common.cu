// The launch checks and the kernel-image probe declared in common.cuh.
#include <string_view>

#include "kernels/common.cuh"

namespace mnv2::kernels {
namespace {

std::string_view base_name(std::string_view file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

// Does nothing; exists so probe_kernel_image() can ask whether this binary has code for the device.
__global__ void probe_kernel() {}

}  // namespace

void check_launch(const char* op, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();  // also clears a non-sticky error
  if (status == cudaSuccess) return;
  throw Error(std::string(op) + ": kernel launch failed at " + std::string(base_name(file)) + ":" +
              std::to_string(line) + ": " + describe(status));
}

void check_call(cudaError_t status, const char* op, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  std::string_view name(call);
  if (const size_t paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  throw Error(std::string(op) + ": " + std::string(name) + " failed at " + std::string(base_name(file)) + ":" +
              std::to_string(line) + ": " + describe(status));
}

int smem_optin_limit() {
  static const int limit = [] {
    int device = 0, optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
      cudaGetLastError();
      return 48 * 1024;
    }
    return optin;
  }();
  return limit;
}

cudaError_t probe_kernel_image(KernelImage* image) {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, probe_kernel);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return status;
  }
  if (image != nullptr) {
    image->ptx_version = attributes.ptxVersion;
    image->binary_version = attributes.binaryVersion;
  }
  return status;
}

}  // namespace mnv2::kernels
