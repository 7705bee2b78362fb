// A point-in-time view of the node's GPUs, MIG devices, links and versions: what inventory
// prints and what the roles read. A value the GPU does not report stays empty, never 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"
#include "nvml/library.h"

namespace gpunode::gpu {

struct MigDeviceSnapshot {
  std::string uuid;
  std::string profile;  // "1g.10gb"
  unsigned gi_id = 0;
  unsigned ci_id = 0;
  std::optional<uint64_t> memory_mib;
};

struct GpuSnapshot {
  unsigned index = 0;
  bool lost = false;  // fell off the bus: only the index is known
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  std::optional<int> numa_node;
  std::optional<uint64_t> memory_total_mib;
  std::optional<uint64_t> memory_used_mib;
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<unsigned> utilization_gpu_pct;
  std::optional<bool> mig_enabled;
  std::vector<MigDeviceSnapshot> mig_devices;
};

struct NodeSnapshot {
  std::optional<std::string> driver_version;
  std::optional<std::string> cuda_driver_version;  // "12.4"
  std::vector<GpuSnapshot> gpus;
  // topology[i][j]: the link label between GPUs i and j; empty where it cannot be read.
  std::vector<std::vector<std::optional<std::string>>> topology;
};

// Reads everything from NVML; NUMA nodes the driver does not report come from sysfs under
// `host`. Fails only when NVML cannot enumerate devices at all.
absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const nvml::Library& library,
                                              const core::HostRoot& host);

}  // namespace gpunode::gpu
