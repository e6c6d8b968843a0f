// Choosing cuDNN forward-convolution algorithms: measured with cudnnFindConvolutionForwardAlgorithmEx once
// per distinct problem per process, restricted to what keeps results strict, deterministic float32.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <string>

namespace mnv2::cudnn_backend {

struct ConvAlgorithmChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes = 0;             // what this algorithm needs for this problem
  float time_ms = -1.0f;                  // Find's measurement; -1 when the choice is a fallback, not a measurement
  cudnnMathType_t math = CUDNN_FMA_MATH;  // what the chosen kernel runs: FMA, or tensor ops (TF32/fp16)
};

// Everything cudnnFindConvolutionForwardAlgorithmEx needs. x, w and y must be real device buffers of the
// described sizes (Find runs the convolution); y is overwritten. The convolution descriptor's math type
// must already be CUDNN_FMA_MATH (strict fp32), or CUDNN_TENSOR_OP_MATH with tensor_ops set (tf32, fp16).
struct ConvProblem {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr;
  const void* x = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  const void* w = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  cudnnTensorDescriptor_t y_desc = nullptr;
  void* y = nullptr;
  std::string key;          // identifies the problem (device, precision, shapes, parameters) for the process-wide cache
  bool tensor_ops = false;  // tensor-core results are acceptable (never for strict fp32)
};

// "IMPLICIT_PRECOMP_GEMM" and so on.
const char* algorithm_name(cudnnConvolutionFwdAlgo_t algo);

// Whether an algorithm sums products directly. FFT and Winograd transform the operands first, which adds
// rounding error beyond plain float32 summation; the backend promises the cpu reference's accuracy, so
// they are never chosen.
bool allowed_algorithm(cudnnConvolutionFwdAlgo_t algo);

// The largest workspace any allowed algorithm needs for this problem (those cuDNN does not support here
// are skipped), so one Find workspace can serve every layer.
size_t max_allowed_workspace(const ConvProblem& problem);

// The fastest allowed, deterministic algorithm that fits `workspace_bytes`, measured on `workspace`.
// Cached per problem key. Throws Error when no allowed algorithm supports the problem.
ConvAlgorithmChoice choose_algorithm(const ConvProblem& problem, void* workspace, size_t workspace_bytes);

}  // namespace mnv2::cudnn_backend
