// The cpu backends' kernel choice as seen from here (see mnv2/cpu_info.h). Nothing is chosen from a table of
// CPU models: oneDNN dispatches on CPUID itself, and cpu-ref's loops are function clones the loader picks by
// CPUID (cpu_ops.cpp's MNV2_CPU_CLONES).
#include "mnv2/cpu_info.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <fstream>

#include "backends/cpu/cpu_common.h"

namespace mnv2 {
namespace {

std::string model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        const auto start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "unknown CPU" : line.substr(start);
      }
    }
  return "unknown CPU";
}

// Feature names older compilers' __builtin_cpu_supports does not know (clang 14, used by the fuzz build, refuses
// them at compile time): reported absent there.
#if defined(__clang__) && __clang_major__ < 16
#define MNV2_CPU_SUPPORTS_NEWER(name) false
#else
#define MNV2_CPU_SUPPORTS_NEWER(name) __builtin_cpu_supports(name)
#endif

std::vector<std::string> features() {
  std::vector<std::string> out;
#if defined(__x86_64__) && defined(__GNUC__)
  // libgcc's CPUID reading, which also checks that the OS saves the AVX and AVX-512 registers (XGETBV).
  __builtin_cpu_init();
  const std::pair<bool, const char*> known[] = {
      {__builtin_cpu_supports("sse4.2"), "SSE4.2"},
      {__builtin_cpu_supports("avx"), "AVX"},
      {__builtin_cpu_supports("avx2"), "AVX2"},
      {__builtin_cpu_supports("fma"), "FMA"},
      {MNV2_CPU_SUPPORTS_NEWER("f16c"), "F16C"},
      {MNV2_CPU_SUPPORTS_NEWER("avxvnni"), "AVX-VNNI"},
      {__builtin_cpu_supports("avx512f"), "AVX-512F"},
      {__builtin_cpu_supports("avx512dq"), "AVX-512DQ"},
      {__builtin_cpu_supports("avx512cd"), "AVX-512CD"},
      {__builtin_cpu_supports("avx512bw"), "AVX-512BW"},
      {__builtin_cpu_supports("avx512vl"), "AVX-512VL"},
      {__builtin_cpu_supports("avx512vnni"), "AVX-512VNNI"},
      {__builtin_cpu_supports("avx512bf16"), "AVX-512BF16"},
      {MNV2_CPU_SUPPORTS_NEWER("avx512fp16"), "AVX-512FP16"},
      {MNV2_CPU_SUPPORTS_NEWER("amx-tile"), "AMX-TILE"},
      {MNV2_CPU_SUPPORTS_NEWER("amx-bf16"), "AMX-BF16"},
      {MNV2_CPU_SUPPORTS_NEWER("amx-int8"), "AMX-INT8"},
  };
  for (const auto& [has, name] : known)
    if (has) out.emplace_back(name);
#endif
  return out;
}

std::string reference_clone() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
  return "x86-64 baseline";
#else
  return "the compiler's default target";
#endif
}

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all:
      return "all";
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
  }
  return "isa " + std::to_string(static_cast<int>(isa));
}

std::string isa_limit() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* v = std::getenv(name); v && *v) return std::string(name) + "=" + v;
  return "";
}

// "AVX-512F/BW/VL/VNNI/BF16, AVX2, FMA": the AVX-512 subsets in one token, then what oneDNN's f32 kernels use.
std::string feature_summary(const std::vector<std::string>& features) {
  std::string avx512, rest;
  for (const std::string& f : features) {
    if (f.rfind("AVX-512", 0) == 0) {
      const std::string sub = f.substr(7);
      if (sub == "DQ" || sub == "CD") continue;  // implied by the others on every CPU that has them
      avx512 += avx512.empty() ? "AVX-512" + sub : "/" + sub;
    } else if (f == "AVX2" || f == "FMA" || f.rfind("AMX", 0) == 0 || f == "AVX-VNNI") {
      rest += (rest.empty() ? "" : ", ") + f;
    }
  }
  if (avx512.empty() && rest.empty()) return features.empty() ? "none reported" : features.back();
  return avx512 + (avx512.empty() || rest.empty() ? "" : ", ") + rest;
}

// How the OpenMP runtime's idle threads wait, as it read the environment when it started (it reads it once,
// before main(); the mnv2 programs set GOMP_SPINCOUNT there unless the user set a policy: app/common/
// omp_wait_policy.h). Read here only to say it in descriptions and reports.
std::string omp_wait_summary() {
  if (const char* spin = std::getenv("GOMP_SPINCOUNT"); spin && *spin)
    return std::string("OpenMP spin ") + spin + " then sleep";
  if (const char* policy = std::getenv("OMP_WAIT_POLICY"); policy && *policy)
    return std::string("OpenMP ") + policy + " wait";
  return "OpenMP default wait (spin ~300000)";
}

}  // namespace

CpuKernelInfo cpu_kernel_info() {
  CpuKernelInfo info;
  info.model_name = model_name();
  info.features = features();
  const dnnl_version_t* v = dnnl_version();
  info.onednn_version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  info.onednn_isa = isa_name(dnnl::get_effective_cpu_isa());
  info.onednn_isa_limit = isa_limit();
  info.reference_clone = reference_clone();
  info.threads = cpu::thread_count();
  info.cpu_kernels = "oneDNN " + info.onednn_version + ", jit " + info.onednn_isa;
  info.reference_kernels = "plain loops (" + info.reference_clone + " build) + oneDNN sgemm";
  info.why = "oneDNN dispatches on CPUID to the widest ISA its kernels have that this CPU reports (" +
             feature_summary(info.features) + ")" +
             (info.onednn_isa_limit.empty() ? "" : ", capped by " + info.onednn_isa_limit) +
             "; cpu-ref's loops are built for x86-64-v4, v3 and baseline and the loader picks the widest the CPU has";
  return info;
}

void to_json(json::Json& j, const CpuKernelInfo& info) {
  j = json::Json{{"model_name", info.model_name},
                 {"cpuid_features", info.features},
                 {"onednn_version", info.onednn_version},
                 {"onednn_isa", info.onednn_isa},
                 {"onednn_isa_limit", info.onednn_isa_limit.empty() ? json::Json() : json::Json(info.onednn_isa_limit)},
                 {"reference_clone", info.reference_clone},
                 {"threads", info.threads},
                 {"cpu_kernels", info.cpu_kernels},
                 {"cpu_ref_kernels", info.reference_kernels},
                 {"why", info.why}};
}

std::string cpu_kernel_summary(int threads) {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         ", jit " + isa_name(dnnl::get_effective_cpu_isa()) + " (CPUID: " + feature_summary(features()) + "), " +
         omp_wait_summary() + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::string reference_kernel_summary(int threads) {
  return "plain loops (" + reference_clone() + " build) + oneDNN sgemm (jit " +
         isa_name(dnnl::get_effective_cpu_isa()) + "), " + omp_wait_summary() + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

}  // namespace mnv2
