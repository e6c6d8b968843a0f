// %globaltimer read back to back (clock_probe.cuh).
#include "kernels/clock_probe.cuh"
#include "kernels/common.cuh"

namespace mnv2::kernels {
namespace {

__global__ void globaltimer_reads_kernel(unsigned long long* out, int reads) {
  for (int i = 0; i < reads; ++i) out[i] = globaltimer_ns();
}

}  // namespace

void launch_globaltimer_reads(uint64_t* out, int reads, cudaStream_t stream) {
  if (out == nullptr || reads < 1) throw Error("globaltimer_reads: null output or no reads");
  globaltimer_reads_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<unsigned long long*>(out), reads);
  MNV2_CHECK_LAUNCH("globaltimer_reads");
}

}  // namespace mnv2::kernels
