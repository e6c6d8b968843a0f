// One description of a GPU for every GPU backend: what the cuda planner sizes tiles and launches from, what both
// backends' TF32 rule reads, and (derived from it by one function, backends/cuda/shapes.h device_caps) what the
// kernels' tile choosers see. The GPU plugin reads a real device's once per device (engine/gpu/device.h); the
// presets describe GPUs this machine does not have (datasheet values), so plans for them are made without a GPU.
#pragma once

#include <string>

namespace mnv2 {

struct GpuProperties {
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability of the hardware
  int code_arch = 0;               // architecture the running code was compiled for (e.g. 75 for compute_75 PTX
                                   // JIT-compiled on an H200); 0: the hardware's own (cc_major * 10 + cc_minor)
  int sm_count = 0;                // multiprocessors
  int smem_per_block_optin = 0;    // bytes of shared memory a block may opt in to
  int smem_per_sm = 0;             // bytes of shared memory per multiprocessor
  int regs_per_sm = 0;             // 32-bit registers per multiprocessor
  int max_threads_per_sm = 0;      // resident threads per multiprocessor
  int max_blocks_per_sm = 0;       // resident blocks per multiprocessor
  int memory_clock_khz = 0;        // DRAM clock as the runtime reports it (double data rate)
  int memory_bus_bits = 0;         // DRAM bus width
  int sm_clock_khz = 0;            // multiprocessor clock (boost)

  int arch() const { return cc_major * 10 + cc_minor; }
  int effective_code_arch() const { return code_arch > 0 ? code_arch : arch(); }
  bool operator==(const GpuProperties&) const = default;

  static GpuProperties t4();       // Tesla T4: Turing, sm_75, 40 SMs, 64 KB shared memory per SM
  static GpuProperties a100();     // A100 SXM4 40 GB: Ampere, sm_80, 108 SMs, 164 KB
  static GpuProperties rtx4090();  // GeForce RTX 4090: Ada, sm_89, 128 SMs, 100 KB, 1536 threads per SM
  static GpuProperties h200();     // H200 SXM: Hopper, sm_90, 132 SMs, 228 KB
};

// The TF32 rule, the one place it is stated: why tf32 cannot run on `gpu` ("" when it can). TF32 tensor cores
// exist from Ampere (compute capability 8.0) on, and only code compiled for compute_80 or newer uses them: a
// compute_75 build JIT-compiled on a Hopper GPU has them in hardware, not in its code. The cuda backend asks with
// its kernels' code architecture (GpuProperties::code_arch); the cudnn backend, whose kernels come with cuDNN,
// with code_arch 0 (the hardware's own). Both backends' supports() and prepare() and the cuda planner say it.
std::string tf32_refusal(const GpuProperties& gpu);

}  // namespace mnv2
