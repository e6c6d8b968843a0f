// Pointwise convolution as a GEMM (see pointwise_conv.cuh): NHWC makes the 1x1 convolution of a whole batch
// a single row-major GEMM with no data movement, bias per column.
#include <climits>

#include "kernels/pointwise_conv.cuh"

namespace mnv2::kernels {

GemmParams pointwise_gemm_params(const PointwiseConvParams& p) {
  if (p.pixels < 1 || p.pixels > INT_MAX)
    throw Error("pointwise_conv: " + std::to_string(p.pixels) + " pixels outside the GEMM's 1..2^31-1 rows");
  GemmParams g;
  g.m = static_cast<int>(p.pixels);
  g.n = p.out_channels;
  g.k = p.in_channels;
  g.a = p.input;
  g.lda = p.in_channels;
  g.b = p.weight;
  g.b_before_wait = p.weight_before_wait;
  g.ldb = p.out_channels;
  g.c = p.output;
  g.ldc = p.out_channels;
  g.bias_mode = p.bias != nullptr ? BiasMode::per_col : BiasMode::none;
  g.bias = p.bias;
  g.clip = p.clip;
  g.residual = p.residual;
  g.ldr = p.out_channels;
  g.workspace = p.workspace;
  g.tile_counters = p.tile_counters;
  return g;
}

GemmVariant choose_pointwise_variant(const PointwiseConvParams& p, int num_sms, bool allow_split,
                                     const GemmTile* only_tile) {
  return choose_gemm_variant(pointwise_gemm_params(p), num_sms, allow_split, only_tile);
}

void launch_pointwise_conv(const PointwiseConvParams& p, const GemmVariant& v, cudaStream_t stream) {
  if (p.output == p.input || (p.residual != nullptr && p.output == p.residual))
    throw Error("pointwise_conv: the output must not alias the input or the residual");
  launch_gemm(pointwise_gemm_params(p), v, stream);
}

}  // namespace mnv2::kernels
