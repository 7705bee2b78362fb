#include "pci_address.h"

#include <charconv>
#include <cstdio>

namespace gpunode::sim {
namespace {

std::optional<unsigned> parse_hex_field(std::string_view text, size_t max_digits, unsigned max) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

}  // namespace

std::string PciAddress::bus_id() const {
  char text[32];
  std::snprintf(text, sizeof text, "%08X:%02X:%02X.%X", domain, bus, device, function);
  return text;
}

std::string PciAddress::bus_id_legacy() const {
  char text[32];
  std::snprintf(text, sizeof text, "%04X:%02X:%02X.%X", domain, bus, device, function);
  return text;
}

std::optional<PciAddress> parse_bus_id(std::string_view text) {
  PciAddress address;
  size_t last_colon = text.rfind(':');
  if (last_colon == std::string_view::npos) return std::nullopt;
  std::string_view head = text.substr(0, last_colon);
  std::string_view tail = text.substr(last_colon + 1);  // "DD.F"
  size_t dot = tail.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto device = parse_hex_field(tail.substr(0, dot), 2, 0x1F);
  auto function = parse_hex_field(tail.substr(dot + 1), 1, 7);
  std::string_view bus_text = head;
  std::optional<unsigned> domain = 0u;
  if (size_t colon = head.find(':'); colon != std::string_view::npos) {
    domain = parse_hex_field(head.substr(0, colon), 8, 0xFFFFFFFFu);
    bus_text = head.substr(colon + 1);
  }
  auto bus = parse_hex_field(bus_text, 2, 0xFF);
  if (!domain || !bus || !device || !function) return std::nullopt;
  address.domain = *domain;
  address.bus = *bus;
  address.device = *device;
  address.function = *function;
  return address;
}

}  // namespace gpunode::sim
