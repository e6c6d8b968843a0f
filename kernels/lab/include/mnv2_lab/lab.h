// The kernel lab's common slot definitions (docs/KERNEL_LAB.md): element types, the clip epilogue, and the
// macros a user kernel declares its launch geometry with. Compiled by NVRTC with the user's kernel (device code,
// no standard library) and by the host code that fills the parameter structs, so it holds plain data only.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define MNV2_LAB_HD __host__ __device__ __forceinline__
#else
#define MNV2_LAB_HD inline
#endif

namespace mnv2_lab {

// Element type of the activations (input, output, residual). Weights and biases are always float32.
enum DType : int {
  kF32 = 0,  // float
  kF16 = 1,  // __half (cuda_fp16.h)
};

// The clamp applied after conv + bias: ReLU6 is {true, 0, 6}. NaN must propagate (compare, do not fminf/fmaxf).
struct Clip {
  bool enabled;  // false: values pass unchanged
  float lo;      // lower bound
  float hi;      // upper bound (may be +inf)
};

MNV2_LAB_HD float apply_clip(float x, Clip c) {
  if (!c.enabled) return x;
  return x < c.lo ? c.lo : (x > c.hi ? c.hi : x);
}

MNV2_LAB_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace mnv2_lab

// Launch geometry, declared once in the kernel source and read by the lab from the compiled module
// (cudaLibraryGetGlobal) before the first launch:
//   MNV2_LAB_BLOCK(x, y, z)  threads per block (default when absent: 256, 1, 1)
//   MNV2_LAB_TILE(a, b)      work per thread; what a and b count is the slot's grid rule (default 1, 1)
//   MNV2_LAB_SHARED(bytes)   dynamic shared memory per block (default 0)
// The grid is always one-dimensional: grid.x = ceil(work items / (x * y * z)), where the slot's header says what
// one work item is (e.g. depthwise: a channels x b output columns of one output row of one image).
#define MNV2_LAB_BLOCK(x, y, z) extern "C" __device__ int mnv2_lab_block[3] = {(x), (y), (z)}
#define MNV2_LAB_TILE(a, b) extern "C" __device__ int mnv2_lab_tile[2] = {(a), (b)}
#define MNV2_LAB_SHARED(bytes) extern "C" __device__ int mnv2_lab_shared = (bytes)
