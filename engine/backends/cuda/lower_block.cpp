// Lowering of the fusion block's steps: a whole inverted-residual block (the three convolutions' weights packed as
// the kernels read them, kernels/fused_block.cuh: fp16, half matrices and float32 depthwise weights and biases;
// tf32, float32 throughout with the matrices rounded to TF32; fp32, float32 throughout; zero-padded), and the stem +
// first block (fused_stem.cuh); one launch each.
#include <cstdint>
#include <vector>

#include "backends/cuda/lowering.h"
#include "kernels/fused_block.cuh"
#include "kernels/fused_stem.cuh"
#include "mnv2/error.h"

namespace mnv2::cuda_backend {

void lower_fused_block(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  if (step.layers.size() < 5) throw Error("cuda: step '" + step.name + "' is no inverted-residual block");
  // The step's precision as planned: half storage (fp16), float32 storage on tensor cores (tf32), or FFMA (fp32).
  const bool half = step.half;
  const bool tf32 = !half && step.tensor_cores;
  const int i = step.layers.front();
  const Layer& expand = lw.layer(i);
  const Layer& dw = lw.layer(i + 2);
  const Layer& project = lw.layer(i + 4);
  const int in = expand.inputs.at(0);
  k::FusedBlockParams p;
  p.shape = fused_block_shape(expand, dw, project, lw.shape_of(in), lw.out_shape(i + 4), step.residual >= 0);
  const k::FusedBlockShape& s = p.shape;
  if (s.residual && step.residual != in)
    throw Error("cuda: step '" + step.name + "' adds a residual other than the block's input");
  const bool tc = half || tf32;
  const k::FusedBlockWeights w =
      k::fused_block_pack(s, tc ? k::fused_block_padding(s) : k::fused_block_ffma_padding(s), expand.weight,
                          expand.bias, dw.weight, dw.bias, project.weight, project.bias);
  p.input = lw.nhwc_input(in);
  // Half in fp16, TF32-rounded float32 in tf32 (the kernel reads them without rounding), float32 in fp32.
  p.expand_weight = tf32 ? lw.upload(k::to_tf32(w.expand)) : lw.upload_gemm_weights(step, w.expand);
  p.expand_bias = lw.upload(w.expand_bias);
  p.expand_clip = clip_of(lw.layer(step.clip_layer));
  p.dw_weight = lw.upload(w.dw);
  p.dw_bias = lw.upload(w.dw_bias);
  p.dw_clip = clip_of(lw.layer(step.dw_clip_layer));
  p.project_weight = tf32 ? lw.upload(k::to_tf32(w.project)) : lw.upload_gemm_weights(step, w.project);
  p.project_bias = lw.upload(w.project_bias);
  p.output = lw.values[static_cast<size_t>(step.output_layer)].data;
  p.weights_before_wait = lw.plan.weights_before_wait;
  if (tc) {
    const k::FusedBlockVariant v{step.launch.tile_h, step.launch.tile_w, step.launch.items,
                                 tf32 ? k::FusedBlockMath::tf32 : k::FusedBlockMath::f16, step.launch.block_splits};
    if (v.splits > 1) {  // the split-K GEMMs' workspace and counters (the planner sized them for this step too)
      p.partials = lw.gemm_workspace;
      p.tile_counters = lw.gemm_tile_counters;
    }
    launches.push_back([p, v](cudaStream_t st) { k::launch_fused_block(p, v, st); });
  } else {
    const k::FusedBlockFfmaVariant v{step.launch.tile_h, step.launch.tile_w, step.launch.px, step.launch.nc};
    launches.push_back([p, v](cudaStream_t st) { k::launch_fused_block_ffma(p, v, st); });
  }
}

// The stem and the first block (fusion block at the network input): the three convolutions' weights packed into one
// float32 buffer (kernels/fused_stem.cuh), which each block stages in shared memory.
void lower_fused_stem(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  if (step.layers.size() != 5) throw Error("cuda: step '" + step.name + "' is no stem + first block");
  const int i = step.layers.front();
  const Layer& stem = lw.layer(i);
  const Layer& dw = lw.layer(i + 2);
  const Layer& project = lw.layer(i + 4);
  k::FusedStemParams p;
  p.shape = fused_stem_shape(stem, dw, project, lw.shape_of(stem.inputs.at(0)), lw.out_shape(i), lw.out_shape(i + 4),
                             act_type(step));
  const k::FusedStemShape& s = p.shape;
  p.input = static_cast<const float*>(lw.input.data);
  p.weights =
      lw.upload(k::fused_stem_pack(s, stem.weight, stem.bias, dw.weight, dw.bias, project.weight, project.bias));
  p.stem_clip = clip_of(lw.layer(step.clip_layer));
  p.dw_clip = clip_of(lw.layer(step.dw_clip_layer));
  p.output = lw.values[static_cast<size_t>(step.output_layer)].data;
  p.weights_before_wait = lw.plan.weights_before_wait;
  const k::FusedStemVariant v{step.launch.tile_h};
  launches.push_back([p, v](cudaStream_t st) { k::launch_fused_stem(p, v, st); });
}

}  // namespace mnv2::cuda_backend
