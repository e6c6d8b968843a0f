// The GPU's current SM clock, read through NVML when the driver provides it (loaded at run time, so
// machines without a driver still run the program).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mnv2 {

// MHz, or -1 when NVML or the device is not there.
int current_sm_clock_mhz(int device);

// Processes holding a compute context on the GPU (NVML's compute running processes, this one included
// while it has a context), or nullopt when NVML or the device is not there. `pids` gets their process ids as
// NVML gives them (in a container they may be the host's, not this namespace's).
std::optional<int> gpu_compute_processes(int device, std::vector<unsigned>* pids = nullptr);

// The NVIDIA kernel driver's release, e.g. "580.159.04"; empty when NVML is not there.
std::string nvidia_driver_release();

}  // namespace mnv2
