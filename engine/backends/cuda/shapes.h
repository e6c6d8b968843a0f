// What the planner and the lowering of the cuda backend both derive from the model: the kernels' 32-bit sizes and
// the problem shapes of the fusion block's kernels (the planner chooses their tiles from them, the lowering launches
// them), written once.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/tiles.h"
#include "mnv2/error.h"
#include "mnv2/model.h"

namespace mnv2::cuda_backend {

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
