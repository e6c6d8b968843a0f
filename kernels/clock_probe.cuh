// The GPU's clocks as kernels may read them: %globaltimer (nanoseconds, shared by every SM; its resolution is the
// driver's and the GPU's, measured, never assumed), for in-kernel time stamps.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mnv2::kernels {

// One thread reads %globaltimer `reads` times back to back into out[0 .. reads) (device memory). Throws Error for
// null or non-positive arguments and launch failures.
void launch_globaltimer_reads(uint64_t* out, int reads, cudaStream_t stream);

}  // namespace mnv2::kernels
