// Lowering of the global average pool: NHWC maps on the fast path (and, in fp16, the input's half copy), the
// NCHW float32 network input or the baseline's NCHW maps otherwise.
#include "backends/cuda/lowering.h"
#include "kernels/global_avg_pool.cuh"

namespace mnv2::cuda_backend {

void lower_pool(Lowering& lw, const CudaStep& step, std::vector<Launch>& launches) {
  const int i = step.layers.front();
  const int in = lw.layer(i).inputs.at(0);
  const Shape& xs = lw.shape_of(in);
  const bool fast = lw.plan.config.cuda.variant == CudaOptions::Variant::fast;
  k::GlobalAvgPoolParams p;
  p.batch = checked_int(xs.n, "batch");
  p.channels = checked_int(xs.c, "channels");
  p.plane = xs.h * xs.w;
  p.dtype = lw.act;
  p.layout = fast && (in != kNetworkInput || step.reads_input_copy) ? k::Layout::nhwc : k::Layout::nchw;
  p.input = lw.step_input(step, in);
  p.output = lw.values[static_cast<size_t>(i)].data;
  launches.push_back([p](cudaStream_t s) { k::launch_global_avg_pool(p, s); });
}

}  // namespace mnv2::cuda_backend
