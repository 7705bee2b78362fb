// What the labels are computed from, read once from NVML: versions and, per GPU, the model,
// memory, compute capability and MIG layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // included), raised by the caller to the NVIDIA controllers on the PCI bus
  // (host::ScanNvidiaGpus). Never lowered by a GPU NVML cannot see.
  unsigned physical_count = 0;
};

absl::StatusOr<NodeFacts> ReadNodeFacts(const nvml::Library& library);

}  // namespace gpunode::labels
