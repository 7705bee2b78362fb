// NVIDIA GPUs as the kernel sees them on the PCI bus (sysfs), independent of the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"

namespace gpunode::host {

inline constexpr uint16_t kNvidiaVendorId = 0x10de;

struct PciDevice {
  std::string address;  // sysfs form, "0000:07:00.0"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t class_code = 0;  // e.g. 0x030200 for a 3D controller
  std::optional<int> numa_node;
  std::optional<std::string> iommu_group;
  std::optional<std::string> driver;  // the bound kernel driver, e.g. "nvidia"
  std::vector<uint64_t> bar_sizes;    // sizes of the memory regions in `resource`, in bytes
};

// NVIDIA display (0x0300) and 3D (0x0302) controllers under /sys/bus/pci/devices, in address
// order. NVSwitches and audio functions are left out.
absl::StatusOr<std::vector<PciDevice>> ScanNvidiaGpus(const core::HostRoot& host);

// Reads one device by address; accepts NVML's "00000000:07:00.0" form too.
absl::StatusOr<PciDevice> ReadPciDevice(const core::HostRoot& host, const std::string& address);

// "00000000:07:00.0" (NVML) -> "0000:07:00.0" (sysfs), lower case.
std::string SysfsPciAddress(const std::string& nvml_bus_id);

}  // namespace gpunode::host
