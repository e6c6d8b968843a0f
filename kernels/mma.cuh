// Warp-level tensor-core and copy primitives for the hand-written kernels (device code only, compute_80 and newer:
// MNV2_HAS_MMA is defined where they exist; a kernel built for older code takes its FFMA path or refuses), and a
// 16-byte global -> shared copy for every architecture (copy16).
#pragma once

#if defined(__CUDACC__)
#include <cuda_fp16.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MNV2_HAS_MMA 1
#endif

namespace mnv2::kernels {

#ifdef MNV2_HAS_MMA
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared without registers; inside false: zero-filled, nothing read.
__device__ __forceinline__ void cp16(void* dst, const void* src, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Four 8x8 half matrices; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// c (16x8, float32) += a (16x16 half, row-major) * b (16x8 half). Fragments (PTX ISA, m16n8k16 .f16): lane l
// holds A rows l / 4 and l / 4 + 8 at columns 2 (l % 4) + {0, 1} (a[0], a[1]) and + 8 (a[2], a[3]); B column
// l / 4 at rows 2 (l % 4) + {0, 1} (b0) and + 8 (b1); C rows l / 4 (c[0], c[1]) and l / 4 + 8 (c[2], c[3]) at
// columns 2 (l % 4) + {0, 1}.
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c (16x8, float32) += a (16x8 TF32, row-major) * b (8x8 TF32). Fragments (PTX ISA, m16n8k8 .tf32): lane l holds
// A rows l / 4 (a[0]) and l / 4 + 8 (a[1]) at column l % 4, and the same rows at column l % 4 + 4 (a[2], a[3]);
// B column l / 4 at rows l % 4 (b0) and l % 4 + 4 (b1); C as mma16816. The operands are float32 bit patterns whose
// low 13 bits the tensor cores ignore: round them first (tf32_bits, or on the host) for round-to-nearest.
__device__ __forceinline__ void mma1688_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// A float32 rounded to TF32 (nearest, ties away from zero), as a fragment register.
__device__ __forceinline__ unsigned tf32_bits(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
// Two floats as a half2's bits (round to nearest), the low half first: one fragment register.
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}
#endif

// 16 bytes global -> shared on every architecture: cp.async where it exists (copy_wait_all then waits for it),
// a load and a store through registers below compute_80. inside false: zero-filled, nothing read.
__device__ __forceinline__ void copy16(void* dst, const void* src, bool inside) {
#ifdef MNV2_HAS_MMA
  cp16(dst, src, inside);
#else
  *static_cast<uint4*>(dst) = inside ? __ldg(static_cast<const uint4*>(src)) : make_uint4(0, 0, 0, 0);
#endif
}
__device__ __forceinline__ void copy_commit() {
#ifdef MNV2_HAS_MMA
  cp_commit();
#endif
}
__device__ __forceinline__ void copy_wait_all() {
#ifdef MNV2_HAS_MMA
  cp_wait_all();
#endif
}

}  // namespace mnv2::kernels
#endif  // __CUDACC__
