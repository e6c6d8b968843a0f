// Every value of each backend option and of Precision, in the order the flags' help lists them: the parsers
// (parse_precision, parse_cuda_*, parse_cudnn_*) accept exactly these, and whoever walks every value (the op
// harness, tests/ops) iterates these arrays rather than a copy of their own.
#pragma once

#include <array>

#include "mnv2/backend.h"

namespace mnv2 {

inline constexpr std::array kPrecisions{Precision::fp32, Precision::tf32, Precision::fp16};

inline constexpr std::array kCudaVariants{CudaOptions::Variant::fast, CudaOptions::Variant::baseline};
inline constexpr std::array kCudaFusions{CudaOptions::Fusion::automatic, CudaOptions::Fusion::none,
                                         CudaOptions::Fusion::expand_dw, CudaOptions::Fusion::block,
                                         CudaOptions::Fusion::block_split};
inline constexpr std::array kCudaGraphs{CudaOptions::Graph::automatic, CudaOptions::Graph::on, CudaOptions::Graph::off};
inline constexpr std::array kCudaPdls{CudaOptions::Pdl::automatic, CudaOptions::Pdl::on, CudaOptions::Pdl::off,
                                      CudaOptions::Pdl::late_weights};
inline constexpr std::array kCudaSplitKs{CudaOptions::SplitK::separate, CudaOptions::SplitK::in_kernel,
                                         CudaOptions::SplitK::cluster};

inline constexpr std::array kCudnnVariants{CudnnOptions::Variant::fused, CudnnOptions::Variant::naive};
inline constexpr std::array kCudnnGraphs{CudnnOptions::Graph::automatic, CudnnOptions::Graph::on,
                                         CudnnOptions::Graph::off};
inline constexpr std::array kCudnnLayouts{CudnnOptions::Layout::automatic, CudnnOptions::Layout::nchw,
                                          CudnnOptions::Layout::nhwc};

}  // namespace mnv2
