// The user's compiled kernel in the cuda backend (lab_kernel.h).
#include "backends/cuda/lab_kernel.h"

#include <algorithm>
#include <vector>

#include "gpu/check.h"
#include "gpu/plugin_api.h"
#include "mnv2/error.h"
#include "mnv2/input_files.h"

namespace mnv2::cuda_backend {
namespace {

// Reads an int array the source declared with the lab's macros; false (and the error cleared) where absent.
bool read_global(cudaLibrary_t library, const char* name, int* values, size_t count) {
  void* p = nullptr;
  size_t bytes = 0;
  if (cudaLibraryGetGlobal(&p, &bytes, library, name) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (bytes != count * sizeof(int))
    throw Error(std::string("lab: ") + name + " holds " + std::to_string(bytes) + " bytes, not " +
                std::to_string(count) + " int(s): declare it with the mnv2_lab macro");
  MNV2_CHECK_CUDA(cudaMemcpy(values, p, bytes, cudaMemcpyDeviceToHost));
  return true;
}

}  // namespace

LabKernel::LabKernel(const LabKernelSpec& spec) : spec_(spec) {
  constexpr InputBudget kModule{"compiled lab module", 256 * inputs::kMiB};
  const std::vector<uint8_t> image = read_input_bytes(spec.cubin_path, kModule);
  MNV2_CHECK_CUDA(cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  MNV2_CHECK_CUDA(cudaLibraryGetKernelCount(&count, library_));
  if (count != 1) {
    cudaLibraryUnload(library_);
    throw Error("lab: the module holds " + std::to_string(count) +
                " __global__ functions; a slot kernel's module must hold exactly one");
  }
  MNV2_CHECK_CUDA(cudaLibraryEnumerateKernels(&kernel_, 1, library_));
  const char* name = nullptr;
  if (cudaFuncGetName(&name, reinterpret_cast<const void*>(kernel_)) == cudaSuccess && name != nullptr) name_ = name;
  cudaGetLastError();
  int block[3] = {256, 1, 1};
  read_global(library_, "mnv2_lab_block", block, 3);
  read_global(library_, "mnv2_lab_tile", tile_, 2);
  read_global(library_, "mnv2_lab_shared", &shared_bytes_, 1);
  if (block[0] < 1 || block[1] < 1 || block[2] < 1 || int64_t{block[0]} * block[1] * block[2] > 1024)
    throw Error("lab: MNV2_LAB_BLOCK(" + std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                std::to_string(block[2]) + ") is not a block of 1 to 1024 threads");
  if (tile_[0] < 1 || tile_[1] < 1) throw Error("lab: MNV2_LAB_TILE values must be positive");
  if (shared_bytes_ < 0) throw Error("lab: MNV2_LAB_SHARED must not be negative");
  block_ = dim3(static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2]));
  if (shared_bytes_ > 48 * 1024)
    MNV2_CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes_));
}

LabKernel::~LabKernel() {
  if (library_ != nullptr) MNV2_CHECK_LOG(cudaLibraryUnload(library_));
}

bool LabKernel::replaces(const std::string& slot, int layer) const {
  if (slot != spec_.slot) return false;
  return spec_.layers.empty() || std::find(spec_.layers.begin(), spec_.layers.end(), layer) != spec_.layers.end();
}

void LabKernel::launch(int64_t items, void* params, cudaStream_t stream) const {
  const int64_t threads = int64_t{block_.x} * block_.y * block_.z;
  const int64_t blocks = (items + threads - 1) / threads;
  if (blocks < 1 || blocks > 0x7fffffff) throw Error("lab: " + std::to_string(blocks) + " blocks do not fit grid.x");
  void* args[] = {params};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(static_cast<unsigned>(blocks)),
                                         block_, args, static_cast<size_t>(shared_bytes_), stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error("lab kernel '" + name_ + "': launch failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                ")");
  }
}

void lab_module_info(int device, const std::string& cubin_path, gpu_plugin::LabModuleInfo& info) {
  MNV2_CHECK_CUDA(cudaSetDevice(device));
  const LabKernel kernel(LabKernelSpec{"", "", cubin_path, {}});
  info.kernel_name = kernel.kernel_name();
  info.block[0] = static_cast<int>(kernel.block().x);
  info.block[1] = static_cast<int>(kernel.block().y);
  info.block[2] = static_cast<int>(kernel.block().z);
  info.tile[0] = kernel.tile(0);
  info.tile[1] = kernel.tile(1);
  info.shared_bytes = kernel.shared_bytes();
}

}  // namespace mnv2::cuda_backend
