// A prepared network's device memory (device_memory.h).
#include "gpu/device_memory.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <utility>

#include "gpu/check.h"
#include "gpu/device.h"  // device_name
#include "mnv2/error.h"

namespace mnv2::gpu {

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

DeviceMemory::DeviceMemory(std::string who, const PrepareConfig& config) : who_(std::move(who)), config_(config) {}

Error DeviceMemory::out_of_memory(const std::string& what_needs, size_t free_bytes, size_t total_bytes) const {
  const std::string device = device_name(config_.device);
  return Error(who_ + ": out of device memory for batch " + std::to_string(config_.batch) + " at " +
               std::to_string(config_.height) + "x" + std::to_string(config_.width) + ": " + what_needs + "; " +
               gib(free_bytes) + " of " + gib(total_bytes) + " are free" + (device.empty() ? "" : " on " + device));
}

void DeviceMemory::require(size_t bytes, const std::string& what) const {
  size_t free_bytes = 0, total_bytes = 0;
  MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (bytes > free_bytes) throw out_of_memory(what + " need " + gib(bytes), free_bytes, total_bytes);
}

DeviceBuffer DeviceMemory::allocate_scratch(size_t bytes, const std::string& what) const {
  require(bytes, what);
  try {
    return DeviceBuffer(bytes);
  } catch (const Error& e) {
    // Free memory can still be too fragmented, or taken by another process since the check.
    if (std::string(e.what()).find(cudaGetErrorName(cudaErrorMemoryAllocation)) == std::string::npos) throw;
    size_t free_bytes = 0, total_bytes = 0;
    MNV2_CHECK_LOG(cudaMemGetInfo(&free_bytes, &total_bytes));
    throw out_of_memory(what + " need " + gib(bytes) + " (cudaMalloc failed)", free_bytes, total_bytes);
  }
}

void* DeviceMemory::allocate(MemoryUse use, size_t bytes, const std::string& what) {
  DeviceBuffer buffer = allocate_scratch(bytes, what);
  bytes_[static_cast<size_t>(use)] += static_cast<int64_t>(buffer.bytes());
  void* p = buffer.get();
  buffers_.push_back(std::move(buffer));
  return p;
}

PinnedBuffer DeviceMemory::allocate_pinned(size_t bytes, const std::string& what) const {
  try {
    return PinnedBuffer(bytes);
  } catch (const Error& e) {
    throw Error(who_ + ": out of pinned host memory for " + what + " of batch " + std::to_string(config_.batch) + " (" +
                gib(bytes) + "): " + e.what());
  }
}

MemoryReport DeviceMemory::report() const {
  MemoryReport m;
  m.weight_bytes = bytes(MemoryUse::weights);
  m.activation_bytes = bytes(MemoryUse::activations);
  m.workspace_bytes = bytes(MemoryUse::workspace);
  return m;
}

}  // namespace mnv2::gpu
