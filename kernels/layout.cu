// Batched transpose and type conversion (see layout.cuh): 32x32 tiles, 32x8 threads, each thread moving 4
// values; the tile row is padded by one float so the column-wise reads hit 32 different banks.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/layout.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // threads along the tile's rows; each moves kTile / kRowsPerPass values
constexpr int64_t kMaxGridY = 65535;

// The tile holds float32 whatever the element types: converting on the way in and out costs nothing here.
template <class TIn, class TOut>
__global__ void __launch_bounds__(kTile* kRowsPerPass) transpose_kernel(const TransposeParams p, int64_t batch0) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  __shared__ float tile[kTile][kTile + 1];
  const int64_t col_tiles = (p.cols + kTile - 1) / kTile;
  const int64_t r0 = blockIdx.x / col_tiles * kTile;
  const int64_t c0 = blockIdx.x % col_tiles * kTile;
  const int64_t n = batch0 + blockIdx.y;
  const TIn* in = static_cast<const TIn*>(p.input) + n * p.rows * p.cols;
  TOut* out = static_cast<TOut*>(p.output) + n * p.rows * p.cols;
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int i = ty; i < kTile; i += kRowsPerPass) {
    const int64_t r = r0 + i, c = c0 + tx;
    if (r < p.rows && c < p.cols) tile[i][tx] = to_float(__ldg(in + r * p.cols + c));
  }
  __syncthreads();
#pragma unroll
  for (int i = ty; i < kTile; i += kRowsPerPass) {
    const int64_t c = c0 + i, r = r0 + tx;
    if (r < p.rows && c < p.cols) out[c * p.rows + r] = from_float<TOut>(tile[tx][i]);
  }
}

template <class TIn, class TOut>
__global__ void __launch_bounds__(kBlockThreads) convert_kernel(const ConvertParams p) {
  pdl_enter();  // PDL (common.cuh): the previous kernel has finished before anything is read or written
  const TIn* in = static_cast<const TIn*>(p.input);
  TOut* out = static_cast<TOut*>(p.output);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_float<TOut>(to_float(__ldg(in + i)));
}

template <class TIn, class TOut>
void launch_transpose_typed(const TransposeParams& p, int64_t tiles, cudaStream_t stream) {
  const dim3 block(kTile, kRowsPerPass);
  for (int64_t b0 = 0; b0 < p.batch; b0 += kMaxGridY) {
    const int64_t count = std::min(kMaxGridY, p.batch - b0);
    transpose_kernel<TIn, TOut>
        <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(count)), block, 0, stream>>>(p, b0);
    MNV2_CHECK_LAUNCH("transpose");
  }
}

// IEEE binary16 from binary32, round to nearest, ties to even (NaN stays NaN, overflow goes to infinity).
uint16_t float_to_half_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                                               // below 2^-14: subnormal half
    // |value| * 2^24, rounded to nearest even, is the subnormal's bit pattern (the scaling is exact).
    float magnitude;
    std::memcpy(&magnitude, &abs, sizeof magnitude);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f)));
  }
  const uint32_t mantissa = abs & 0x7fffffu;
  uint32_t h = ((abs >> 23) - 112u) << 10 | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

}  // namespace

std::vector<uint16_t> to_half_bits(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_half_bits(values[i]);
  return bits;
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa != 0 ? NAN : INFINITY;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return (bits & 0x8000u) != 0 ? -magnitude : magnitude;
}

void launch_convert(const ConvertParams& p, cudaStream_t stream) {
  if (p.count < 1 || p.input == nullptr || p.output == nullptr) throw Error("convert: empty or null operand");
  if (p.input == p.output) throw Error("convert: the output must not alias the input");
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(p.count, kBlockThreads), 1, 4096));
  if (p.in_type == DType::f16 && p.out_type == DType::f32) {
    convert_kernel<__half, float><<<blocks, kBlockThreads, 0, stream>>>(p);
  } else if (p.in_type == DType::f32 && p.out_type == DType::f16) {
    convert_kernel<float, __half><<<blocks, kBlockThreads, 0, stream>>>(p);
  } else {
    throw Error(std::string("convert: nothing to convert from ") + to_string(p.in_type) + " to " +
                to_string(p.out_type));
  }
  MNV2_CHECK_LAUNCH("convert");
}

void launch_transpose(const TransposeParams& p, cudaStream_t stream) {
  if (p.batch < 1 || p.rows < 1 || p.cols < 1) throw Error("transpose: sizes must be positive");
  if (p.input == nullptr || p.output == nullptr) throw Error("transpose: null operand");
  if (p.input == p.output) throw Error("transpose: the output must not alias the input");
  const int64_t tiles = ceil_div(p.rows, kTile) * ceil_div(p.cols, kTile);
  if (tiles > 0x7fffffff) throw Error("transpose: the matrix is too large for one launch");
  if (p.in_type == DType::f32 && p.out_type == DType::f32)
    return launch_transpose_typed<float, float>(p, tiles, stream);
  if (p.in_type == DType::f32 && p.out_type == DType::f16)
    return launch_transpose_typed<float, __half>(p, tiles, stream);
  if (p.in_type == DType::f16 && p.out_type == DType::f32)
    return launch_transpose_typed<__half, float>(p, tiles, stream);
  return launch_transpose_typed<__half, __half>(p, tiles, stream);
}

}  // namespace mnv2::kernels
