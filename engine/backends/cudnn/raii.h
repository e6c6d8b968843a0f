// Owning, non-copyable wrappers for what the cudnn backend holds: the stream, the cuDNN and cuBLAS handles,
// cuDNN descriptors, device memory and pinned host memory. Each frees its object on every path and only
// logs (never throws) when freeing fails.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <utility>

#include "backends/cudnn/cuda_check.h"

namespace mnv2::cudnn_backend {

// Traits name the handle type, how it is released and what to call the release in a warning.
template <typename Traits>
class Owned {
 public:
  using Handle = typename Traits::Handle;

  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() { reset(); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }
  void reset() noexcept {
    if (handle_ != Handle{}) gpu_check::check_log(Traits::release(handle_), Traits::kRelease, __FILE__, __LINE__);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

#define MNV2_OWNED_TRAITS(TraitsName, HandleType, ReleaseFn) \
  struct TraitsName {                                        \
    using Handle = HandleType;                               \
    static constexpr const char* kRelease = #ReleaseFn;      \
    static auto release(Handle h) { return ReleaseFn(h); }   \
  }

MNV2_OWNED_TRAITS(StreamTraits, cudaStream_t, cudaStreamDestroy);
MNV2_OWNED_TRAITS(CudnnTraits, cudnnHandle_t, cudnnDestroy);
MNV2_OWNED_TRAITS(CublasTraits, cublasHandle_t, cublasDestroy);
MNV2_OWNED_TRAITS(TensorDescTraits, cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor);
MNV2_OWNED_TRAITS(FilterDescTraits, cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor);
MNV2_OWNED_TRAITS(ConvDescTraits, cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor);
MNV2_OWNED_TRAITS(ActivationDescTraits, cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor);
MNV2_OWNED_TRAITS(PoolingDescTraits, cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor);
MNV2_OWNED_TRAITS(OpTensorDescTraits, cudnnOpTensorDescriptor_t, cudnnDestroyOpTensorDescriptor);
#undef MNV2_OWNED_TRAITS

using CudaStream = Owned<StreamTraits>;
using CudnnHandle = Owned<CudnnTraits>;
using CublasHandle = Owned<CublasTraits>;
using TensorDescriptor = Owned<TensorDescTraits>;
using FilterDescriptor = Owned<FilterDescTraits>;
using ConvolutionDescriptor = Owned<ConvDescTraits>;
using ActivationDescriptor = Owned<ActivationDescTraits>;
using PoolingDescriptor = Owned<PoolingDescTraits>;
using OpTensorDescriptor = Owned<OpTensorDescTraits>;

// Non-blocking: the stream never waits on work other code puts on the legacy default stream.
inline CudaStream make_stream() {
  cudaStream_t s = nullptr;
  MNV2_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return CudaStream(s);
}
inline CudnnHandle make_cudnn_handle() {
  cudnnHandle_t h = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreate(&h));
  return CudnnHandle(h);
}
inline CublasHandle make_cublas_handle() {
  cublasHandle_t h = nullptr;
  MNV2_CHECK_CUBLAS(cublasCreate(&h));
  return CublasHandle(h);
}
inline TensorDescriptor make_tensor_descriptor() {
  cudnnTensorDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
  return TensorDescriptor(d);
}
inline FilterDescriptor make_filter_descriptor() {
  cudnnFilterDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateFilterDescriptor(&d));
  return FilterDescriptor(d);
}
inline ConvolutionDescriptor make_convolution_descriptor() {
  cudnnConvolutionDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&d));
  return ConvolutionDescriptor(d);
}
inline ActivationDescriptor make_activation_descriptor() {
  cudnnActivationDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateActivationDescriptor(&d));
  return ActivationDescriptor(d);
}
inline PoolingDescriptor make_pooling_descriptor() {
  cudnnPoolingDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreatePoolingDescriptor(&d));
  return PoolingDescriptor(d);
}
inline OpTensorDescriptor make_op_tensor_descriptor() {
  cudnnOpTensorDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateOpTensorDescriptor(&d));
  return OpTensorDescriptor(d);
}

// Device memory from cudaMalloc (never managed memory); empty for zero bytes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) MNV2_CHECK_CUDA(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void reset() noexcept {
    if (ptr_) MNV2_CHECK_LOG(cudaFree(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory, so uploads and downloads on the stream are truly asynchronous DMA.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) MNV2_CHECK_CUDA(cudaMallocHost(&ptr_, bytes));
  }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void reset() noexcept {
    if (ptr_) MNV2_CHECK_LOG(cudaFreeHost(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace mnv2::cudnn_backend
