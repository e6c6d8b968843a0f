// The cpu backend's factory, for the backend registry. The float32 reference every other backend is
// judged against, and the fallback on machines without a GPU.
#pragma once

#include <memory>

#include "mnv2/backend.h"

namespace mnv2 {

// Threads: env MNV2_CPU_THREADS when set (a positive whole number, else UsageError), otherwise what
// OpenMP would use (OMP_NUM_THREADS, or the processors this process may run on).
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace mnv2
