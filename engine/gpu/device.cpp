// The device properties reader, the device probe and the checks before prepare (device.h).
#include "gpu/device.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "backends/layer_checks.h"  // layer_label
#include "gpu/check.h"
#include "gpu/device_memory.h"
#include "mnv2/device.h"
#include "mnv2/error.h"

namespace mnv2::gpu {
namespace {

const GpuDevice* find_device(int device) {
  for (const GpuDevice& d : cuda_environment().devices)
    if (d.index == device) return &d;
  return nullptr;
}

}  // namespace

std::string device_name(int device) {
  const GpuDevice* d = find_device(device);
  return d != nullptr ? d->name : std::string();
}

GpuProperties read_gpu_properties(int device) {
  auto attribute = [device](cudaDeviceAttr a) {
    int v = 0;
    MNV2_CHECK_CUDA(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  GpuProperties g;
  g.name = device_name(device);
  g.cc_major = attribute(cudaDevAttrComputeCapabilityMajor);
  g.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor);
  g.sm_count = attribute(cudaDevAttrMultiProcessorCount);
  g.smem_per_block_optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  g.smem_per_sm = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  g.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor);
  g.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  g.max_blocks_per_sm = attribute(cudaDevAttrMaxBlocksPerMultiprocessor);
  g.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate);
  g.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth);
  g.sm_clock_khz = attribute(cudaDevAttrClockRate);
  return g;
}

DeviceProbe probe_device(int device) {
  DeviceProbe p;
  if (const std::string why = why_no_gpu(); !why.empty()) {  // what availability() says where there is no GPU
    p.reason = why;
    return p;
  }
  try {
    gpu_device(device);  // a visible GPU, or why not
    p.gpu = read_gpu_properties(device);
  } catch (const Error& e) {
    p.reason = e.what();
    return p;
  }
  p.ok = true;
  p.tf32_why_not = tf32_refusal(p.gpu);
  return p;
}

DeviceScope::DeviceScope(int device) {
  MNV2_CHECK_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device) MNV2_CHECK_CUDA(cudaSetDevice(device));
}

DeviceScope::~DeviceScope() {
  int current = -1;
  if (previous_ >= 0 && MNV2_CHECK_LOG(cudaGetDevice(&current)) && current != previous_)
    MNV2_CHECK_LOG(cudaSetDevice(previous_));
}

void check_prepare(const Backend& backend, const std::string& who, const Model& model, const PrepareConfig& config,
                   const std::function<DeviceSupport(int device)>& support) {
  if (config.batch < 1 || config.height < 1 || config.width < 1)
    throw UsageError(who + ": batch, height and width must be positive (got batch " + std::to_string(config.batch) +
                     ", " + std::to_string(config.height) + "x" + std::to_string(config.width) + ")");
  if (const std::string why = why_no_gpu(); !why.empty()) throw Error(who + ": not available: " + why);
  try {
    gpu_device(config.device);
  } catch (const UsageError& e) {
    throw UsageError(who + ": " + e.what());
  }
  const DeviceSupport s = support(config.device);
  if (!s.availability.available) throw Error(who + ": not available: " + s.availability.reason);
  if (config.precision == Precision::tf32 && !s.tf32_why_not.empty())
    throw Error(who + ": " + s.tf32_why_not + " (fp32 and fp16 run here)");
  for (const Layer& layer : model.layers)
    if (auto reason = backend.unsupported_reason(layer)) throw Error(who + ": " + layer_label(layer) + ": " + *reason);
  // The sizes the model and the command declare, against the device's free memory, before any plan, descriptor
  // or buffer is made.
  const Shape input{config.batch, model.input_channels, config.height, config.width};
  const std::vector<LayerStats> stats = analyse(model, config.batch, config.height, config.width);
  const int64_t floor = activation_floor_bytes(model, input, stats, config.precision == Precision::fp16 ? 2 : 4);
  MNV2_CHECK_CUDA(cudaSetDevice(config.device));
  DeviceMemory(who, config)
      .require(static_cast<size_t>(floor),
               "at the least, the input, the logits and the largest layer's input and output held at once");
}

}  // namespace mnv2::gpu
