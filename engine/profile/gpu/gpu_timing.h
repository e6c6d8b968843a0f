// Entry points of the GPU timing sources and the GPU roofline calibration, inside the GPU plugin; the core
// reaches them through the plugin's table (engine/gpu/plugin_entry.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnv2/roofline.h"
#include "mnv2/timing.h"

namespace mnv2::gpu {

// A cudaEvent source that reports `warnings` (e.g. why CUPTI was not used) beside its own.
std::unique_ptr<TimingSource> make_event_timing_source_with_warnings(std::vector<std::string> warnings);

// An event pair recorded at run_begin / run_end on the backend's stream.
std::unique_ptr<RunTimer> make_event_run_timer();

// CUPTI activity records tied to steps; nullptr when CUPTI cannot start (cupti_unavailable_reason() says why).
std::unique_ptr<TimingSource> make_cupti_timing_source();
std::string cupti_unavailable_reason();

// The GPU's ceilings measured in `precision` (profile/gpu/calibration.cpp) and the cache key of a device.
Ceilings calibrate_device(int device, Precision precision);
std::string calibration_key(int device);

}  // namespace mnv2::gpu
