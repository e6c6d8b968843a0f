// Checks for the CUDA runtime and CUPTI calls of the GPU timing sources: the throwing form names the call,
// file and line in an mnv2::Error; the logging form (for destructors and CUPTI callbacks) prints instead.
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdio>
#include <string>

#include "mnv2/error.h"

namespace mnv2::gpu {

inline std::string cupti_error_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr)
    return "CUPTI error " + std::to_string(result);
  return text;
}

inline std::string failure_text(const char* call, const std::string& what, const char* file, int line) {
  return std::string(call) + " failed: " + what + " (" + file + ":" + std::to_string(line) + ")";
}

inline void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next unrelated check
  throw Error(failure_text(call, cudaGetErrorString(err), file, line));
}

inline bool log_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return true;
  cudaGetLastError();
  std::fprintf(stderr, "mnv2: %s\n", failure_text(call, cudaGetErrorString(err), file, line).c_str());
  return false;
}

inline void check_cupti(CUptiResult result, const char* call, const char* file, int line) {
  if (result != CUPTI_SUCCESS) throw Error(failure_text(call, cupti_error_text(result), file, line));
}

inline bool log_cupti(CUptiResult result, const char* call, const char* file, int line) {
  if (result == CUPTI_SUCCESS) return true;
  std::fprintf(stderr, "mnv2: %s\n", failure_text(call, cupti_error_text(result), file, line).c_str());
  return false;
}

}  // namespace mnv2::gpu

#define MNV2_TIMING_CUDA_CHECK(call) ::mnv2::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define MNV2_TIMING_CUDA_LOG(call) ::mnv2::gpu::log_cuda((call), #call, __FILE__, __LINE__)
#define MNV2_TIMING_CUPTI_CHECK(call) ::mnv2::gpu::check_cupti((call), #call, __FILE__, __LINE__)
#define MNV2_TIMING_CUPTI_LOG(call) ::mnv2::gpu::log_cupti((call), #call, __FILE__, __LINE__)
