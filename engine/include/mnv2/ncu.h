// Hand-off to Nsight Compute: the exact `ncu` command line that profiles one layer's kernels, found by
// the NVTX range each GPU backend pushes around every execution step (ExecStep::name, e.g. "Conv2d 7",
// or "Conv2d 5 + ReLU6 6" for a fused step).
#pragma once

#include <string>
#include <vector>

#include "mnv2/backend.h"
#include "mnv2/model.h"
#include "mnv2/options.h"

namespace mnv2 {

// The run `ncu` starts: an `mnv2 profile` with one warm-up-free timed run per phase, so each of the
// layer's kernels is profiled twice (end-to-end phase and per-layer phase), not hundreds of times.
struct NcuTarget {
  std::string mnv2_path;   // absolute path of the mnv2 program
  std::string backend;     // cudnn or cuda
  std::string model_path;  // absolute; empty: the run finds the model as mnv2 does (synthetic if none)
  int batch = 1;
  int height = 224, width = 224;  // passed as --input-size unless an image gives the size
  // The run's options (mnv2/options.h): every one the backend honours that is not a default, or that has an
  // environment variable (the ncu run's environment may hold another), is passed as its flag, so that the
  // profiled run plans the same steps. Batch and size are the fields above; counts and timer are ncu's own.
  OptionValues options;
  std::string image;       // absolute path, or empty
  std::string tensor;      // absolute path, or empty
  std::string nvtx_range;  // the step's range name
  int layer = 0;           // the topology layer asked for (names the ncu report file)
};

// The argument vector, starting with "ncu".
std::vector<std::string> ncu_argv(const NcuTarget& target);

// One POSIX shell line: arguments made only of safe characters stay bare, others are single-quoted.
std::string shell_join(const std::vector<std::string>& argv);

// A layer given by index ("7") or by name ("block2.dw.conv"); throws UsageError naming the text.
int resolve_layer(const Model& model, const std::string& spec);

// The step covering `layer`, or -1.
int step_of_layer(const std::vector<ExecStep>& steps, int layer);

// The range name a backend that runs this layer as a step of its own gives it ("Conv2d 7").
std::string default_step_name(const Model& model, int layer);

}  // namespace mnv2
