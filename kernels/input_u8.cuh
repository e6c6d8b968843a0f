// The end-to-end input path's conversion on the GPU: 8-bit RGB images, interleaved (HWC), into the network
// input, float32 NCHW, through a per-channel lookup table of the 256 byte values. The host computes the table
// (mnv2/image.h InputNormaliser), so the GPU reproduces the host's normalisation bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mnv2::kernels {

struct NormaliseU8Params {
  int64_t images = 0;
  int64_t pixels = 0;              // height * width of each image
  const uint8_t* input = nullptr;  // [images, pixels, 3] bytes
  const float* table = nullptr;    // [3][256] on the device: output channel c, byte value v
  int source[3] = {0, 1, 2};       // which byte of a pixel each output channel reads (2, 1, 0 for BGR)
  float* output = nullptr;         // [images, 3, pixels]
};

void launch_normalise_u8(const NormaliseU8Params& p, cudaStream_t stream);

}  // namespace mnv2::kernels
