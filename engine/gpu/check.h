// The one check family of the GPU plugin, for every library it calls (CUDA runtime, cuDNN, cuBLAS, CUPTI):
// MNV2_CHECK_* throws an mnv2::Error naming the call, file, line and the library's own status name and text;
// MNV2_CHECK_LOG, for destructors and callbacks that must never throw, prints the same line (once for a broken
// context, BrokenContextLog) and returns whether the call succeeded. Backends, the GPU timing sources and the
// calibration all use it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "mnv2/error.h"

namespace mnv2::gpu {

// What each library calls success, how it names a status, and whether a failure leaves state to clear.
template <typename Status>
struct StatusTraits;

template <>
struct StatusTraits<cudaError_t> {
  static bool succeeded(cudaError_t s) { return s == cudaSuccess; }
  static std::string describe(cudaError_t s) {
    return std::string(cudaGetErrorName(s)) + " (" + cudaGetErrorString(s) + ")";
  }
  // A failed runtime call also sets the runtime's last error; a non-sticky one must not be blamed again on the
  // next step's cudaGetLastError check.
  static void clear() { cudaGetLastError(); }
};

template <>
struct StatusTraits<cudnnStatus_t> {
  static bool succeeded(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
  static std::string describe(cudnnStatus_t s) {
    std::string text = cudnnGetErrorString(s);
    // cuDNN 9 keeps a sentence on what exactly it refused; the status name alone rarely says enough.
    char detail[512] = {};
    cudnnGetLastErrorString(detail, sizeof detail);
    if (detail[0] != '\0') text += std::string(" (") + detail + ")";
    return text;
  }
  static void clear() {}
};

template <>
struct StatusTraits<cublasStatus_t> {
  static bool succeeded(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
  static std::string describe(cublasStatus_t s) { return cublasGetStatusString(s); }
  static void clear() {}
};

template <>
struct StatusTraits<CUptiResult> {
  static bool succeeded(CUptiResult s) { return s == CUPTI_SUCCESS; }
  static std::string describe(CUptiResult s) {
    const char* text = nullptr;
    if (cuptiGetResultString(s, &text) != CUPTI_SUCCESS || text == nullptr) return "CUPTI error " + std::to_string(s);
    return text;
  }
  static void clear() {}
};

// "cudnnConvolutionForward failed at cudnn_backend.cpp:120: CUDNN_STATUS_BAD_PARAM (...)". The call's
// argument list is dropped: the function name and the line find it.
inline std::string failure_message(const std::string& status, std::string_view call, std::string_view file, int line) {
  const size_t paren = call.find('(');
  const size_t slash = file.find_last_of('/');
  const std::string_view name = paren == std::string_view::npos ? call : call.substr(0, paren);
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return std::string(name) + " failed at " + std::string(base) + ":" + std::to_string(line) + ": " + status;
}

template <typename Status>
void check(Status status, const char* call, const char* file, int line) {
  using T = StatusTraits<Status>;
  if (T::succeeded(status)) return;
  T::clear();
  throw Error(failure_message(T::describe(status), call, file, line));
}

// Whether a CUDA error is a kernel's fault that leaves the context broken for the rest of the process: every later
// runtime call fails with it again (the CUDA programming guide's "sticky" errors).
inline bool breaks_context(cudaError_t s) {
  switch (s) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

// MNV2_CHECK_LOG's memory of a broken context: after a kernel's fault every release of the run's buffers, streams
// and events fails with the same error (a crashed kernel-lab worker printed 162 such lines before its report). The
// first is printed with a note, the rest are counted here, not printed, until a checked call succeeds again (the
// context was reset).
struct BrokenContextLog {
  std::atomic<bool> reported{false};
  std::atomic<long long> suppressed{0};
};
inline BrokenContextLog& broken_context_log() {
  static BrokenContextLog log;
  return log;
}

template <typename Status>
bool check_log(Status status, const char* call, const char* file, int line) noexcept {
  using T = StatusTraits<Status>;
  constexpr bool kCuda = std::is_same_v<Status, cudaError_t>;
  if (T::succeeded(status)) {
    if constexpr (kCuda) broken_context_log().reported.store(false, std::memory_order_relaxed);
    return true;
  }
  const char* note = "";
  if constexpr (kCuda) {
    if (breaks_context(status)) {
      if (broken_context_log().reported.exchange(true)) {
        broken_context_log().suppressed.fetch_add(1, std::memory_order_relaxed);
        T::clear();
        return false;
      }
      note = " (the CUDA context is broken: further failures with it are not reported)";
    }
  }
  try {
    T::clear();
    std::fprintf(stderr, "mnv2: warning: %s%s\n", failure_message(T::describe(status), call, file, line).c_str(), note);
  } catch (...) {
    std::fprintf(stderr, "mnv2: warning: %s failed\n", call);
  }
  return false;
}

}  // namespace mnv2::gpu

// The explicit template argument makes a check of the wrong library's call a compile error.
#define MNV2_CHECK_CUDA(call) ::mnv2::gpu::check<cudaError_t>((call), #call, __FILE__, __LINE__)
#define MNV2_CHECK_CUDNN(call) ::mnv2::gpu::check<cudnnStatus_t>((call), #call, __FILE__, __LINE__)
#define MNV2_CHECK_CUBLAS(call) ::mnv2::gpu::check<cublasStatus_t>((call), #call, __FILE__, __LINE__)
#define MNV2_CHECK_CUPTI(call) ::mnv2::gpu::check<CUptiResult>((call), #call, __FILE__, __LINE__)
// Destructors, callbacks and clean-up paths: report to stderr and carry on; returns whether the call succeeded.
#define MNV2_CHECK_LOG(call) ::mnv2::gpu::check_log((call), #call, __FILE__, __LINE__)
