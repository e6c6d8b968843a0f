// Which GPU a backend's work runs on and what it is, for both GPU backends: the one reader of a device's properties
// (mnv2/gpu_properties.h), a per-device cache for what a backend probes once, and the checks both backends make before
// they prepare a network (the device ordinal by the engine's one rule, mnv2/device.h gpu_device).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "mnv2/backend.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"

namespace mnv2::gpu {

// The name of visible GPU `device` ("" where there is none), for descriptions and cache keys.
std::string device_name(int device);

// `device`'s properties as the runtime reports them (code_arch 0: the caller knows what code runs there). Throws
// Error where the device cannot be asked.
GpuProperties read_gpu_properties(int device);

// What a backend learns of a device once: whether it is a visible GPU whose properties can be read, and its
// properties (code_arch 0: the hardware's own) with the TF32 rule for them.
struct DeviceProbe {
  bool ok = false;
  std::string reason;        // why not, where not ok
  GpuProperties gpu;         // what the planners read of the device
  std::string tf32_why_not;  // tf32_refusal(gpu) ("" where tf32 runs)
};
DeviceProbe probe_device(int device);

// `device` current for the calling thread while this lives; the previous one again afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// What a backend asks once per device and keeps for the process (its probe): made by `make` on the first
// get(device), from any thread. References stay valid for the process.
template <class T>
class PerDevice {
 public:
  explicit PerDevice(std::function<T(int)> make) : make_(std::move(make)) {}
  const T& get(int device) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(device);
    if (it == values_.end()) it = values_.emplace(device, std::make_unique<const T>(make_(device))).first;
    return *it->second;
  }

 private:
  std::function<T(int)> make_;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<const T>> values_;
};

// What a GPU backend answers for one device before preparing there.
struct DeviceSupport {
  Availability availability;  // whether the backend runs on the device at all
  std::string tf32_why_not;   // tf32_refusal for the device and the backend's code ("" when tf32 runs)
};

// The checks both GPU backends make before preparing, in this order, each throwing with `who` ("cuda") first:
// a positive batch and input size (UsageError); a GPU at all (Error: not available, and why); a visible device
// (gpu_device's UsageError, naming the ordinal and the GPUs there are); the backend available there (Error); tf32
// only where it runs there (Error saying why); every layer supported (Error naming the layer). `support` is asked
// for config.device only once the ordinal is good.
void check_prepare(const Backend& backend, const std::string& who, const Model& model, const PrepareConfig& config,
                   const std::function<DeviceSupport(int device)>& support);

}  // namespace mnv2::gpu
