// Elementwise clip and add (see elementwise.cuh): grid-stride loops over 16-byte vectors (or single elements).
#include <algorithm>

#include "kernels/elementwise.cuh"

namespace mnv2::kernels {
namespace {

// Enough blocks to fill every multiprocessor several times over; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = 4096;

// Plain (coherent) loads: the output may be the input.
template <class T, int kW>
__global__ void __launch_bounds__(kBlockThreads) clip_kernel(const ClipParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const int64_t n = p.count / kW;
  const T* in = static_cast<const T*>(p.input);
  T* out = static_cast<T*>(p.output);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v[kW];
    load_floats<T, kW, true>(in + i * kW, v);
    epilogue_store<T, kW>(out + i * kW, v, nullptr, p.clip, nullptr);
  }
}

template <class T, int kW>
__global__ void __launch_bounds__(kBlockThreads) add_kernel(const AddParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const int64_t n = p.count / kW;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  T* out = static_cast<T*>(p.output);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float x[kW], y[kW];
    load_floats<T, kW, true>(a + i * kW, x);
    load_floats<T, kW, true>(b + i * kW, y);
#pragma unroll
    for (int j = 0; j < kW; ++j) x[j] += y[j];
    store_floats<T, kW>(out + i * kW, x);
  }
}

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(items, kBlockThreads), 1, kMaxBlocks));
}

template <class T>
void launch_clip_typed(const ClipParams& p, cudaStream_t stream) {
  constexpr int kW = 16 / sizeof(T);
  if (p.count % kW == 0 && aligned16(p.input) && aligned16(p.output)) {
    clip_kernel<T, kW><<<blocks_for(p.count / kW), kBlockThreads, 0, stream>>>(p);
  } else {
    clip_kernel<T, 1><<<blocks_for(p.count), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("clip");
}

template <class T>
void launch_add_typed(const AddParams& p, cudaStream_t stream) {
  constexpr int kW = 16 / sizeof(T);
  if (p.count % kW == 0 && aligned16(p.a) && aligned16(p.b) && aligned16(p.output)) {
    add_kernel<T, kW><<<blocks_for(p.count / kW), kBlockThreads, 0, stream>>>(p);
  } else {
    add_kernel<T, 1><<<blocks_for(p.count), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("add");
}

}  // namespace

void launch_clip(const ClipParams& p, cudaStream_t stream) {
  if (p.count < 1 || p.input == nullptr || p.output == nullptr) throw Error("clip: empty or null operand");
  if (!p.clip.enabled) throw Error("clip: no bounds given");
  if (p.dtype == DType::f16) return launch_clip_typed<__half>(p, stream);
  return launch_clip_typed<float>(p, stream);
}

void launch_add(const AddParams& p, cudaStream_t stream) {
  if (p.count < 1 || p.a == nullptr || p.b == nullptr || p.output == nullptr) throw Error("add: empty or null operand");
  if (p.dtype == DType::f16) return launch_add_typed<__half>(p, stream);
  return launch_add_typed<float>(p, stream);
}

}  // namespace mnv2::kernels
