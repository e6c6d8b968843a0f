// Checks for CUDA runtime, cuDNN and cuBLAS calls: a throwing form that names the call, file and line
// (mnv2::Error), and a logging form for destructors, which must never throw.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "mnv2/error.h"

namespace mnv2::gpu_check {

inline bool succeeded(cudaError_t status) { return status == cudaSuccess; }
inline bool succeeded(cudnnStatus_t status) { return status == CUDNN_STATUS_SUCCESS; }
inline bool succeeded(cublasStatus_t status) { return status == CUBLAS_STATUS_SUCCESS; }

inline std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}
inline std::string describe(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  // cuDNN 9 keeps a sentence on what exactly it refused; the status name alone rarely says enough.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}
inline std::string describe(cublasStatus_t status) { return cublasGetStatusString(status); }

// "cudnnConvolutionForward failed at cudnn_backend.cpp:120: CUDNN_STATUS_BAD_PARAM (...)". The call's
// argument list is dropped: the function name and the line find it.
inline std::string failure_message(const std::string& status, std::string_view call, std::string_view file, int line) {
  const size_t paren = call.find('(');
  const size_t slash = file.find_last_of('/');
  const std::string_view name = paren == std::string_view::npos ? call : call.substr(0, paren);
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return std::string(name) + " failed at " + std::string(base) + ":" + std::to_string(line) + ": " + status;
}

// A failed runtime call also sets the runtime's last error; a non-sticky one must not be blamed again on
// the next step's cudaGetLastError check.
inline void clear_last_error(cudaError_t) { cudaGetLastError(); }
inline void clear_last_error(cudnnStatus_t) {}
inline void clear_last_error(cublasStatus_t) {}

template <typename Status>
void check(Status status, const char* call, const char* file, int line) {
  if (succeeded(status)) return;
  clear_last_error(status);
  throw Error(failure_message(describe(status), call, file, line));
}

template <typename Status>
bool check_log(Status status, const char* call, const char* file, int line) noexcept {
  if (succeeded(status)) return true;
  try {
    std::fprintf(stderr, "mnv2: warning: %s\n", failure_message(describe(status), call, file, line).c_str());
  } catch (...) {
    std::fprintf(stderr, "mnv2: warning: %s failed\n", call);
  }
  return false;
}

}  // namespace mnv2::gpu_check

// The explicit template argument makes a check of the wrong library's call a compile error.
#define MNV2_CHECK_CUDA(call) ::mnv2::gpu_check::check<cudaError_t>((call), #call, __FILE__, __LINE__)
#define MNV2_CHECK_CUDNN(call) ::mnv2::gpu_check::check<cudnnStatus_t>((call), #call, __FILE__, __LINE__)
#define MNV2_CHECK_CUBLAS(call) ::mnv2::gpu_check::check<cublasStatus_t>((call), #call, __FILE__, __LINE__)
// Destructors and clean-up paths: report to stderr and carry on; returns whether the call succeeded.
#define MNV2_CHECK_LOG(call) ::mnv2::gpu_check::check_log((call), #call, __FILE__, __LINE__)
