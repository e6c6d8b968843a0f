// Kernel lab slot "pool": the global average pool, the mean over each channel's map,
// [batch, channels, height, width] -> [batch, channels]. The same fields our own kernel receives
// (kernels/global_avg_pool.cuh). The kernel is
//   __global__ void my_kernel(const mnv2_lab::PoolParams p)
// and is the module's only __global__ function. Grid rule: one work item = MNV2_LAB_TILE's `a` consecutive channels
// of one image (`b` is not used: leave it 1); items = batch * ceil(channels / a); grid.x = ceil(items / threads per
// block).
#pragma once

#include "mnv2_lab/lab.h"

namespace mnv2_lab {

struct PoolParams {
  int batch;
  int channels;
  int plane;          // height * width of the map: the count each mean divides by
  int layout;         // Layout of the input: kNHWC on the fast path; kNCHW only for a pool over the network input in
                      // an fp32 run (not in MobileNetV2)
  int dtype;          // DType of input and output (sum in float32 either way)
  const void* input;  // [batch][plane][channels] (kNHWC) or [batch][channels][plane] (kNCHW) of dtype
  void* output;       // [batch][channels] of dtype
};

}  // namespace mnv2_lab
