// nvidia-mig-parted's configuration file (`version: v1`), read unchanged:
//
//   version: v1
//   mig-configs:
//     all-balanced:
//       - device-filter: ["0x20B210DE"]   # optional; one id or a list
//         devices: all                    # or a list of GPU indices
//         mig-enabled: true
//         mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
//
// Every error names the file, the line, the field and the fix.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::mig {

struct MigConfigEntry {
  // PCI ids as "0xDDDDVVVV" (device id, vendor id) in upper case; empty matches every GPU.
  std::vector<std::string> device_filter;
  std::optional<std::vector<unsigned>> devices;  // nullopt: all
  bool mig_enabled = false;
  // Profile name -> count, in file order.
  std::vector<std::pair<std::string, unsigned>> mig_devices;
  int line = 0;  // 1-based, for messages
};

struct MigConfigFile {
  std::string path;
  std::map<std::string, std::vector<MigConfigEntry>> configs;
};

absl::StatusOr<MigConfigFile> ParseMigConfig(std::string_view text, const std::string& path);
absl::StatusOr<MigConfigFile> ReadMigConfig(const std::string& path);

// The id a GPU is matched against device-filter by: "0x20B210DE" from NVML's pciDeviceId.
std::string PciDeviceIdString(uint32_t pci_device_id);

// True when `entry` applies to GPU `index` with `pci_device_id`.
bool EntryMatches(const MigConfigEntry& entry, unsigned index, uint32_t pci_device_id);

}  // namespace gpunode::mig
