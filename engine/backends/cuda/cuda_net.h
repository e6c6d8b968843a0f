// The cuda backend's prepared network: a plan (mnv2/cuda_plan.h) lowered step by step (lowering.h) onto the GPU
// prepared-network core (engine/gpu/prepared_net.h), which runs it; plus what only this backend has, the 8-bit
// input path and the NHWC and half layer outputs' conversion for download.
#pragma once

#include <memory>
#include <string>

#include "backends/cuda/lab_kernel.h"
#include "mnv2/backend.h"
#include "mnv2/cuda_plan.h"
#include "mnv2/model.h"

namespace mnv2::cuda_backend {

// What Backend::description() says, naming visible GPU `device` (a prepared net adds its plan's launch chain).
std::string backend_text(int device);

// Allocates, lowers every step of `plan`, warms up and captures (config.device current); throws Error naming the
// step's first layer where one cannot be lowered. `lab`: the kernel lab's user kernel, or null.
std::unique_ptr<PreparedNet> make_prepared_net(const Model& model, const PrepareConfig& config, CudaPlan plan,
                                               std::shared_ptr<const LabKernel> lab);

}  // namespace mnv2::cuda_backend
