// Batched transpose (see layout.cuh): 32x32 tiles, 32x8 threads, each thread moving 4 values; the tile row
// is padded by one float so the column-wise reads hit 32 different banks.
#include <algorithm>

#include "kernels/layout.cuh"

namespace mnv2::kernels {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // threads along the tile's rows; each moves kTile / kRowsPerPass values
constexpr int64_t kMaxGridY = 65535;

__global__ void __launch_bounds__(kTile* kRowsPerPass) transpose_kernel(const TransposeParams p, int64_t batch0) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t col_tiles = (p.cols + kTile - 1) / kTile;
  const int64_t r0 = blockIdx.x / col_tiles * kTile;
  const int64_t c0 = blockIdx.x % col_tiles * kTile;
  const int64_t n = batch0 + blockIdx.y;
  const float* in = p.input + n * p.rows * p.cols;
  float* out = p.output + n * p.rows * p.cols;
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int i = ty; i < kTile; i += kRowsPerPass) {
    const int64_t r = r0 + i, c = c0 + tx;
    if (r < p.rows && c < p.cols) tile[i][tx] = __ldg(in + r * p.cols + c);
  }
  __syncthreads();
#pragma unroll
  for (int i = ty; i < kTile; i += kRowsPerPass) {
    const int64_t c = c0 + i, r = r0 + tx;
    if (r < p.rows && c < p.cols) out[c * p.rows + r] = tile[tx][i];
  }
}

}  // namespace

void launch_transpose(const TransposeParams& p, cudaStream_t stream) {
  if (p.batch < 1 || p.rows < 1 || p.cols < 1) throw Error("transpose: sizes must be positive");
  if (p.input == nullptr || p.output == nullptr) throw Error("transpose: null operand");
  if (p.input == p.output) throw Error("transpose: the output must not alias the input");
  const int64_t tiles = ceil_div(p.rows, kTile) * ceil_div(p.cols, kTile);
  if (tiles > 0x7fffffff) throw Error("transpose: the matrix is too large for one launch");
  const dim3 block(kTile, kRowsPerPass);
  for (int64_t b0 = 0; b0 < p.batch; b0 += kMaxGridY) {
    const int64_t count = std::min(kMaxGridY, p.batch - b0);
    transpose_kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(count)), block, 0, stream>>>(p, b0);
    MNV2_CHECK_LAUNCH("transpose");
  }
}

}  // namespace mnv2::kernels
