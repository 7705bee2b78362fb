// A PCI function address, as NVML formats and compares it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpunode::sim {

struct PciAddress {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;

  // "%08X:%02X:%02X.%X", the form of nvmlPciInfo_t::busId.
  std::string bus_id() const;
  // "%04X:%02X:%02X.%X", the form of nvmlPciInfo_t::busIdLegacy.
  std::string bus_id_legacy() const;

  bool operator==(const PciAddress&) const = default;
  auto operator<=>(const PciAddress&) const = default;
};

// Accepts "DDDDDDDD:BB:DD.F", "DDDD:BB:DD.F" and "BB:DD.F" (hex, any case). nullopt when the
// text is not a bus id or a part is out of range (domain 32 bits, bus 8, device 5, function 3).
std::optional<PciAddress> parse_bus_id(std::string_view text);

}  // namespace gpunode::sim
