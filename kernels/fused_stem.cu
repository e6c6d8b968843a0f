// The stem and the first block in one kernel (fused_stem.cuh). A block of kFusedStemThreads threads owns
// TH x kFusedStemTileW output pixels of one image:
//   1. the input window the tile needs ((TH + 1) * 2 + 3 rows of each of the 3 channels, zero outside the
//      image), float32, into shared memory, its columns stored even ones first (fused_stem_window_pitch);
//   2. the stem over the (TH + 2) x (kFusedStemTileW + 2) pixels the depthwise reads, 8 channels per work item
//      (27 inputs in registers, 216 FFMA), + bias, clip, rounded to the activation type T, into shared memory;
//      zero where the pixel lies outside the stem's map (the depthwise's padding);
//   3. the depthwise 3x3 over that, 8 channels per item, + bias, clip, T, into shared memory;
//   4. the projection, 8 output channels per item (the stem's channels read 16 bytes at a time), + bias, into a
//      staging tile that the block then stores with 16-byte accesses, the tile's rows contiguous in NHWC.
// Every weight is a kernel parameter: with the channel group a compile-time index (each work item runs the
// unrolled branch of its group; a warp's items share the group but at the seams of phase 2) the FFMA read them
// as constant-bank operands, no load instruction.
#include <algorithm>
#include <iterator>
#include <type_traits>

#include "kernels/fused_stem.cuh"
#include "kernels/layout.cuh"  // to_half_bits

