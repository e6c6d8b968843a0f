// A GPU's clocks, power limit and processes, read through NVML when the driver provides it (loaded at run time, so
// machines without a driver still run the program). A device is the CUDA ordinal (PrepareConfig::device): NVML
// finds that card by its PCI bus id, never by NVML's own index, which orders all the machine's cards and ignores
// CUDA_VISIBLE_DEVICES.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mnv2 {

// MHz, or -1 when NVML or the device is not there.
int current_sm_clock_mhz(int device);

// Processes holding a compute context on the GPU (NVML's compute running processes, this one included
// while it has a context), or nullopt when NVML or the device is not there. `pids` gets their process ids as
// NVML gives them (in a container they may be the host's, not this namespace's).
std::optional<int> gpu_compute_processes(int device, std::vector<unsigned>* pids = nullptr);

// NVML's view of the card at a PCI bus id ("0000:19:00.0"): -1 / "" for what it does not report.
struct NvmlCard {
  bool found = false;
  std::string problem;  // why not found: no NVML, no card at that bus id
  std::string uuid;     // "GPU-..."
  int sm_clock_mhz = -1, sm_clock_max_mhz = -1, sm_clock_applications_mhz = -1, memory_clock_mhz = -1;
  double power_limit_w = -1;  // enforced
};
NvmlCard nvml_card(const std::string& pci_bus_id);

// The NVIDIA kernel driver's release, e.g. "580.159.04"; empty when NVML is not there.
std::string nvidia_driver_release();

}  // namespace mnv2
