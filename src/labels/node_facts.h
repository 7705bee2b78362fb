// What the labels are computed from, read once from NVML: versions and, per GPU, the model,
// memory, compute capability, PCI address and MIG layout; and the NVIDIA GPUs on the PCI bus.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"
#include "kube/missing_gpus_label.h"
#include "nvml/abi.h"
#include "nvml/library.h"

namespace gpunode::labels {

struct MigDeviceFacts {
  std::string profile;  // "1g.10gb", as go-nvlib names it
  nvmlDeviceAttributes_t attributes{};
};

struct GpuFacts {
  unsigned index = 0;
  std::string name;
  std::string pci_address;  // sysfs form, "0000:17:00.0"; empty when NVML does not say
  uint64_t memory_mib = 0;  // 0 when NVML does not say
  int compute_major = 0;    // 0 when NVML does not say
  int compute_minor = 0;
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigDeviceFacts> migs;
};

struct NodeFacts {
  std::optional<std::string> driver_version;  // "550.90.07"
  std::optional<int> cuda_driver_version;     // 12040
  std::vector<GpuFacts> gpus;                 // GPUs that answer; lost ones are left out
  // The NVIDIA GPUs the machine has: what the driver enumerated (nvmlDeviceGetCount, lost GPUs
  // included), raised by AddPciBus to the NVIDIA controllers on the PCI bus. Never lowered by a
  // GPU NVML cannot see.
  unsigned physical_count = 0;
  // The addresses of those controllers (sysfs form), when the bus could be read.
  std::optional<std::vector<std::string>> pci_bus;
};

absl::StatusOr<NodeFacts> ReadNodeFacts(const nvml::Library& library);

// Reads the NVIDIA display and 3D controllers on the PCI bus (host::ScanNvidiaGpus) into
// `facts`: the bus counts a card the driver did not take. A bus that cannot be read (a simulated
// node without a host tree) changes nothing.
void AddPciBus(NodeFacts& facts, const core::HostRoot& host);

// The physical GPUs NVML does not see: the controllers on the bus at an address no answering GPU
// has, and, where the bus tells nothing more, the rest of physical_count as unknown addresses.
kube::MissingGpus MissingGpusOf(const NodeFacts& facts);

}  // namespace gpunode::labels
