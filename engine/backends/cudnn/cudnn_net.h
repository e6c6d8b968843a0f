// The cudnn backend's prepared network: the plan (cudnn_plan.h) in two arenas of device memory, each layer lowered
// to descriptors and calls (cudnn_lowering.h), the fused variant's graphs tuned (autotune.h), all on the GPU
// prepared-network core (engine/gpu/prepared_net.h), which runs it.
#pragma once

#include <memory>
#include <string>

#include "backends/cudnn/cudnn_plan.h"
#include "mnv2/backend.h"
#include "mnv2/gpu_properties.h"
#include "mnv2/model.h"

namespace mnv2::cudnn_backend {

// "NVIDIA cuDNN 9.14.0 + cuBLAS 13.0.2": the libraries this process loaded.
std::string libraries_text();

// Allocates, uploads, lowers and tunes `plan` on config.device (`gpu` its properties: the plan cache's keys),
// warms up and captures. Throws Error (out of device memory named with the figures, a layer cuDNN refuses).
std::unique_ptr<PreparedNet> make_prepared_net(const Model& model, CudnnPlan plan, const GpuProperties& gpu);

}  // namespace mnv2::cudnn_backend
