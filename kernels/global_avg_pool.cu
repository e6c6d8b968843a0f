// Global average pooling (see global_avg_pool.cuh). The sum is scaled by 1/plane in float32, as the cpu
// reference does.
#include "kernels/global_avg_pool.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kWarp = 32;

template <int kW>
__global__ void __launch_bounds__(kBlockThreads) pool_nhwc_kernel(const GlobalAvgPoolParams p) {
  using V = Vec<kW>;
  const int groups = p.channels / kW;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<int64_t>(p.batch) * groups) return;
  const int64_t n = idx / groups;
  const int c = static_cast<int>(idx % groups) * kW;
  const float* x = p.input + n * p.plane * p.channels + c;
  typename V::Type sum = V::zero();
  // Unrolled so several loads are in flight at once (at batch 1 only a few hundred threads run this).
#pragma unroll 7
  for (int64_t i = 0; i < p.plane; ++i) sum = V::add(sum, V::load(x + i * p.channels));
  V::store(p.output + n * p.channels + c, V::scale(sum, 1.0f / static_cast<float>(p.plane)));
}

__global__ void __launch_bounds__(kBlockThreads) pool_nchw_kernel(const GlobalAvgPoolParams p) {
  const int64_t plane_index = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (plane_index >= static_cast<int64_t>(p.batch) * p.channels) return;  // whole warps leave together
  const float* x = p.input + plane_index * p.plane;
  float sum = 0.0f;
  for (int64_t i = lane; i < p.plane; i += kWarp) sum += __ldg(x + i);
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) p.output[plane_index] = sum * (1.0f / static_cast<float>(p.plane));
}

}  // namespace

void launch_global_avg_pool(const GlobalAvgPoolParams& p, cudaStream_t stream) {
  if (p.batch < 1 || p.channels < 1 || p.plane < 1) throw Error("global_avg_pool: sizes must be positive");
  if (p.input == nullptr || p.output == nullptr) throw Error("global_avg_pool: null operand");
  if (p.layout == Layout::nhwc) {
    const bool vec = p.channels % 4 == 0 && aligned16(p.input) && aligned16(p.output);
    const int64_t threads = static_cast<int64_t>(p.batch) * (vec ? p.channels / 4 : p.channels);
    const auto blocks = static_cast<unsigned>(ceil_div(threads, kBlockThreads));
    if (vec) {
      pool_nhwc_kernel<4><<<blocks, kBlockThreads, 0, stream>>>(p);
    } else {
      pool_nhwc_kernel<1><<<blocks, kBlockThreads, 0, stream>>>(p);
    }
  } else {
    const int64_t threads = static_cast<int64_t>(p.batch) * p.channels * kWarp;
    pool_nchw_kernel<<<static_cast<unsigned>(ceil_div(threads, kBlockThreads)), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("global_avg_pool");
}

}  // namespace mnv2::kernels
