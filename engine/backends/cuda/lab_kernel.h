// The kernel lab's user kernel inside the cuda backend (mnv2/lab.h): the compiled module loaded into this
// process's context (cudaLibraryLoadData), its one __global__ function, and the launch geometry the source
// declared (MNV2_LAB_BLOCK / MNV2_LAB_TILE / MNV2_LAB_SHARED, kernels/lab/include/mnv2_lab/lab.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "mnv2/lab.h"

namespace mnv2::cuda_backend {

class LabKernel {
 public:
  explicit LabKernel(const LabKernelSpec& spec);  // throws Error naming what is wrong with the module
  ~LabKernel();
  LabKernel(const LabKernel&) = delete;
  LabKernel& operator=(const LabKernel&) = delete;

  const LabKernelSpec& spec() const { return spec_; }
  // Whether the user's kernel runs `layer` in place of ours (the slot matches, and the layer is selected).
  bool replaces(const std::string& slot, int layer) const;
  const std::string& kernel_name() const { return name_; }
  int tile(int i) const { return tile_[i]; }
  dim3 block() const { return block_; }
  int shared_bytes() const { return shared_bytes_; }
  // Launches the kernel for `items` work items (the slot's grid rule) with its one parameter struct.
  void launch(int64_t items, void* params, cudaStream_t stream) const;

 private:
  LabKernelSpec spec_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  std::string name_;
  dim3 block_{256, 1, 1};
  int tile_[2] = {1, 1};
  int shared_bytes_ = 0;
};

}  // namespace mnv2::cuda_backend
