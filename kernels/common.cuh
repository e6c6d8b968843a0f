// Shared pieces of the hand-written kernels: the launch check that names the op, integer helpers, the
// clip (ReLU6 and friends) epilogue parameters, and small float4 helpers for device code. Host code of
// the engine includes the kernel headers too, so everything device-only sits under __CUDACC__.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/tiles.h"  // DType, DeviceCaps and the tile choosers
#include "mnv2/error.h"

namespace mnv2::kernels {

// Threads per block of the one-dimensional kernels (elementwise, depthwise, direct convolution): 8 warps,
// enough to hide memory latency with several blocks per multiprocessor.
inline constexpr int kBlockThreads = 256;

// A clamp applied in a kernel's epilogue: ReLU6 is {true, 0, 6}, ReLU {true, 0, +inf}. NaN propagates,
// as in the cpu reference (std::min(std::max(x, lo), hi)).
struct Clip {
  bool enabled = false;  // false: values pass unchanged
  float lo = 0.0f;       // lower bound
  float hi = 6.0f;       // upper bound (may be +inf)
};

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Throws mnv2::Error "OP: kernel launch failed at FILE:LINE: NAME (text)" when the last launch failed;
// clears the runtime's last error first, so the next op is not blamed for it.
void check_launch(const char* op, const char* file, int line);

// Throws mnv2::Error "OP: CALL failed at FILE:LINE: NAME (text)" for a failed runtime call of a launch
// wrapper (cudaFuncSetAttribute and the like).
void check_call(cudaError_t status, const char* op, const char* call, const char* file, int line);

// The device code the driver loaded for the current device: the architecture it was compiled for
// (ptx_version, e.g. 75 when compute_75 PTX was JIT-compiled on an H200: the features the code may use) and
// the machine code's architecture (binary_version, 90 there). Every kernel of this library comes from one
// build with one architecture list, so a trivial kernel speaks for all of them.
struct KernelImage {
  int ptx_version = 0;
  int binary_version = 0;
};

// Whether this binary holds machine code (or PTX) the current device can run: asks the runtime for the
// attributes of a trivial kernel. cudaSuccess (and `image` filled), or the error
// (cudaErrorNoKernelImageForDevice, ...).
cudaError_t probe_kernel_image(KernelImage* image = nullptr);

// Dynamic shared memory a block may opt in to on the current device (48 KiB, what every CUDA GPU gives without
// opting in, where the runtime cannot say), asked once per process.
int smem_optin_limit();

}  // namespace mnv2::kernels

// After every launch: names the op, the file and the line.
#define MNV2_CHECK_LAUNCH(op) ::mnv2::kernels::check_launch((op), __FILE__, __LINE__)
// Runtime calls inside the launch wrappers.
#define MNV2_KERNEL_CALL(op, call) ::mnv2::kernels::check_call((call), (op), #call, __FILE__, __LINE__)

#ifdef __CUDACC__
#include <cuda_fp16.h>

