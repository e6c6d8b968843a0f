// The backends and variants the op harness runs: for each backend asked for, whether it can run here (and why
// not), and every configuration of it worth judging, enumerated from the engine's own option values
// (mnv2/option_values.h) and precisions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "op_cases.h"

namespace mnv2::ops {

struct BackendConfig {
  std::string backend;  // the engine's name: "cpu", "cudnn", "cuda", "cpu-ref"
  std::string variant;  // the options in words: "threads=2", "fast fusion=block splitk=in_kernel", "fused layout=nhwc"
  PrepareConfig prepare;      // the options and precision; batch and map size are set per case
  std::string label() const;  // "cuda fast fusion=block splitk=in_kernel fp16"
};

struct BackendUnderTest {
  std::string name;
  std::unique_ptr<Backend> backend;
  Availability availability;
  std::vector<BackendConfig> configs;  // empty when not available
  std::vector<std::string> notes;      // option combinations left out, and why
};

// The backends named (each from backend_names(); UsageError otherwise) with their configurations:
//   cpu, cpu-ref  1 and 2 threads (PrepareConfig::cpu_threads), every precision the backend supports();
//   cuda          every variant x fusion x split-K reduction x supported precision, less the combinations the
//                 planner refuses (plan_cuda_network's UsageError) and those whose plan equals an earlier
//                 combination's for every case on every GPU preset (the T4, A100, RTX 4090 and H200 planners):
//                 the same kernels, judged once (the baseline variant reads neither fusion nor split-K);
//   cudnn         every variant x layout x supported precision (the naive variant is NCHW whatever the layout:
//                 its layout is left at auto).
// `specs` are the cases the cuda planner compares plans over.
std::vector<BackendUnderTest> backends_under_test(const std::vector<std::string>& names,
                                                  const std::vector<OpSpec>& specs);

}  // namespace mnv2::ops
