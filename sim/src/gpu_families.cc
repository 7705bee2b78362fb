#include "gpu_families.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace gpunode::sim {
namespace {

// nvmlDeviceArchitecture_t values (nvml.h NVML_DEVICE_ARCH_*).
struct Architecture {
  unsigned value;
  std::string_view name;
  std::string_view alias;
};
constexpr std::array<Architecture, 9> kArchitectures = {{
    {2, "Kepler", ""},
    {3, "Maxwell", ""},
    {4, "Pascal", ""},
    {5, "Volta", ""},
    {6, "Turing", ""},
    {7, "Ampere", ""},
    {8, "Ada Lovelace", "Ada"},
    {9, "Hopper", ""},
    {10, "Blackwell", ""},
}};

bool equals_ignore_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<unsigned> architecture_from_name(std::string_view name) {
  for (const Architecture& arch : kArchitectures) {
    if (equals_ignore_case(name, arch.name) ||
        (!arch.alias.empty() && equals_ignore_case(name, arch.alias))) {
      return arch.value;
    }
  }
  return std::nullopt;
}

std::optional<std::pair<int, int>> derived_compute_capability(
    std::optional<unsigned> architecture, std::optional<unsigned> pci_device_id) {
  if (!architecture) return std::nullopt;
  std::optional<unsigned> die_family;  // high byte of the 16-bit device id
  if (pci_device_id) die_family = (*pci_device_id >> 24) & 0xFF;
  switch (*architecture) {
    case 4:  // Pascal: GP100 is 6.0, GP10x 6.1
      if (!die_family) return std::nullopt;
      return *die_family == 0x15 ? std::pair{6, 0} : std::pair{6, 1};
    case 5:
      return std::pair{7, 0};
    case 6:
      return std::pair{7, 5};
    case 7:  // Ampere: GA100 is 8.0, GA10x 8.6
      if (!die_family) return std::nullopt;
      return *die_family == 0x20 ? std::pair{8, 0} : std::pair{8, 6};
    case 8:
      return std::pair{8, 9};
    case 9:
      return std::pair{9, 0};
    case 10:  // Blackwell: GB100 is 10.0, GB20x 12.0
      if (!die_family) return std::nullopt;
      return *die_family == 0x29 ? std::pair{10, 0} : std::pair{12, 0};
    default:
      return std::nullopt;
  }
}

bool power_usage_is_instantaneous(std::optional<unsigned> architecture,
                                  std::optional<unsigned> pci_device_id) {
  if (!architecture) return false;
  if (*architecture < 7) return true;
  return *architecture == 7 && pci_device_id && ((*pci_device_id >> 24) & 0xFF) == 0x20;
}

std::optional<unsigned> sms_per_mig_slice(std::optional<unsigned> architecture) {
  if (architecture == 7u) return 14;  // A100, A30: 1g has 14 SMs
  if (architecture == 9u) return 16;  // H100, H200: 1g has 16 SMs
  return std::nullopt;
}

}  // namespace gpunode::sim
