// 8-bit HWC -> normalised float32 NCHW (see input_u8.cuh): the table in shared memory, each thread four
// consecutive pixels (12 bytes in, a 16-byte store per channel plane where the plane allows it).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/input_u8.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kPixelsPerThread = 4;
constexpr int64_t kMaxGridY = 65535;

__global__ void __launch_bounds__(kThreads) normalise_u8_kernel(const NormaliseU8Params p, int64_t image0) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  __shared__ float table[3][256];
  for (int i = threadIdx.x; i < 3 * 256; i += kThreads) table[i / 256][i % 256] = p.table[i];
  __syncthreads();
  const int64_t image = image0 + blockIdx.y;
  const int64_t px0 = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * kPixelsPerThread;
  if (px0 >= p.pixels) return;
  const uint8_t* in = p.input + (image * p.pixels + px0) * 3;
  float* out = p.output + image * 3 * p.pixels + px0;
  const int s0 = p.source[0], s1 = p.source[1], s2 = p.source[2];
  if (px0 + kPixelsPerThread <= p.pixels && p.pixels % 4 == 0) {
    // 12 bytes at a multiple of 12 bytes into a 4-byte aligned image: three 4-byte loads.
    uint32_t w[3];
    const uint32_t* in32 = reinterpret_cast<const uint32_t*>(in);
    w[0] = __ldg(in32);
    w[1] = __ldg(in32 + 1);
    w[2] = __ldg(in32 + 2);
    uint8_t b[12];
#pragma unroll
    for (int i = 0; i < 12; ++i) b[i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
    const int src[3] = {s0, s1, s2};
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const float4 v{table[c][b[src[c]]], table[c][b[3 + src[c]]], table[c][b[6 + src[c]]], table[c][b[9 + src[c]]]};
      *reinterpret_cast<float4*>(out + c * p.pixels) = v;
    }
    return;
  }
  const int64_t count = min(static_cast<int64_t>(kPixelsPerThread), p.pixels - px0);
  for (int64_t i = 0; i < count; ++i) {
    out[i] = table[0][__ldg(in + 3 * i + s0)];
    out[p.pixels + i] = table[1][__ldg(in + 3 * i + s1)];
    out[2 * p.pixels + i] = table[2][__ldg(in + 3 * i + s2)];
  }
}

}  // namespace

void launch_normalise_u8(const NormaliseU8Params& p, cudaStream_t stream) {
  if (p.images < 0 || p.pixels < 0 || p.input == nullptr || p.table == nullptr || p.output == nullptr)
    throw Error("normalise_u8: null buffer or negative size");
  for (int s : p.source)
    if (s < 0 || s > 2) throw Error("normalise_u8: a channel's source byte must be 0..2");
  if (p.images == 0 || p.pixels == 0) return;
  if (reinterpret_cast<uintptr_t>(p.input) % 4 != 0 || reinterpret_cast<uintptr_t>(p.output) % 16 != 0)
    throw Error("normalise_u8: the input must be 4-byte and the output 16-byte aligned");
  const int64_t per_block = int64_t{kThreads} * kPixelsPerThread;
  const int64_t blocks = (p.pixels + per_block - 1) / per_block;
  if (blocks > 0x7fffffff) throw Error("normalise_u8: image too large");
  for (int64_t i0 = 0; i0 < p.images; i0 += kMaxGridY) {
    const int64_t count = std::min(kMaxGridY, p.images - i0);
    normalise_u8_kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(count)), kThreads, 0, stream>>>(p,
                                                                                                                    i0);
    MNV2_CHECK_LAUNCH("normalise_u8");
  }
}

}  // namespace mnv2::kernels
