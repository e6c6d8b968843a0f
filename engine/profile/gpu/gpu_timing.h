// Engine-internal entry points of the GPU timing sources (CUDA builds only), used by profile/timing.cpp
// beyond what mnv2/timing.h declares.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnv2/timing.h"

namespace mnv2::gpu {

// A cudaEvent source that reports `warnings` (e.g. why CUPTI was not used) beside its own.
std::unique_ptr<TimingSource> make_event_timing_source_with_warnings(std::vector<std::string> warnings);

// An event pair recorded at run_begin / run_end on the backend's stream.
std::unique_ptr<RunTimer> make_event_run_timer();

}  // namespace mnv2::gpu
