// The GPU's current SM clock, read through NVML when the driver provides it (loaded at run time, so
// machines without a driver still run the program).
#pragma once

namespace mnv2 {

// MHz, or -1 when NVML or the device is not there.
int current_sm_clock_mhz(int device);

}  // namespace mnv2
