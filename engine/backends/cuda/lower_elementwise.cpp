// Lowering of the separate elementwise passes: the clip and the residual add the fast path could not fuse
// into a convolution's epilogue, and every one of the baseline's.
#include "backends/cuda/lowering.h"
#include "kernels/elementwise.cuh"

namespace mnv2::cuda_backend {

void lower_clip(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  k::ClipParams p;
  p.count = lw.out_shape(i).numel();
  p.dtype = act_type(step);
  p.input = lw.step_input(step, layer.inputs.at(0));
  p.output = lw.values[static_cast<size_t>(i)].data;
  p.clip = clip_of(layer);
  launches.push_back([p](cudaStream_t s) { k::launch_clip(p, s); });
}

void lower_add(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const Layer& layer = lw.layer(i);
  k::AddParams p;
  p.count = lw.out_shape(i).numel();
  p.dtype = act_type(step);
  p.a = lw.step_input(step, layer.inputs.at(0));
  p.b = lw.step_input(step, layer.inputs.at(1));
  p.output = lw.values[static_cast<size_t>(i)].data;
  launches.push_back([p](cudaStream_t s) { k::launch_add(p, s); });
}

}  // namespace mnv2::cuda_backend
