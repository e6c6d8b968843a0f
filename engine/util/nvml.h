// The GPU's current SM clock, read through NVML when the driver provides it (loaded at run time, so
// machines without a driver still run the program).
#pragma once

#include <string>

namespace mnv2 {

// MHz, or -1 when NVML or the device is not there.
int current_sm_clock_mhz(int device);

// The NVIDIA kernel driver's release, e.g. "580.159.04"; empty when NVML is not there.
std::string nvidia_driver_release();

}  // namespace mnv2
