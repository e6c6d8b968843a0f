// A fixture for the Kernel lab's scripted test with the fake CLI (tests/ui/fake_mnv2_lab.sh): it "passes"
// with the fake's made-up times (FAKE_US=15); nothing here runs on a GPU.
#include "mnv2_lab/depthwise.cuh"

__global__ void my_depthwise_kernel(const float* __restrict__ in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
