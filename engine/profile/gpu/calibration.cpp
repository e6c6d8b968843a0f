// The GPU's roofline ceilings (see mnv2/roofline.h): a large device-to-device copy for memory bandwidth
// and a large cuBLAS GEMM in the run's precision for FLOP/s, each timed with a cudaEvent pair per run.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include "gpu/runtime.h"
#include "mnv2/error.h"
#include "mnv2/roofline.h"
#include "profile/gpu/gpu_timing.h"

namespace mnv2 {
namespace {

using gpu::CublasHandle;
using gpu::DeviceBuffer;
using gpu::Event;

constexpr int kWarmup = 3;
constexpr int kRuns = 10;

// Best rate (units / second) of kRuns timed enqueues of `work` on `stream`, after kWarmup untimed ones.
template <typename F>
double best_rate(double units, cudaStream_t stream, F&& work) {
  Event start = gpu::make_event(), stop = gpu::make_event();
  for (int i = 0; i < kWarmup; ++i) work();
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream));
  double best = 0;
  for (int i = 0; i < kRuns; ++i) {
    MNV2_CHECK_CUDA(cudaEventRecord(start.get(), stream));
    work();
    MNV2_CHECK_CUDA(cudaEventRecord(stop.get(), stream));
    MNV2_CHECK_CUDA(cudaEventSynchronize(stop.get()));
    float ms = 0;
    MNV2_CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (ms > 0) best = std::max(best, units / (ms / 1e3));
  }
  return best;
}

}  // namespace

namespace gpu {

std::string calibration_key(int device) {
  cudaDeviceProp prop{};
  MNV2_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int sm_khz = 0, mem_khz = 0;
  MNV2_CHECK_CUDA(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  MNV2_CHECK_CUDA(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  char uuid[64];
  int at = 0;
  for (int i = 0; i < 16; ++i) {
    at += std::snprintf(uuid + at, sizeof uuid - static_cast<size_t>(at), "%02x",
                        static_cast<unsigned char>(prop.uuid.bytes[i]));
    if (i == 3 || i == 5 || i == 7 || i == 9) uuid[at++] = '-';
  }
  uuid[at] = '\0';
  return "gpu|" + std::string(prop.name) + "|GPU-" + uuid + "|sm " + std::to_string(sm_khz / 1000) + " MHz|mem " +
         std::to_string(mem_khz / 1000) + " MHz";
}

Ceilings calibrate_device(int device, Precision precision) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device >= count) {
    cudaGetLastError();
    throw Error("no CUDA device " + std::to_string(device) + " to calibrate");
  }
  MNV2_CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  MNV2_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  Ceilings c;
  c.device = prop.name;
  c.key = calibration_key(device);
  size_t free_bytes = 0, total_bytes = 0;
  MNV2_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));

  cudaStream_t raw = nullptr;
  MNV2_CHECK_CUDA(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  gpu::Stream stream(raw);

  // Bandwidth: a copy reads and writes every byte once.
  size_t copy_bytes = std::min(size_t{1} << 30, free_bytes / 8);
  copy_bytes &= ~size_t{4095};
  if (copy_bytes < (size_t{16} << 20)) throw Error("too little free device memory to calibrate the copy bandwidth");
  {
    DeviceBuffer src(copy_bytes), dst(copy_bytes);
    MNV2_CHECK_CUDA(cudaMemsetAsync(src.get(), 1, copy_bytes, stream.get()));
    c.bandwidth_gb_s = best_rate(2.0 * static_cast<double>(copy_bytes) / 1e9, stream.get(), [&] {
      MNV2_CHECK_CUDA(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, stream.get()));
    });
  }

  // FLOP/s: C = A * B, square, float32 accumulation. fp32: CUBLAS_DEFAULT_MATH never uses TF32 tensor
  // cores for SGEMM, so this is the strict fp32 ceiling; tf32: the same SGEMM allowed TF32 tensor cores;
  // fp16: half A, B and C on tensor cores with float32 compute (what the fp16 GEMMs of both backends do).
  const size_t element = precision == Precision::fp16 ? 2 : 4;
  int n = 8192;
  if (free_bytes / 4 < 3 * element * size_t{8192} * 8192) n = 4096;
  const size_t matrix_bytes = element * static_cast<size_t>(n) * static_cast<size_t>(n);
  std::string gemm;
  {
    DeviceBuffer a(matrix_bytes), b(matrix_bytes), out(matrix_bytes);
    MNV2_CHECK_CUDA(cudaMemsetAsync(a.get(), 0, matrix_bytes, stream.get()));
    MNV2_CHECK_CUDA(cudaMemsetAsync(b.get(), 0, matrix_bytes, stream.get()));
    cublasHandle_t h = nullptr;
    MNV2_CHECK_CUBLAS(cublasCreate(&h));
    CublasHandle handle(h);
    MNV2_CHECK_CUBLAS(cublasSetStream(handle.get(), stream.get()));
    MNV2_CHECK_CUBLAS(cublasSetMathMode(
        handle.get(), precision == Precision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    const float one = 1.0f, zero = 0.0f;
    const double flop = 2.0 * n * static_cast<double>(n) * n;
    if (precision == Precision::fp16) {
      gemm = "cuBLAS GemmEx n=" + std::to_string(n) + " (half A, B, C; CUBLAS_COMPUTE_32F, tensor cores)";
      c.gflop_s = best_rate(flop / 1e9, stream.get(), [&] {
        MNV2_CHECK_CUBLAS(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), CUDA_R_16F, n,
                                       b.get(), CUDA_R_16F, n, &zero, out.get(), CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
      });
    } else {
      gemm = "cuBLAS SGEMM n=" + std::to_string(n) +
             (precision == Precision::tf32 ? " (CUBLAS_TF32_TENSOR_OP_MATH)" : " (CUBLAS_DEFAULT_MATH, no TF32)");
      c.gflop_s = best_rate(flop / 1e9, stream.get(), [&] {
        MNV2_CHECK_CUBLAS(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                      static_cast<const float*>(a.get()), n, static_cast<const float*>(b.get()), n,
                                      &zero, static_cast<float*>(out.get()), n));
      });
    }
  }
  MNV2_CHECK_CUDA(cudaStreamSynchronize(stream.get()));
  c.method = "device-to-device copy of " + std::to_string(copy_bytes >> 20) + " MiB (read + write), " + gemm +
             "; best of " + std::to_string(kRuns) + " after " + std::to_string(kWarmup) + " warm-up, cudaEvent timing";
  return c;
}

}  // namespace gpu
}  // namespace mnv2
