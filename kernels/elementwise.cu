// Elementwise clip and add (see elementwise.cuh): grid-stride loops over float4s (or floats).
#include <algorithm>

#include "kernels/elementwise.cuh"

namespace mnv2::kernels {
namespace {

// Enough blocks to fill every multiprocessor several times over; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = 4096;

template <int kW>
__global__ void __launch_bounds__(kBlockThreads) clip_kernel(const ClipParams p) {
  using V = Vec<kW>;
  const int64_t n = p.count / kW;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    V::store(p.output + i * kW, V::clip(V::load_plain(p.input + i * kW), p.clip));
}

template <int kW>
__global__ void __launch_bounds__(kBlockThreads) add_kernel(const AddParams p) {
  using V = Vec<kW>;
  const int64_t n = p.count / kW;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    V::store(p.output + i * kW, V::add(V::load_plain(p.a + i * kW), V::load_plain(p.b + i * kW)));
}

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(items, kBlockThreads), 1, kMaxBlocks));
}

}  // namespace

// Plain (coherent) loads: the output may be the input.
void launch_clip(const ClipParams& p, cudaStream_t stream) {
  if (p.count < 1 || p.input == nullptr || p.output == nullptr) throw Error("clip: empty or null operand");
  if (!p.clip.enabled) throw Error("clip: no bounds given");
  if (p.count % 4 == 0 && aligned16(p.input) && aligned16(p.output)) {
    clip_kernel<4><<<blocks_for(p.count / 4), kBlockThreads, 0, stream>>>(p);
  } else {
    clip_kernel<1><<<blocks_for(p.count), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("clip");
}

void launch_add(const AddParams& p, cudaStream_t stream) {
  if (p.count < 1 || p.a == nullptr || p.b == nullptr || p.output == nullptr) throw Error("add: empty or null operand");
  if (p.count % 4 == 0 && aligned16(p.a) && aligned16(p.b) && aligned16(p.output)) {
    add_kernel<4><<<blocks_for(p.count / 4), kBlockThreads, 0, stream>>>(p);
  } else {
    add_kernel<1><<<blocks_for(p.count), kBlockThreads, 0, stream>>>(p);
  }
  MNV2_CHECK_LAUNCH("add");
}

}  // namespace mnv2::kernels
