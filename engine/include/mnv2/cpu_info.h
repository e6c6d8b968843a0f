// What the host offers the cpu backends and which kernels they run there: the CPU's model name, the
// instruction sets CPUID reports, the ISA oneDNN dispatches to, threads. For `mnv2 info` and run metadata.
#pragma once

#include <string>
#include <vector>

#include "mnv2/json_io.h"

namespace mnv2 {

struct CpuKernelInfo {
  std::string model_name;             // /proc/cpuinfo "model name"
  std::vector<std::string> features;  // instruction sets CPUID reports and the OS enables: "AVX-512F", "AVX2", ...
  std::string onednn_version;         // "2.6.3"
  std::string onednn_isa;             // dnnl::get_effective_cpu_isa(): "avx512_core_bf16"
  std::string onednn_isa_limit;       // ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) when set, which caps it; else ""
  std::string reference_clone;        // the build of cpu-ref's loops the loader picked: "x86-64-v4", "x86-64-v3", ...
  int threads = 1;                    // of both cpu backends (MNV2_CPU_THREADS, else OpenMP's)
  std::string cpu_kernels;            // backend cpu: "oneDNN 2.6.3, jit avx512_core_bf16"
  std::string reference_kernels;      // backend cpu-ref: "plain loops (x86-64-v4 build) + oneDNN sgemm"
  std::string why;                    // how both were chosen, one sentence
};

// Gathered on each call (cheap). Throws UsageError when MNV2_CPU_THREADS is malformed, like the backends.
CpuKernelInfo cpu_kernel_info();

void to_json(json::Json& j, const CpuKernelInfo& info);  // for `mnv2 info --json`

// One line for backend descriptions and run metadata: "oneDNN 2.6.3, jit avx512_core_bf16 (CPUID: AVX-512F/
// BW/VL/VNNI/BF16, AVX2, FMA), OpenMP spin 1000 then sleep, 2 threads" (how idle OpenMP threads wait, as
// the runtime started).
std::string cpu_kernel_summary(int threads);
// The same for cpu-ref: "plain loops (x86-64-v4 build) + oneDNN sgemm (jit avx512_core_bf16), OpenMP ..., 2
// threads".
std::string reference_kernel_summary(int threads);

}  // namespace mnv2
