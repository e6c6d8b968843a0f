// Helpers of the kernel tests (tests/gpu/test_kernels_*.cpp): skipping without a GPU, fresh seeds, device
// arrays that are poisoned before each launch (every float NaN, so an element a kernel fails to write
// fails the comparison), layout conversions on the host and the error figure every test checks.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cudnn/cuda_check.h"
#include "backends/cudnn/raii.h"
#include "mnv2/device.h"

namespace mnv2::test {

// Every kernel result is float32 with FFMA against a float32 (cpu backend) or float64 reference; only the
// order of summation differs.
inline constexpr double kKernelMaxRelL2 = 1e-5;

// Skips the current test where there is no CUDA device.
#define MNV2_SKIP_WITHOUT_GPU()                                                                                 \
  do {                                                                                                          \
    const ::mnv2::CudaEnvironment& env_ = ::mnv2::cuda_environment();                                           \
    if (env_.devices.empty()) GTEST_SKIP() << "no CUDA device (" << env_.why_none << "): kernel tests skipped"; \
  } while (0)

// MNV2_TEST_SEED reproduces a failing run; otherwise every run draws new data.
inline uint64_t kernel_test_seed() {
  if (const char* env = std::getenv("MNV2_TEST_SEED"); env && *env) return std::stoull(env);
  return std::random_device{}();
}

inline std::vector<float> random_vector(std::mt19937_64& gen, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A device copy of a float vector (or room for one), freed by DeviceBuffer.
class DeviceArray {
 public:
  explicit DeviceArray(size_t count) : count_(count), buffer_(std::max<size_t>(count, 1) * sizeof(float)) {}
  explicit DeviceArray(const std::vector<float>& host) : DeviceArray(host.size()) { upload(host); }
  float* get() const { return static_cast<float*>(buffer_.get()); }
  size_t size() const { return count_; }
  void upload(const std::vector<float>& host) {
    MNV2_CHECK_CUDA(cudaMemcpy(get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  // Every float becomes NaN (0xFFFFFFFF).
  void poison() { MNV2_CHECK_CUDA(cudaMemset(get(), 0xFF, std::max<size_t>(count_, 1) * sizeof(float))); }
  std::vector<float> download() const {
    MNV2_CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> host(count_);
    MNV2_CHECK_CUDA(cudaMemcpy(host.data(), get(), count_ * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  size_t count_;
  cudnn_backend::DeviceBuffer buffer_;
};

// [n][c][hw] <-> [n][hw][c]
inline std::vector<float> nchw_to_nhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) y[(i * hw + p) * c + ch] = x[(i * c + ch) * hw + p];
  return y;
}
inline std::vector<float> nhwc_to_nchw(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) y[(i * c + ch) * hw + p] = x[(i * hw + p) * c + ch];
  return y;
}

struct Agreement {
  double rel_l2 = 0;
  int64_t non_finite = 0;  // NaN or Inf in the result: usually an element the kernel never wrote
  int64_t first_bad = -1;  // index of the first non-finite element
  std::string str() const {
    std::ostringstream s;
    s << "rel L2 " << rel_l2 << ", " << non_finite << " non-finite" << (first_bad >= 0 ? " (first at " : "")
      << (first_bad >= 0 ? std::to_string(first_bad) + ")" : "");
    return s.str();
  }
  bool ok() const { return non_finite == 0 && rel_l2 < kKernelMaxRelL2; }
};

template <typename Ref>
Agreement agreement(const std::vector<float>& got, const std::vector<Ref>& ref) {
  Agreement a;
  if (got.size() != ref.size()) {
    a.rel_l2 = INFINITY;
    return a;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) {
      if (a.first_bad < 0) a.first_bad = static_cast<int64_t>(i);
      ++a.non_finite;
      continue;
    }
    const double d = static_cast<double>(got[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  a.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return a;
}

}  // namespace mnv2::test
