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

#include "backends/cuda/shapes.h"  // device_caps: the kernels' view of a GPU's description
#include "gpu/check.h"
#include "gpu/device.h"  // read_gpu_properties
#include "gpu/runtime.h"
#include "gpu_backend_test_support.h"
#include "kernels/common.cuh"
#include "kernels/layout.cuh"  // to_half_bits, half_bits_to_float
#include "mnv2/device.h"
#include "precision_bounds.h"

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

// What the tile choosers see of `device`: its one description (read as the backends read it), as the kernels see it.
inline kernels::DeviceCaps device_caps(int device) {
  return cuda_backend::device_caps(gpu::read_gpu_properties(device));
}

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
  gpu::DeviceBuffer buffer_;
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

// ---- reduced precision -------------------------------------------------------------------------------------
// Unit roundoffs kU32 and kU16 and the dot product's bound: precision_bounds.h (shared with the op harness).

// A device array of float32 or half values (uploaded from floats, rounded to nearest for half; downloaded as
// floats). rounded() gives the values the device holds, for references.
class TypedArray {
 public:
  TypedArray(kernels::DType type, size_t count)
      : type_(type), count_(count), buffer_(std::max<size_t>(count, 1) * kernels::dtype_bytes(type)) {}
  TypedArray(kernels::DType type, const std::vector<float>& host) : TypedArray(type, host.size()) { upload(host); }
  void* get() const { return buffer_.get(); }
  size_t size() const { return count_; }
  kernels::DType type() const { return type_; }
  void upload(const std::vector<float>& host) {
    if (type_ == kernels::DType::f16) {
      const std::vector<uint16_t> bits = kernels::to_half_bits(host);
      MNV2_CHECK_CUDA(cudaMemcpy(get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    } else {
      MNV2_CHECK_CUDA(cudaMemcpy(get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
    }
  }
  // Every element NaN in either type (0xFFFF is a half NaN).
  void poison() { MNV2_CHECK_CUDA(cudaMemset(get(), 0xFF, std::max<size_t>(count_, 1) * kernels::dtype_bytes(type_))); }
  std::vector<float> download() const {
    MNV2_CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> host(count_);
    if (type_ == kernels::DType::f16) {
      std::vector<uint16_t> bits(count_);
      MNV2_CHECK_CUDA(cudaMemcpy(bits.data(), get(), count_ * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count_; ++i) host[i] = kernels::half_bits_to_float(bits[i]);
    } else {
      MNV2_CHECK_CUDA(cudaMemcpy(host.data(), get(), count_ * 4, cudaMemcpyDeviceToHost));
    }
    return host;
  }
  // The values as the device stores them.
  static std::vector<float> rounded(kernels::DType type, const std::vector<float>& host) {
    if (type != kernels::DType::f16) return host;
    std::vector<float> out(host.size());
    const std::vector<uint16_t> bits = kernels::to_half_bits(host);
    for (size_t i = 0; i < host.size(); ++i) out[i] = kernels::half_bits_to_float(bits[i]);
    return out;
  }

 private:
  kernels::DType type_;
  size_t count_;
  gpu::DeviceBuffer buffer_;
};

// Every element within its own bound: |got - ref| <= bound (NaN fails). Reports the count and the worst case.
struct BoundCheck {
  int64_t outside = 0;
  int64_t worst = -1;      // index of the largest err / bound
  double worst_ratio = 0;  // its err / bound
  double worst_err = 0, worst_bound = 0, worst_ref = 0;
  float worst_got = 0;
  bool ok() const { return outside == 0; }
  std::string str() const {
    std::ostringstream s;
    s << outside << " outside their bound; worst at " << worst << ": got " << worst_got << ", reference " << worst_ref
      << ", error " << worst_err << " vs bound " << worst_bound << " (ratio " << worst_ratio << ")";
    return s.str();
  }
};

inline BoundCheck check_within(const std::vector<float>& got, const std::vector<double>& ref,
                               const std::vector<double>& bound) {
  BoundCheck b;
  for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    // An exact bound (0) passes only an exact result.
    const double ratio = !std::isfinite(got[i]) ? INFINITY : err == 0 ? 0.0 : err / bound[i];
    if (!(ratio <= 1.0)) ++b.outside;
    if (!(ratio <= b.worst_ratio)) {
      b.worst_ratio = ratio;
      b.worst = static_cast<int64_t>(i);
      b.worst_err = err;
      b.worst_bound = bound[i];
      b.worst_ref = ref[i];
      b.worst_got = got[i];
    }
  }
  if (got.size() != ref.size()) b.outside = -1;
  return b;
}

}  // namespace mnv2::test
