// Forward-convolution algorithm choice for the cudnn backend: cuDNN's Find measures every algorithm on
// the real buffers; the fastest strict-fp32, deterministic one wins and is remembered for the process.
#include "backends/cudnn/conv_algorithm.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "gpu/check.h"
#include "mnv2/error.h"

namespace mnv2::cudnn_backend {
namespace {

// Direct-summation algorithms, in the order a fallback tries them when Find returns nothing usable.
constexpr cudnnConvolutionFwdAlgo_t kAllowed[] = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
};

// Find is slow (it runs every algorithm), and the tests and the profiler prepare the same shapes many
// times in one process; a choice depends only on the problem and the device, both in the key.
std::mutex cache_mutex;
std::map<std::string, ConvAlgorithmChoice>& cache() {
  static std::map<std::string, ConvAlgorithmChoice> choices;
  return choices;
}

}  // namespace

const char* algorithm_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_FWD_ALGO_COUNT:
      break;
  }
  return "UNKNOWN";
}

bool allowed_algorithm(cudnnConvolutionFwdAlgo_t algo) {
  return std::find(std::begin(kAllowed), std::end(kAllowed), algo) != std::end(kAllowed);
}

size_t max_allowed_workspace(const ConvProblem& p) {
  size_t most = 0;
  for (cudnnConvolutionFwdAlgo_t algo : kAllowed) {
    size_t bytes = 0;
    // NOT_SUPPORTED here only means this algorithm cannot run this problem; that is not an error.
    if (cudnnGetConvolutionForwardWorkspaceSize(p.handle, p.x_desc, p.w_desc, p.conv_desc, p.y_desc, algo, &bytes) ==
        CUDNN_STATUS_SUCCESS)
      most = std::max(most, bytes);
  }
  return most;
}

ConvAlgorithmChoice choose_algorithm(const ConvProblem& p, void* workspace, size_t workspace_bytes) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache().find(p.key); it != cache().end()) return it->second;
  }

  int max_count = 0;
  MNV2_CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(p.handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(std::max(max_count, 1)));
  int returned = 0;
  MNV2_CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(p.handle, p.x_desc, p.x, p.w_desc, p.w, p.conv_desc, p.y_desc,
                                                          p.y, static_cast<int>(results.size()), &returned,
                                                          results.data(), workspace, workspace_bytes));

  std::optional<ConvAlgorithmChoice> best;
  // Find returns its results fastest first; the first acceptable one wins. For strict fp32 the descriptor
  // is set to FMA math, so results run without tensor cores, and a TENSOR_OP result (TF32) is skipped.
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = results[static_cast<size_t>(i)];
    const bool math_ok = r.mathType == CUDNN_FMA_MATH || r.mathType == CUDNN_DEFAULT_MATH ||
                         (p.tensor_ops && r.mathType == CUDNN_TENSOR_OP_MATH);
    if (r.status != CUDNN_STATUS_SUCCESS || !allowed_algorithm(r.algo) || r.determinism != CUDNN_DETERMINISTIC ||
        !math_ok || r.memory > workspace_bytes)
      continue;
    best = ConvAlgorithmChoice{r.algo, r.memory, r.time, r.mathType};
    break;
  }
  if (!best) {
    for (cudnnConvolutionFwdAlgo_t algo : kAllowed) {
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(p.handle, p.x_desc, p.w_desc, p.conv_desc, p.y_desc, algo, &bytes) ==
          CUDNN_STATUS_SUCCESS) {
        best = ConvAlgorithmChoice{algo, bytes, -1.0f, p.tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH};
        break;
      }
    }
  }
  if (!best) throw Error("no direct-summation cuDNN algorithm supports convolution " + p.key);

  // The workspace an algorithm really needs, asked directly: Find's figure is what it used while measuring.
  size_t needed = 0;
  MNV2_CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(p.handle, p.x_desc, p.w_desc, p.conv_desc, p.y_desc,
                                                           best->algo, &needed));
  best->workspace_bytes = std::max(best->workspace_bytes, needed);

  std::lock_guard<std::mutex> lock(cache_mutex);
  cache().emplace(p.key, *best);
  return *best;
}

}  // namespace mnv2::cudnn_backend
