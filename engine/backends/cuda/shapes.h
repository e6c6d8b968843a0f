// What the planner and the lowering of the cuda backend both derive from the model and the GPU: the kernels' view of
// the device, their 32-bit sizes and the problem shapes of the fusion block's kernels (the planner chooses their
// tiles from them, the lowering launches them), written once.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/tiles.h"
#include "mnv2/error.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"

namespace mnv2::cuda_backend {

// What the kernels' tile choosers know of a GPU, derived from its one description (mnv2/gpu_properties.h): the
// planner's presets and a real device's properties (engine/gpu/device.h read_gpu_properties) alike.
inline kernels::DeviceCaps device_caps(const GpuProperties& g) {
  kernels::DeviceCaps c;
  c.num_sms = g.sm_count;
  c.smem_per_block_optin = g.smem_per_block_optin;
  c.smem_per_sm = g.smem_per_sm;
  c.max_threads_per_sm = g.max_threads_per_sm;
  c.max_blocks_per_sm = g.max_blocks_per_sm;
  c.regs_per_sm = g.regs_per_sm;
  c.dram_bytes_per_sm_cycle =
      kernels::dram_bytes_per_sm_cycle(g.memory_clock_khz, g.memory_bus_bits, g.sm_clock_khz, g.sm_count);
  return c;
}

// v as the kernels' int, or Error naming `what`.
inline int checked_int(int64_t v, const std::string& what) {
  if (v < 0 || v > 0x7fffffff) throw Error(what + " (" + std::to_string(v) + ") exceeds the kernels' 32-bit range");
  return static_cast<int>(v);
}

// An inverted-residual block (expansion, depthwise, projection) over input `in` giving `out`.
inline kernels::FusedBlockShape fused_block_shape(const Layer& expand, const Layer& dw, const Layer& project,
                                                  const Shape& in, const Shape& out, bool residual) {
  kernels::FusedBlockShape s;
  s.batch = checked_int(in.n, "batch");
  s.in_channels = expand.conv.in_channels;
  s.expanded = expand.conv.out_channels;
  s.out_channels = project.conv.out_channels;
  s.in_h = checked_int(in.h, "input height");
  s.in_w = checked_int(in.w, "input width");
  s.out_h = checked_int(out.h, "output height");
  s.out_w = checked_int(out.w, "output width");
  s.stride = dw.conv.stride_h;
  s.pad_top = dw.conv.pad_top;
  s.pad_left = dw.conv.pad_left;
  s.residual = residual;
  return s;
}

// The stem (over the network input `in`, giving `stem_out`) and the first block's depthwise and projection
// (giving `out`), activations of `dtype`.
inline kernels::FusedStemShape fused_stem_shape(const Layer& stem, const Layer& dw, const Layer& project,
                                                const Shape& in, const Shape& stem_out, const Shape& out,
                                                kernels::DType dtype) {
  kernels::FusedStemShape s;
  s.batch = checked_int(in.n, "batch");
  s.in_h = checked_int(in.h, "input height");
  s.in_w = checked_int(in.w, "input width");
  s.stem_channels = stem.conv.out_channels;
  s.out_channels = project.conv.out_channels;
  s.stem_h = checked_int(stem_out.h, "stem height");
  s.stem_w = checked_int(stem_out.w, "stem width");
  s.stem_stride = stem.conv.stride_h;
  s.stem_pad_top = stem.conv.pad_top;
  s.stem_pad_left = stem.conv.pad_left;
  s.out_h = checked_int(out.h, "output height");
  s.out_w = checked_int(out.w, "output width");
  s.dw_pad_top = dw.conv.pad_top;
  s.dw_pad_left = dw.conv.pad_left;
  s.dtype = dtype;
  return s;
}

}  // namespace mnv2::cuda_backend
