// Owning, non-copyable wrappers for what GPU code holds: streams, events, graphs, device and pinned host
// memory, cuBLAS handles. Each frees its object on every path and only logs (never throws) when freeing fails.
// Used by both GPU backends, the GPU timing sources and the roofline calibration; backend-specific objects
// (cuDNN descriptors) live with their backend, built on the same Owned<>.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "gpu/check.h"

namespace mnv2::gpu {

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
    if (handle_ != Handle{}) {
      const auto status = Traits::release(handle_);
      // At process exit the runtime may already be unloaded; that is not worth a message.
      if constexpr (std::is_same_v<decltype(status), const cudaError_t>) {
        if (status != cudaErrorCudartUnloading) check_log(status, Traits::kRelease, __FILE__, __LINE__);
      } else {
        check_log(status, Traits::kRelease, __FILE__, __LINE__);
      }
    }
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

#define MNV2_GPU_OWNED_TRAITS(TraitsName, HandleType, ReleaseFn) \
  struct TraitsName {                                            \
    using Handle = HandleType;                                   \
    static constexpr const char* kRelease = #ReleaseFn;          \
    static auto release(Handle h) { return ReleaseFn(h); }       \
  }

MNV2_GPU_OWNED_TRAITS(StreamTraits, cudaStream_t, cudaStreamDestroy);
MNV2_GPU_OWNED_TRAITS(EventTraits, cudaEvent_t, cudaEventDestroy);
MNV2_GPU_OWNED_TRAITS(GraphTraits, cudaGraph_t, cudaGraphDestroy);
MNV2_GPU_OWNED_TRAITS(GraphExecTraits, cudaGraphExec_t, cudaGraphExecDestroy);
MNV2_GPU_OWNED_TRAITS(CublasTraits, cublasHandle_t, cublasDestroy);

using Stream = Owned<StreamTraits>;
using Event = Owned<EventTraits>;
using Graph = Owned<GraphTraits>;
using GraphExec = Owned<GraphExecTraits>;
using CublasHandle = Owned<CublasTraits>;

// Non-blocking: the stream never waits on work other code puts on the legacy default stream.
inline Stream make_stream() {
  cudaStream_t s = nullptr;
  MNV2_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

// Timing enabled unless flags say otherwise (cudaEventDisableTiming for pure synchronisation).
inline Event make_event(unsigned flags = cudaEventDefault) {
  cudaEvent_t e = nullptr;
  MNV2_CHECK_CUDA(cudaEventCreateWithFlags(&e, flags));
  return Event(e);
}

inline CublasHandle make_cublas_handle() {
  cublasHandle_t h = nullptr;
  MNV2_CHECK_CUBLAS(cublasCreate(&h));
  return CublasHandle(h);
}

// Where a Buffer's bytes live: device memory from cudaMalloc (never managed memory), or page-locked host
// memory (cudaMallocHost), so uploads and downloads on a stream are truly asynchronous DMA.
enum class Memory { device, pinned };

template <Memory kind>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : bytes_(bytes) {  // empty for zero bytes
    if (bytes == 0) return;
    if constexpr (kind == Memory::device)
      MNV2_CHECK_CUDA(cudaMalloc(&ptr_, bytes));
    else
      MNV2_CHECK_CUDA(cudaMallocHost(&ptr_, bytes));
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
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
    if (ptr_ != nullptr) {
      if constexpr (kind == Memory::device)
        MNV2_CHECK_LOG(cudaFree(ptr_));
      else
        MNV2_CHECK_LOG(cudaFreeHost(ptr_));
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = Buffer<Memory::device>;
using PinnedBuffer = Buffer<Memory::pinned>;

}  // namespace mnv2::gpu
