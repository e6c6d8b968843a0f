// Lowering of the global average pool: NHWC maps on the fast path (and, in fp16, the input's half copy), the
// NCHW float32 network input or the baseline's NCHW maps otherwise.
#include "backends/cuda/lowering.h"
#include "kernels/global_avg_pool.cuh"
#include "mnv2_lab/pool.h"  // kernels/lab/include: the kernel lab's slot header

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
  p.dtype = act_type(step);
  p.layout = fast && (in != kNetworkInput || step.reads_input_copy) ? k::Layout::nhwc : k::Layout::nchw;
  p.input = lw.step_input(step, in);
  p.output = lw.values[static_cast<size_t>(i)].data;
  if (lab_runs(lw, step)) {
    // The kernel lab's slot "pool" (mnv2_lab/pool.h): items = batch * ceil(channels / tile a).
    mnv2_lab::PoolParams u{};
    u.batch = p.batch;
    u.channels = p.channels;
    u.plane = checked_int(p.plane, "pooled map pixels");
    u.layout = p.layout == k::Layout::nhwc ? mnv2_lab::kNHWC : mnv2_lab::kNCHW;
    u.dtype = p.dtype == k::DType::f16 ? mnv2_lab::kF16 : mnv2_lab::kF32;
    u.input = p.input;
    u.output = p.output;
    const int64_t items = int64_t{u.batch} * ((int64_t{u.channels} + lw.lab->tile(0) - 1) / lw.lab->tile(0));
    push_lab_launch(lw, u, items, launches);
    return;
  }
  launches.push_back([p](cudaStream_t s) { k::launch_global_avg_pool(p, s); });
}

}  // namespace mnv2::cuda_backend
