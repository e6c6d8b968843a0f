// A whole inverted-residual block in one kernel: expansion 1x1 + bias + clip, depthwise 3x3 (stride 1 or 2) +
// bias + clip, projection 1x1 + bias (+ the residual, the block's input), NHWC activations; the expanded maps never
// leave shared memory. Two kernels:
//   fp16 (tiles.h: FusedBlock*): half activations, float32 accumulation in the 1x1 convolutions (tensor cores),
//     half in the depthwise (half2 FMA over the 9 taps from the bias, as cuDNN's fp16 depthwise). Needs code
//     compiled for compute_80 or newer (mma.sync m16n8k16, cp.async): the launch refuses older code.
//   ffma (tiles.h: FusedBlockFfma*): float32 activations and weights, strict FFMA (no tensor cores), every
//     architecture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common.cuh"

namespace mnv2::kernels {

// The weights as the kernels read them (fused_block_pack), float32: matrices zero-padded to the layout's sizes,
// depthwise weights and biases padded to e_pad (co_pad for the projection's bias). The fp16 kernel takes the two
// matrices as half (Lowering::upload_gemm_weights rounds them) and rounds the depthwise weights and bias to half as
// it stages them. Padded expanded channels have zero weights and biases, so they contribute nothing.
struct FusedBlockWeights {
  std::vector<float> expand;        // [k_pad][e_pad]: row k holds every expanded channel's weight
  std::vector<float> expand_bias;   // [e_pad]
  std::vector<float> dw;            // [9][e_pad], tap-major
  std::vector<float> dw_bias;       // [e_pad]
  std::vector<float> project;       // [e_pad][co_pad]
  std::vector<float> project_bias;  // [co_pad]
};
// The padded sizes a kernel's packing needs: fused_block_padding (fp16, from fused_block_layout) or
// fused_block_ffma_padding (fp32, from fused_block_ffma_layout); neither depends on the tile.
struct FusedBlockPadding {
  int k_pad = 0, e_pad = 0, co_pad = 0;
};
FusedBlockPadding fused_block_padding(const FusedBlockShape& s);
FusedBlockPadding fused_block_ffma_padding(const FusedBlockShape& s);
// From the model's layouts: expand [expanded][in] (ONNX 1x1), dw [expanded][3][3], project [out][expanded];
// empty biases are zeros.
FusedBlockWeights fused_block_pack(const FusedBlockShape& s, const FusedBlockPadding& pad,
                                   const std::vector<float>& expand, const std::vector<float>& expand_bias,
                                   const std::vector<float>& dw, const std::vector<float>& dw_bias,
                                   const std::vector<float>& project, const std::vector<float>& project_bias);

struct FusedBlockParams {
  FusedBlockShape shape;
  const void* input = nullptr;          // NHWC [batch, in_h, in_w, in_channels], half (fp16) or float32 (ffma);
                                        // also the residual
  const void* expand_weight = nullptr;  // FusedBlockWeights::expand on the device (and so on)
  const float* expand_bias = nullptr;
  Clip expand_clip;
  const float* dw_weight = nullptr;
  const float* dw_bias = nullptr;
  Clip dw_clip;
  const void* project_weight = nullptr;
  const float* project_bias = nullptr;
  void* output = nullptr;  // NHWC [batch, out_h, out_w, out_channels] as the input; not the input
  // The weights are written by no kernel that may still be running when this one starts (uploaded before the
  // stream's work): under PDL the first chunk's are loaded before the wait for the previous kernel (common.cuh
  // pdl_wait). false: after it.
  bool weights_before_wait = false;
  // FusedBlockVariant::splits > 1 (else unused): the splits' float32 projections, [splits][batch * out_h * out_w]
  // [co_pad] (fused_block_partials_floats), and one arrival counter per tile (fused_block_blocks), zero before the
  // launch and zero again after it (the last block of each tile resets its counter), as in-kernel split-K
  // (gemm.cuh). The last block of a tile sums the splits in split order, so the output does not depend on which
  // block finishes last.
  float* partials = nullptr;
  unsigned* tile_counters = nullptr;
  // Where not null (the fp16 kernel; mnv2_stage_bench's phase breakdown): thread 0 of each block writes %globaltimer
  // (ns) at the FusedBlockStamp points into stamps[((blockIdx.y * gridDim.x) + blockIdx.x) * kFusedBlockStamps ..];
  // a point the block does not reach (a split's block that is not its tile's last) is left as it was.
  unsigned long long* stamps = nullptr;
};

// The phase boundaries a block stamps (FusedBlockParams::stamps), in the order a block passes them.
enum FusedBlockStamp : int {
  kStampEntry = 0,    // the block started (under PDL possibly before the previous kernel has finished)
  kStampReleased,     // the wait for the previous kernel returned (pdl_wait)
  kStampLanded,       // the input window and the first chunk's weights are in shared memory (every thread)
  kStampComputed,     // thread 0's chunks are expanded, filtered and projected
  kStampArrived,      // split: its partial projection stored and its arrival counted (unsplit: as kStampComputed)
  kStampSummed,       // the tile's last block (or an unsplit one): every split's projection summed
  kStampStored,       // that block's outputs stored
  kFusedBlockStamps,  // values a block
};

// Throws Error for what cannot run (fused_block_refusal, a variant that does not fit, null or misaligned
// operands, code below compute_80).
void launch_fused_block(const FusedBlockParams& p, const FusedBlockVariant& v, cudaStream_t stream);

// A persistent chain of fp16 block launches (issue 33's prototype): one cooperative launch whose blocks walk each
// stage's tiles and splits, with a grid barrier between stages instead of a kernel boundary. prepare_fused_block_chain
// checks every stage as launch_fused_block would (and refuses variants other than fp16 with 2 items a warp), sizes the
// grid from the SM count the device reports and the kernel's occupancy (every block resident, as the barrier needs),
// and copies the stages' descriptors into device_stages (fused_block_chain_bytes, device memory; synchronous);
// launch_fused_block_chain enqueues the launch. Each stage's stamps, partials and counters are its own as in
// launch_fused_block; a stage may read what an earlier one wrote.
struct FusedBlockChain {
  const void* stages = nullptr;
  int count = 0, grid = 0;
  size_t smem = 0;  // dynamic shared memory a block: the largest stage's
};
size_t fused_block_chain_bytes(int stages);
FusedBlockChain prepare_fused_block_chain(const std::vector<FusedBlockParams>& stages,
                                          const std::vector<FusedBlockVariant>& variants, void* device_stages);
void launch_fused_block_chain(const FusedBlockChain& chain, cudaStream_t stream);

// The float32 twin (fused_block_ffma.cu; tiles.h: FusedBlockFfma*): float32 input, output and weights (the
// matrices too), FFMA only, every architecture. Throws Error for what cannot run
// (fused_block_ffma_shape_refusal, fused_block_ffma_variant_refusal, null or misaligned operands).
void launch_fused_block_ffma(const FusedBlockParams& p, const FusedBlockFfmaVariant& v, cudaStream_t stream);

}  // namespace mnv2::kernels
