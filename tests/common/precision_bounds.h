// Error bounds of reduced-precision arithmetic shared by the GPU kernel tests (tests/gpu/test_kernels_*.cpp) and
// the op harness (tests/ops): unit roundoffs and the bound of one dot product, so both judge a sum the same way.
#pragma once

namespace mnv2::test {

// Unit roundoffs: float32 (2^-24), and half and TF32 (10 stored mantissa bits: 2^-11).
inline constexpr double kU32 = 1.0 / (1 << 24);
inline constexpr double kU16 = 1.0 / (1 << 11);

// A dot product of `terms` products whose operands were rounded with unit roundoff `u_in` (0: exact float32
// operands; kU16: TF32 or half) and summed in float32 in any order: its error stays within this factor times
// the sum of the products' absolute values (each product off by at most 2 u_in + u_in^2, and terms + 2 float32
// roundings, one spare for an epilogue's bias).
inline constexpr double dot_error_factor(double u_in, double terms) {
  return 2 * u_in + u_in * u_in + (terms + 2) * kU32;
}

}  // namespace mnv2::test
