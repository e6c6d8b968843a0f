// An NVTX range around one execution step, named after it, so Nsight Systems and Nsight Compute (`--nvtx
// --nvtx-include 'NAME/'`, see mnv2 profile --ncu-command) can pick out a layer's kernels. Shared by the
// GPU backends' run loop (prepared_net.cpp).
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace mnv2 {

// Pushed on construction, popped on every path out of the step.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace mnv2
