// The factories of the two cpu backends, for the backend registry:
// - `cpu`: the network on oneDNN primitives (fused convolutions in the layout oneDNN prefers), the fast
//   host backend and the fallback on machines without a GPU;
// - `cpu-ref`: the plain float32 reference, layer by layer in NCHW, that every other backend (`cpu` too)
//   is judged against.
// Both run PrepareConfig::cpu_threads threads, or by default env MNV2_CPU_THREADS, else OpenMP's count (see
// cpu_common.h).
#pragma once

#include <memory>

#include "mnv2/backend.h"

namespace mnv2 {

std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cpu_reference_backend();

}  // namespace mnv2
