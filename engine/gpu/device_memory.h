// A prepared network's device memory and its accounting, for both GPU backends: every buffer the network holds,
// counted under what it holds (MemoryReport's weights, activations, workspace), each checked against the free
// device memory before cudaMalloc so an impossible batch is one clear Error naming what needs how much; and the
// same check for the scratch memory prepare() uses and frees (tuning, staging), which is not the network's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/runtime.h"
#include "mnv2/backend.h"

namespace mnv2::gpu {

enum class MemoryUse { weights, activations, workspace };

class DeviceMemory {
 public:
  // `who` ("cuda") starts every message; the configuration's batch, input size and device are named in them.
  DeviceMemory(std::string who, const PrepareConfig& config);

  // `bytes` of device memory (none for 0) held until this goes, counted under `use`. Throws Error ("out of device
  // memory for batch 4096 at 1024x1024: the activations need 5123.45 GiB; 139.20 GiB of 139.72 GiB are free on
  // NVIDIA H200") where the device has not that much free, or cudaMalloc fails for want of it.
  void* allocate(MemoryUse use, size_t bytes, const std::string& what);
  // The same, for memory the caller owns and frees: not the network's, not counted.
  DeviceBuffer allocate_scratch(size_t bytes, const std::string& what) const;
  // Page-locked host memory; Error naming `what` and the batch where the host has none to give.
  PinnedBuffer allocate_pinned(size_t bytes, const std::string& what) const;
  // The out-of-memory Error unless `bytes` (of several allocations to come) are free now.
  void require(size_t bytes, const std::string& what) const;

  int64_t bytes(MemoryUse use) const { return bytes_[static_cast<size_t>(use)]; }
  // The network's bytes as a MemoryReport's three fields (the rest of the report is the profiler's).
  MemoryReport report() const;

 private:
  Error out_of_memory(const std::string& what_needs, size_t free_bytes, size_t total_bytes) const;

  std::string who_;
  PrepareConfig config_;
  std::vector<DeviceBuffer> buffers_;
  int64_t bytes_[3] = {0, 0, 0};
};

// "5.12 GiB".
std::string gib(size_t bytes);

}  // namespace mnv2::gpu
