// Kernel lab slot "classifier": the Linear layer (a GEMM with bias), logits[image][o] =
// sum_k input[image][k] * weight[k][o] + bias[o]. The same fields our own GEMMs receive for it (kernels/gemm.cuh,
// kernels/gemm_tc.cuh, as engine/backends/cuda/lower_gemm.cpp lowers a Linear layer): the weights are transposed
// and their rows permuted to the order the input's features are stored in, and the output rows may be padded
// (ld_output > out_features) so that rows start on 16 bytes. The kernel is
//   __global__ void my_kernel(const mnv2_lab::ClassifierParams p)
// and is the module's only __global__ function. Grid rule: one work item = MNV2_LAB_TILE's `a` consecutive output
// features x `b` consecutive images; items = ceil(out_features / a) * ceil(batch / b), feature groups fastest
// (a suggestion: the order is the kernel's); grid.x = ceil(items / threads per block).
#pragma once

#include "mnv2_lab/lab.h"

namespace mnv2_lab {

struct ClassifierParams {
  int batch;           // images: the GEMM's M
  int in_features;     // K: the input map's channels x height x width
  int out_features;    // N: the classes, the columns the check reads
  int ld_weight;       // elements between weight rows (>= out_features; the columns past out_features are zero)
  int ld_output;       // elements between output rows (>= out_features; the columns past it are padding that
                       // nothing reads: writing them is allowed, not required)
  int dtype;           // DType of input and weight (half both in fp16 runs)
  int out_dtype;       // DType of the output: kF32 for the network's logits in every run (a Linear layer that
                       // other layers read stores dtype)
  const void* input;   // [batch][in_features] of dtype: each image's features in the order they are stored (the
                       // pool's [batch][channels] in MobileNetV2); weight rows follow that order
  const void* weight;  // [in_features][ld_weight] of dtype: W transposed (weight[k][o] = W[o][k])
  const float* bias;   // [ld_weight] float32 (zero past out_features), or null
  void* output;        // [batch][ld_output] of out_dtype
};

}  // namespace mnv2_lab