namespace mnv2::kernels {
namespace {

constexpr int kThreads = kFusedStemThreads;
constexpr int kTileW = kFusedStemTileW;
constexpr int kStride = 2;  // the stem's (fused_stem_refusal)
constexpr int kPitch = fused_stem_window_pitch(kStride);

template <int C1, int C2>
struct Weights {
  float stem[27][C1];  // [(kh * 3 + kw) * 3 + ci][channel]
  float stem_bias[C1];
  float dw[9][C1];
  float dw_bias[C1];
  float project[C2][C1];
  float project_bias[C2];
};

struct Geometry {
  int in_h, in_w, stem_h, stem_w, out_h, out_w;
  int stem_pad_top, stem_pad_left, dw_pad_top, dw_pad_left;
  int tiles_w;
  Clip stem_clip, dw_clip;
};

template <int C1, int C2>
struct Args {
  Geometry g;
  const float* input;
  void* output;
  Weights<C1, C2> w;
};

// The layout of one block's shared memory (elements), as fused_stem_smem_bytes counts it.
template <class T, int C1, int TH>
struct Smem {
  static constexpr int kRows = TH + 2, kCols = kTileW + 2;  // the stem's map the depthwise reads
  static constexpr int kStemPixels = kRows * kCols;
  static constexpr int kWinRows = (kRows - 1) * kStride + 3, kWinCols = (kCols - 1) * kStride + 3;
  static constexpr int kEvenCols = (kWinCols + 1) / 2;
  // floats, rounded up to 16 bytes: the maps after it are read and written 16 bytes at a time
  static constexpr int kWindow = (3 * kWinRows * kPitch + 3) / 4 * 4;
  static constexpr int kLd = C1 + 16 / static_cast<int>(sizeof(T));  // a pixel's pitch: 16 bytes more
  static constexpr int kTile = TH * kTileW;
  static constexpr int kBytes = kWindow * 4 + (kStemPixels + kTile) * kLd * static_cast<int>(sizeof(T));
  static_assert(kPitch >= kWinCols, "the window's rows fit their pitch");
};

// Column j of the window at its place in a row: even columns first.
__device__ __forceinline__ int window_col(int j, int even_cols) { return (j & 1) ? even_cols + (j >> 1) : (j >> 1); }

template <class T, int C1, int C2, int TH>
__global__ void __launch_bounds__(kThreads, 2) fused_stem_kernel(const Args<C1, C2> a) {
  using L = Smem<T, C1, TH>;
  constexpr int G1 = C1 / 8, G2 = C2 / 8;
  static_assert(C1 % 8 == 0 && C2 % 8 == 0, "channels come in groups of 8");
  extern __shared__ __align__(16) unsigned char smem[];
  float* win = reinterpret_cast<float*>(smem);
  T* stem = reinterpret_cast<T*>(smem + L::kWindow * 4);
  T* dwo = stem + L::kStemPixels * L::kLd;
  T* stage = stem;  // the projection's tile, once the depthwise has read the stem's map
  constexpr int kLdOut = C2 + 16 / static_cast<int>(sizeof(T));

  const Geometry& g = a.g;
  const int tid = threadIdx.x;
  const int n = blockIdx.y;
  const int ty0 = static_cast<int>(blockIdx.x) / g.tiles_w * TH;
  const int tx0 = static_cast<int>(blockIdx.x) % g.tiles_w * kTileW;
  const int sy0 = ty0 - g.dw_pad_top, sx0 = tx0 - g.dw_pad_left;  // the stem's map at the tile's corner
  const int iy0 = sy0 * kStride - g.stem_pad_top, ix0 = sx0 * kStride - g.stem_pad_left;

  pdl_enter();  // the input may come from the previous kernel (the uint8 conversion)
  // 1. The input window.
  const float* in = a.input + static_cast<int64_t>(n) * 3 * g.in_h * g.in_w;
  constexpr int kWinElems = 3 * L::kWinRows * L::kWinCols;
  for (int e = tid; e < kWinElems; e += kThreads) {
    const int ci = e / (L::kWinRows * L::kWinCols);
    const int r = e / L::kWinCols % L::kWinRows, j = e % L::kWinCols;
    const int y = iy0 + r, x = ix0 + j;
    const bool inside = y >= 0 && y < g.in_h && x >= 0 && x < g.in_w;
    win[(ci * L::kWinRows + r) * kPitch + window_col(j, L::kEvenCols)] =
        inside ? __ldg(in + (static_cast<int64_t>(ci) * g.in_h + y) * g.in_w + x) : 0.0f;
  }
  __syncthreads();

  // 2. The stem over the depthwise's window, 8 channels per item.
  for (int item = tid; item < G1 * L::kStemPixels; item += kThreads) {
    const int grp = item / L::kStemPixels, px = item - grp * L::kStemPixels;
    const int sy = px / L::kCols, sx = px - sy * L::kCols;
    float acc[8];
    const bool inside = sy0 + sy >= 0 && sy0 + sy < g.stem_h && sx0 + sx >= 0 && sx0 + sx < g.stem_w;
    if (inside) {
      float x[27];
#pragma unroll
      for (int ci = 0; ci < 3; ++ci)
#pragma unroll
        for (int ky = 0; ky < 3; ++ky) {
          const float* row = win + (ci * L::kWinRows + sy * kStride + ky) * kPitch;
          x[(ky * 3 + 0) * 3 + ci] = row[sx];
          x[(ky * 3 + 1) * 3 + ci] = row[L::kEvenCols + sx];
          x[(ky * 3 + 2) * 3 + ci] = row[sx + 1];
        }
#pragma unroll
      for (int gg = 0; gg < G1; ++gg) {
        if (gg != grp) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] = a.w.stem_bias[gg * 8 + j];
#pragma unroll
        for (int t = 0; t < 27; ++t)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[j] = fmaf(x[t], a.w.stem[t][gg * 8 + j], acc[j]);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = apply_clip(acc[j], g.stem_clip);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = 0.0f;
    }
    store_floats<T, 8>(stem + px * L::kLd + grp * 8, acc);
  }
  __syncthreads();

  // 3. The depthwise, 8 channels of one output pixel per item (the group uniform in a warp: kTile is a multiple
  // of 32).
  for (int item = tid; item < G1 * L::kTile; item += kThreads) {
    const int grp = item / L::kTile, px = item - grp * L::kTile;
    const int oy = px / kTileW, ox = px % kTileW;
    float acc[8];
#pragma unroll
    for (int gg = 0; gg < G1; ++gg) {
      if (gg != grp) continue;
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = a.w.dw_bias[gg * 8 + j];
#pragma unroll
      for (int ky = 0; ky < 3; ++ky)
#pragma unroll
        for (int kx = 0; kx < 3; ++kx) {
          float s[8];
          load_floats<T, 8, true>(stem + ((oy + ky) * L::kCols + ox + kx) * L::kLd + gg * 8, s);
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[j] = fmaf(s[j], a.w.dw[ky * 3 + kx][gg * 8 + j], acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = apply_clip(acc[j], g.dw_clip);
    store_floats<T, 8>(dwo + px * L::kLd + grp * 8, acc);
  }
  __syncthreads();

  // 4. The projection, 8 output channels of one pixel per item, into the staging tile.
  for (int item = tid; item < G2 * L::kTile; item += kThreads) {
    const int grp = item / L::kTile, px = item - grp * L::kTile;
    float acc[8];
#pragma unroll
    for (int gg = 0; gg < G2; ++gg) {
      if (gg != grp) continue;
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = a.w.project_bias[gg * 8 + j];
#pragma unroll
      for (int c8 = 0; c8 < G1; ++c8) {
        float d[8];
        load_floats<T, 8, true>(dwo + px * L::kLd + c8 * 8, d);
#pragma unroll
        for (int c = 0; c < 8; ++c)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[j] = fmaf(d[c], a.w.project[gg * 8 + j][c8 * 8 + c], acc[j]);
      }
    }
    store_floats<T, 8>(stage + px * kLdOut + grp * 8, acc);
  }
  __syncthreads();

  // The tile's rows, 16 bytes per access.
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunksPerPixel = C2 / kPer;
  T* out = static_cast<T*>(a.output);
  for (int q = tid; q < L::kTile * kChunksPerPixel; q += kThreads) {
    const int px = q / kChunksPerPixel, part = q % kChunksPerPixel;
    const int oy = ty0 + px / kTileW, ox = tx0 + px % kTileW;
    if (oy >= g.out_h || ox >= g.out_w) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(stage + px * kLdOut + part * kPer);
    *reinterpret_cast<uint4*>(out + ((static_cast<int64_t>(n) * g.out_h + oy) * g.out_w + ox) * C2 + part * kPer) = v;
  }
}

template <class T, int C1, int C2, int TH>
void launch_one(const FusedStemParams& p, cudaStream_t stream) {
  using L = Smem<T, C1, TH>;
  const FusedStemShape& s = p.shape;
  Args<C1, C2> a{};
  a.g.in_h = s.in_h;
  a.g.in_w = s.in_w;
  a.g.stem_h = s.stem_h;
  a.g.stem_w = s.stem_w;
  a.g.out_h = s.out_h;
  a.g.out_w = s.out_w;
  a.g.stem_pad_top = s.stem_pad_top;
  a.g.stem_pad_left = s.stem_pad_left;
  a.g.dw_pad_top = s.dw_pad_top;
  a.g.dw_pad_left = s.dw_pad_left;
  a.g.tiles_w = static_cast<int>(ceil_div(s.out_w, kTileW));
  a.g.stem_clip = p.stem_clip;
  a.g.dw_clip = p.dw_clip;
  a.input = p.input;
  a.output = p.output;
  const FusedStemWeights& w = p.weights;
  std::copy(w.stem.begin(), w.stem.end(), &a.w.stem[0][0]);
  std::copy(w.stem_bias.begin(), w.stem_bias.end(), a.w.stem_bias);
  std::copy(w.dw.begin(), w.dw.end(), &a.w.dw[0][0]);
  std::copy(w.dw_bias.begin(), w.dw_bias.end(), a.w.dw_bias);
  std::copy(w.project.begin(), w.project.end(), &a.w.project[0][0]);
  std::copy(w.project_bias.begin(), w.project_bias.end(), a.w.project_bias);
  auto* kernel = fused_stem_kernel<T, C1, C2, TH>;
  static const cudaError_t opted =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes));
  MNV2_KERNEL_CALL("fused_stem", opted);
  const dim3 grid(static_cast<unsigned>(ceil_div(s.out_h, TH) * a.g.tiles_w), static_cast<unsigned>(s.batch));
  kernel<<<grid, kThreads, L::kBytes, stream>>>(a);
  MNV2_CHECK_LAUNCH("fused_stem");
}

template <class T, int C1, int C2>
void launch_tile(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  if (v.tile_h == 16) return launch_one<T, C1, C2, 16>(p, stream);
  return launch_one<T, C1, C2, 8>(p, stream);
}

template <class T>
void launch_type(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  static_assert(std::size(kFusedStemChannels) == 4, "one branch per built channel pair");
  const int c1 = p.shape.stem_channels, c2 = p.shape.out_channels;
  if (c1 == 32 && c2 == 16) return launch_tile<T, 32, 16>(p, v, stream);
  if (c1 == 16 && c2 == 8) return launch_tile<T, 16, 8>(p, v, stream);
  if (c1 == 24 && c2 == 16) return launch_tile<T, 24, 16>(p, v, stream);
  if (c1 == 48 && c2 == 24) return launch_tile<T, 48, 24>(p, v, stream);
  throw Error("fused_stem: no kernel for " + std::to_string(c1) + "->" + std::to_string(c2) + " channels");
}

}  // namespace

// tiles.h's arithmetic is the kernel's own.
static_assert(Smem<__half, 32, 16>::kBytes == (3 * 37 * kPitch + 3) / 4 * 16 + (18 * 18 + 256) * 40 * 2);
static_assert(Smem<float, 48, 8>::kWindow % 4 == 0 && Smem<__half, 16, 8>::kWindow % 4 == 0);

FusedStemWeights fused_stem_pack(const FusedStemShape& s, const std::vector<float>& stem,
                                 const std::vector<float>& stem_bias, const std::vector<float>& dw,
                                 const std::vector<float>& dw_bias, const std::vector<float>& project,
                                 const std::vector<float>& project_bias) {
  const size_t c1 = static_cast<size_t>(std::max(0, s.stem_channels));
  const size_t c2 = static_cast<size_t>(std::max(0, s.out_channels));
  if (stem.size() != c1 * 27 || dw.size() != c1 * 9 || project.size() != c2 * c1 ||
      (!stem_bias.empty() && stem_bias.size() != c1) || (!dw_bias.empty() && dw_bias.size() != c1) ||
      (!project_bias.empty() && project_bias.size() != c2))
    throw Error("fused_stem: weight sizes do not match " + std::to_string(c1) + "->" + std::to_string(c2) +
                " channels");
  FusedStemWeights w;
  w.stem.resize(27 * c1);
  for (size_t o = 0; o < c1; ++o)
    for (size_t ci = 0; ci < 3; ++ci)
      for (size_t t = 0; t < 9; ++t) w.stem[(t * 3 + ci) * c1 + o] = stem[(o * 3 + ci) * 9 + t];
  w.dw.resize(9 * c1);
  for (size_t o = 0; o < c1; ++o)
    for (size_t t = 0; t < 9; ++t) w.dw[t * c1 + o] = dw[o * 9 + t];
  w.project = project;
  if (s.dtype == DType::f16) {
    const std::vector<uint16_t> bits = to_half_bits(project);
    for (size_t i = 0; i < bits.size(); ++i) w.project[i] = half_bits_to_float(bits[i]);
  }
  w.stem_bias = stem_bias.empty() ? std::vector<float>(c1, 0.0f) : stem_bias;
  w.dw_bias = dw_bias.empty() ? std::vector<float>(c1, 0.0f) : dw_bias;
  w.project_bias = project_bias.empty() ? std::vector<float>(c2, 0.0f) : project_bias;
  return w;
}

void launch_fused_stem(const FusedStemParams& p, const FusedStemVariant& v, cudaStream_t stream) {
  const FusedStemShape& s = p.shape;
  if (const std::string why = fused_stem_refusal(s); !why.empty()) throw Error("fused_stem: " + why);
  if (v.tile_h != 8 && v.tile_h != 16)
    throw Error("fused_stem: tile of " + std::to_string(v.tile_h) + " rows (8 or 16 only)");
  const size_t c1 = static_cast<size_t>(s.stem_channels), c2 = static_cast<size_t>(s.out_channels);
  const FusedStemWeights& w = p.weights;
  if (w.stem.size() != 27 * c1 || w.stem_bias.size() != c1 || w.dw.size() != 9 * c1 || w.dw_bias.size() != c1 ||
      w.project.size() != c2 * c1 || w.project_bias.size() != c2)
    throw Error("fused_stem: the packed weights do not match the shape (fused_stem_pack)");
  if (p.input == nullptr || p.output == nullptr) throw Error("fused_stem: null operand");
  if (!aligned16(p.output)) throw Error("fused_stem: the output must be 16-byte aligned");
  if (s.dtype == DType::f16) return launch_type<__half>(p, v, stream);
  return launch_type<float>(p, v, stream);
}

}  // namespace mnv2::kernels
