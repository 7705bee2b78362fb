// Facts that follow from a GPU's architecture, for inputs (captures) that do not state them.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace gpunode::sim {

// nvmlDeviceArchitecture_t for an architecture name as nvidia-smi prints it ("Ampere",
// "Ada Lovelace") or as a profile writes it ("Ada"); case-insensitive. nullopt if unknown.
std::optional<unsigned> architecture_from_name(std::string_view name);

// CUDA compute capability from the architecture and the PCI device id (upper 16 bits of
// pciDeviceId), where the pair decides it: the big data-center die of Pascal (GP100, 0x15xx),
// Ampere (GA100, 0x20xx) and Blackwell (GB100, 0x29xx) differs from the rest of its family.
// nullopt where the architecture is unknown or the family is ambiguous without the device id.
std::optional<std::pair<int, int>> derived_compute_capability(
    std::optional<unsigned> architecture, std::optional<unsigned> pci_device_id);

// True where nvmlDeviceGetPowerUsage returns the instantaneous power rather than a one-second
// average: GA100 and every architecture before Ampere (nvml.h, nvmlDeviceGetPowerUsage). False
// where the architecture is unknown, or is Ampere and the device id does not tell GA100 apart.
bool power_usage_is_instantaneous(std::optional<unsigned> architecture,
                                  std::optional<unsigned> pci_device_id);

// Streaming multiprocessors in one MIG compute slice of the architecture's MIG-capable die
// (GA100: 14, GH100: 16); nullopt where not known.
std::optional<unsigned> sms_per_mig_slice(std::optional<unsigned> architecture);

}  // namespace gpunode::sim
