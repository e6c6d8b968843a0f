// Global average pooling (see global_avg_pool.cuh). The sum is scaled by 1/plane in float32, as the cpu
// reference does.
#include "kernels/global_avg_pool.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kWarp = 32;

template <class T, int kW>
__global__ void __launch_bounds__(kBlockThreads) pool_nhwc_kernel(const GlobalAvgPoolParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const int groups = p.channels / kW;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<int64_t>(p.batch) * groups) return;
  const int64_t n = idx / groups;
  const int c = static_cast<int>(idx % groups) * kW;
  const T* x = static_cast<const T*>(p.input) + n * p.plane * p.channels + c;
  float sum[kW];
#pragma unroll
  for (int j = 0; j < kW; ++j) sum[j] = 0.0f;
    // Unrolled so several loads are in flight at once (at batch 1 only a few hundred threads run this).
#pragma unroll 7
  for (int64_t i = 0; i < p.plane; ++i) {
    float v[kW];
    load_floats<T, kW>(x + i * p.channels, v);
#pragma unroll
    for (int j = 0; j < kW; ++j) sum[j] += v[j];
  }
  const float scale = 1.0f / static_cast<float>(p.plane);
#pragma unroll
  for (int j = 0; j < kW; ++j) sum[j] *= scale;
  store_floats<T, kW>(static_cast<T*>(p.output) + n * p.channels + c, sum);
}

template <class T>
void launch_nhwc(const GlobalAvgPoolParams& p, cudaStream_t stream) {
  constexpr int kW = 16 / sizeof(T);
  const bool vec = p.channels % kW == 0 && aligned16(p.input) && aligned16(p.output);
  const int64_t threads = static_cast<int64_t>(p.batch) * (vec ? p.channels / kW : p.channels);
  const auto blocks = static_cast<unsigned>(ceil_div(threads, kBlockThreads));
  if (vec) {
    pool_nhwc_kernel<T, kW><<<blocks, kBlockThreads, 0, stream>>>(p);
  } else {
    pool_nhwc_kernel<T, 1><<<blocks, kBlockThreads, 0, stream>>>(p);
  }
}

__global__ void __launch_bounds__(kBlockThreads) pool_nchw_kernel(const GlobalAvgPoolParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const int64_t plane_index = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (plane_index >= static_cast<int64_t>(p.batch) * p.channels) return;  // whole warps leave together
  const float* x = static_cast<const float*>(p.input) + plane_index * p.plane;
  float sum = 0.0f;
  for (int64_t i = lane; i < p.plane; i += kWarp) sum += __ldg(x + i);
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) static_cast<float*>(p.output)[plane_index] = sum * (1.0f / static_cast<float>(p.plane));
}

}  // namespace

void launch_global_avg_pool(const GlobalAvgPoolParams& p, cudaStream_t stream) {
  if (p.batch < 1 || p.channels < 1 || p.plane < 1) throw Error("global_avg_pool: sizes must be positive");
  if (p.input == nullptr || p.output == nullptr) throw Error("global_avg_pool: null operand");
  if (p.layout == Layout::nchw && p.dtype != DType::f32) throw Error("global_avg_pool: NCHW input is float32 only");
  if (p.layout == Layout::nhwc) {
    if (p.dtype == DType::f16) {
      launch_nhwc<__half>(p, stream);
    } else {
      launch_nhwc<float>(p, stream);
    }
  } else {
    const int64_t threads = static_cast<int64_t>(p.batch) * p.channels * kWarp;
    pool_nchw_kernel<<<static_cast<unsigned>(ceil_div(threads, kBlockThreads)), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("global_avg_pool");
}

}  // namespace mnv2::kernels
