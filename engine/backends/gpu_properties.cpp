// The GPU description's presets and the TF32 rule (mnv2/gpu_properties.h): plain C++ in the core library, so the
// planner's tests and the CLI's plan printing use them without a GPU.
#include "mnv2/gpu_properties.h"

#include <string>

namespace mnv2 {

GpuProperties GpuProperties::t4() {
  GpuProperties g;
  g.name = "Tesla T4";
  g.cc_major = 7;
  g.cc_minor = 5;
  g.sm_count = 40;
  g.smem_per_block_optin = 64 * 1024;
  g.smem_per_sm = 64 * 1024;
  g.regs_per_sm = 64 * 1024;
  g.max_threads_per_sm = 1024;
  g.max_blocks_per_sm = 16;
  g.memory_clock_khz = 5001000;  // GDDR6, 256-bit: 320 GB/s
  g.memory_bus_bits = 256;
  g.sm_clock_khz = 1590000;
  return g;
}

GpuProperties GpuProperties::a100() {
  GpuProperties g;
  g.name = "NVIDIA A100-SXM4-40GB";
  g.cc_major = 8;
  g.cc_minor = 0;
  g.sm_count = 108;
  g.smem_per_block_optin = 163 * 1024;
  g.smem_per_sm = 164 * 1024;
  g.regs_per_sm = 64 * 1024;
  g.max_threads_per_sm = 2048;
  g.max_blocks_per_sm = 32;
  g.memory_clock_khz = 1215000;  // HBM2, 5120-bit: 1.56 TB/s
  g.memory_bus_bits = 5120;
  g.sm_clock_khz = 1410000;
  return g;
}

GpuProperties GpuProperties::rtx4090() {
  GpuProperties g;
  g.name = "NVIDIA GeForce RTX 4090";
  g.cc_major = 8;
  g.cc_minor = 9;
  g.sm_count = 128;
  g.smem_per_block_optin = 99 * 1024;
  g.smem_per_sm = 100 * 1024;
  g.regs_per_sm = 64 * 1024;
  g.max_threads_per_sm = 1536;
  g.max_blocks_per_sm = 24;
  g.memory_clock_khz = 10501000;  // GDDR6X, 384-bit: 1.01 TB/s
  g.memory_bus_bits = 384;
  g.sm_clock_khz = 2520000;
  return g;
}

GpuProperties GpuProperties::h200() {
  GpuProperties g;
  g.name = "NVIDIA H200";
  g.cc_major = 9;
  g.cc_minor = 0;
  g.sm_count = 132;
  g.smem_per_block_optin = 227 * 1024;
  g.smem_per_sm = 228 * 1024;
  g.regs_per_sm = 64 * 1024;
  g.max_threads_per_sm = 2048;
  g.max_blocks_per_sm = 32;
  // HBM3e, 6144-bit, 3125 MHz: the 4.8 TB/s of the datasheet. With it this preset's plan equals the one the backend
  // made from the real H200's attributes for batch 1/64/256 in fp32, tf32 and fp16 (device run of 2026-11-23);
  // the TC cost model's bandwidth term is sensitive here: 3201 MHz or 2619 MHz each change a tile or a split.
  g.memory_clock_khz = 3125000;
  g.memory_bus_bits = 6144;
  g.sm_clock_khz = 1980000;
  return g;
}

std::string tf32_refusal(const GpuProperties& gpu) {
  const std::string what =
      gpu.name + " (compute capability " + std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor) + ")";
  if (gpu.cc_major < 8)
    return "tf32 needs TF32 tensor cores (compute capability 8.0, Ampere, or newer); " + what + " has none";
  if (gpu.effective_code_arch() < 80)
    return "tf32 needs kernels compiled for compute_80 or newer; on " + what + " this build runs compute_" +
           std::to_string(gpu.effective_code_arch()) + " code";
  return "";
}

}  // namespace mnv2