namespace mnv2::kernels {

__device__ __forceinline__ float apply_clip(float x, const Clip& c) {
  if (!c.enabled) return x;
  // Comparisons, not fminf/fmaxf: those would turn a NaN into a bound and hide a broken input.
  return x < c.lo ? c.lo : (x > c.hi ? c.hi : x);
}

__device__ __forceinline__ float4 apply_clip(float4 v, const Clip& c) {
  return make_float4(apply_clip(v.x, c), apply_clip(v.y, c), apply_clip(v.z, c), apply_clip(v.w, c));
}

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// a * b + c per component, one FFMA each.
__device__ __forceinline__ float4 fma4(float4 a, float4 b, float4 c) {
  return make_float4(fmaf(a.x, b.x, c.x), fmaf(a.y, b.y, c.y), fmaf(a.z, b.z, c.z), fmaf(a.w, b.w, c.w));
}
__device__ __forceinline__ float4 fma4(float a, float4 b, float4 c) {
  return make_float4(fmaf(a, b.x, c.x), fmaf(a, b.y, c.y), fmaf(a, b.z, c.z), fmaf(a, b.w, c.w));
}

// Vector of kWidth floats (1 or 4) loaded and stored in one access: Vec<4> is float4 (16-byte accesses).
// load() goes through the read-only data cache (__ldg): only for buffers no thread of the kernel writes.
template <int kWidth>
struct Vec;
template <>
struct Vec<1> {
  using Type = float;
  __device__ __forceinline__ static Type zero() { return 0.0f; }
  __device__ __forceinline__ static Type load(const float* p) { return __ldg(p); }
  // Coherent load, for buffers the same kernel also writes (in-place elementwise passes).
  __device__ __forceinline__ static Type load_plain(const float* p) { return *p; }
  __device__ __forceinline__ static void store(float* p, Type v) { *p = v; }
  __device__ __forceinline__ static Type fma(Type a, Type b, Type c) { return fmaf(a, b, c); }
  __device__ __forceinline__ static Type add(Type a, Type b) { return a + b; }
  __device__ __forceinline__ static Type scale(Type a, float s) { return a * s; }
  __device__ __forceinline__ static Type clip(Type a, const Clip& c) { return apply_clip(a, c); }
};
template <>
struct Vec<4> {
  using Type = float4;
  __device__ __forceinline__ static Type zero() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }
  __device__ __forceinline__ static Type load(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
  __device__ __forceinline__ static Type load_plain(const float* p) { return *reinterpret_cast<const float4*>(p); }
  __device__ __forceinline__ static void store(float* p, Type v) { *reinterpret_cast<float4*>(p) = v; }
  __device__ __forceinline__ static Type fma(Type a, Type b, Type c) { return fma4(a, b, c); }
  __device__ __forceinline__ static Type add(Type a, Type b) { return a + b; }
  __device__ __forceinline__ static Type scale(Type a, float s) {
    return make_float4(a.x * s, a.y * s, a.z * s, a.w * s);
  }
  __device__ __forceinline__ static Type clip(Type a, const Clip& c) { return apply_clip(a, c); }
};

// The storage type of a DType, for kernels templated on it.
template <DType kType>
struct Storage;
template <>
struct Storage<DType::f32> {
  using Type = float;
};
template <>
struct Storage<DType::f16> {
  using Type = __half;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

// kW consecutive elements of type T (float or __half) to and from kW floats, in the widest accesses the byte
// count allows (16, 8 or 4 bytes, else one element each); the address must be aligned to that access. Loads
// go through the read-only cache (__ldg) unless kCoherent (buffers the same kernel writes).
template <class T, int kW, bool kCoherent = false>
__device__ __forceinline__ void load_floats(const T* p, float (&v)[kW]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * kW;
  if constexpr (kBytes % 16 == 0 || kBytes % 8 == 0 || (kBytes % 4 == 0 && sizeof(T) < 4)) {
    using Chunk = std::conditional_t<kBytes % 16 == 0, uint4, std::conditional_t<kBytes % 8 == 0, uint2, unsigned>>;
    constexpr int kPer = static_cast<int>(sizeof(Chunk) / sizeof(T));
#pragma unroll
    for (int c = 0; c < kW / kPer; ++c) {
      const Chunk* src = reinterpret_cast<const Chunk*>(p) + c;
      const Chunk raw = kCoherent ? *src : __ldg(src);
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < kPer; ++j) v[c * kPer + j] = to_float(e[j]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < kW; ++j) v[j] = to_float(kCoherent ? p[j] : __ldg(p + j));
  }
}

template <class T, int kW>
__device__ __forceinline__ void store_floats(T* p, const float (&v)[kW]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * kW;
  if constexpr (kBytes % 16 == 0 || kBytes % 8 == 0 || (kBytes % 4 == 0 && sizeof(T) < 4)) {
    using Chunk = std::conditional_t<kBytes % 16 == 0, uint4, std::conditional_t<kBytes % 8 == 0, uint2, unsigned>>;
    constexpr int kPer = static_cast<int>(sizeof(Chunk) / sizeof(T));
#pragma unroll
    for (int c = 0; c < kW / kPer; ++c) {
      Chunk raw;
      T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int j = 0; j < kPer; ++j) e[j] = from_float<T>(v[c * kPer + j]);
      reinterpret_cast<Chunk*>(p)[c] = raw;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kW; ++j) p[j] = from_float<T>(v[j]);
  }
}

// The fused epilogue of a convolution or GEMM on kW consecutive outputs (one row, consecutive columns or
// channels): acc + bias, the clip, then + residual, stored as T. bias: kW float32 values or null; residual:
// kW values of T or null. Shared by every kernel that stores float32 accumulators into T.
template <class T, int kW>
__device__ __forceinline__ void epilogue_store(T* out, float (&acc)[kW], const float* bias, const Clip& clip,
                                               const T* residual) {
  if (bias != nullptr) {
    float b[kW];
    load_floats<float, kW>(bias, b);
#pragma unroll
    for (int j = 0; j < kW; ++j) acc[j] += b[j];
  }
#pragma unroll
  for (int j = 0; j < kW; ++j) acc[j] = apply_clip(acc[j], clip);
  if (residual != nullptr) {
    float r[kW];
    load_floats<T, kW>(residual, r);
#pragma unroll
    for (int j = 0; j < kW; ++j) acc[j] += r[j];
  }
  store_floats<T, kW>(out, acc);
}

// A Clip as half2 bounds for __hmax2_nan / __hmin2_nan (NaN passes, as apply_clip): rounding is monotonic, so
// clipping the rounded value to the rounded bounds gives the rounded clipped value. Disabled: infinite bounds.
struct ClipH2 {
  __half2 lo, hi;
};
__device__ __forceinline__ ClipH2 clip_h2(const Clip& c) {
  const float inf = __int_as_float(0x7f800000);
  return ClipH2{__float2half2_rn(c.enabled ? c.lo : -inf), __float2half2_rn(c.enabled ? c.hi : inf)};
}
__device__ __forceinline__ __half2 clip2(__half2 v, const ClipH2& c) { return __hmin2_nan(__hmax2_nan(v, c.lo), c.hi); }

// In-kernel split-K, the arrival at a tile (the threadfence-before-arrival / threadfence-after pattern of the
// CUDA programming guide): every thread of the block has stored its partial sums; the block counts itself in at
// `counter`; true in every thread of the last of the tile's `splits` blocks, which then reads the other blocks'
// partials (through L2: __ldcg) and must put the counter back to zero for the next GEMM or replay.
// `flag`: a word of shared memory no thread touches meanwhile (a kernel whose dynamic shared memory may take all
// the device allows has no room for a static variable; the overload below has its own).
__device__ __forceinline__ bool splitk_arrive_last(unsigned* counter, unsigned splits, volatile int* flag) {
  __threadfence();  // this thread's partial sums are visible to every block before the block counts itself in
  __syncthreads();
  if (threadIdx.x == 0) *flag = atomicAdd(counter, 1u) + 1 == splits ? 1 : 0;
  __syncthreads();
  if (*flag == 0) return false;
  __threadfence();  // the other blocks' partial sums, published before their arrival, are read after ours
  return true;
}
__device__ __forceinline__ bool splitk_arrive_last(unsigned* counter, unsigned splits) {
  __shared__ int last_arrival;
  return splitk_arrive_last(counter, splits, &last_arrival);
}

// The GPU's %globaltimer in ns (its tick on an H200: 32 ns, read in about 11 ns; mnv2_stage_bench measures it).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Programmatic Dependent Launch (sm_90 and newer; no-ops in code compiled for older architectures, where the
// cuda backend never makes programmatic graph edges). A kernel that may start before the previous kernel of
// the stream has finished calls pdl_wait() before it reads anything an earlier kernel wrote or writes anything
// an earlier kernel reads: it returns once every earlier kernel has completed and its writes are visible (so
// the ordering is transitive along the chain). What it does before (loading weights, the block's setup) overlaps
// the previous kernel's tail. pdl_launch_dependents() lets the next kernel's blocks be scheduled once every
// block of this one has called it (or exited); it does not release any memory ordering.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
// Both, at the start of a kernel that loads nothing ahead.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}

}  // namespace mnv2::kernels
#endif  // __CUDACC__
