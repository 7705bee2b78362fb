#include "host/pci.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"

namespace gpunode::host {
namespace {

const char kPciDevices[] = "/sys/bus/pci/devices";

std::optional<uint64_t> ParseHex(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(text, "0x")) text.remove_prefix(2);
  uint64_t value = 0;
  if (text.empty() || !absl::SimpleHexAtoi(text, &value)) return std::nullopt;
  return value;
}

// `resource` has one "start end flags" line per region; unused regions are all zeros.
std::vector<uint64_t> ParseBarSizes(absl::string_view resource) {
  std::vector<uint64_t> sizes;
  for (absl::string_view line : absl::StrSplit(resource, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 3) continue;
    std::optional<uint64_t> start = ParseHex(fields[0]), end = ParseHex(fields[1]);
    if (!start || !end || *end <= *start) continue;
    sizes.push_back(*end - *start + 1);
    if (sizes.size() == 6) break;  // BARs 0-5; later lines are the ROM and bridge windows
  }
  return sizes;
}

}  // namespace

std::string SysfsPciAddress(const std::string& nvml_bus_id) {
  std::string id = absl::AsciiStrToLower(nvml_bus_id);
  // NVML pads the domain to 8 digits; sysfs uses 4.
  if (id.size() == 16 && absl::StartsWith(id, "0000")) id = id.substr(4);
  return id;
}

absl::StatusOr<PciDevice> ReadPciDevice(const core::HostRoot& host, const std::string& address) {
  PciDevice device;
  device.address = SysfsPciAddress(address);
  std::string dir = absl::StrCat(kPciDevices, "/", device.address);
  ASSIGN_OR_RETURN(std::string vendor, host.ReadAttribute(dir + "/vendor"));
  ASSIGN_OR_RETURN(std::string device_id, host.ReadAttribute(dir + "/device"));
  ASSIGN_OR_RETURN(std::string class_code, host.ReadAttribute(dir + "/class"));
  std::optional<uint64_t> v = ParseHex(vendor), d = ParseHex(device_id), c = ParseHex(class_code);
  if (!v || !d || !c) {
    return absl::DataLossError(
        absl::StrCat(host.Resolve(dir), ": vendor/device/class are not hex numbers"));
  }
  device.vendor_id = static_cast<uint16_t>(*v);
  device.device_id = static_cast<uint16_t>(*d);
  device.class_code = static_cast<uint32_t>(*c);
  if (absl::StatusOr<std::string> numa = host.ReadAttribute(dir + "/numa_node"); numa.ok()) {
    int node = -1;
    // The kernel reports -1 when the platform gives no NUMA information.
    if (absl::SimpleAtoi(*numa, &node) && node >= 0) device.numa_node = node;
  }
  if (absl::StatusOr<std::string> group = host.ReadLink(dir + "/iommu_group"); group.ok()) {
    device.iommu_group = std::string(group->substr(group->rfind('/') + 1));
  }
  if (absl::StatusOr<std::string> driver = host.ReadLink(dir + "/driver"); driver.ok()) {
    device.driver = std::string(driver->substr(driver->rfind('/') + 1));
  }
  if (absl::StatusOr<std::string> resource = host.ReadFile(dir + "/resource"); resource.ok()) {
    device.bar_sizes = ParseBarSizes(*resource);
  }
  return device;
}

absl::StatusOr<std::vector<PciDevice>> ScanNvidiaGpus(const core::HostRoot& host) {
  ASSIGN_OR_RETURN(std::vector<std::string> addresses, host.ListDir(kPciDevices));
  std::vector<PciDevice> gpus;
  for (const std::string& address : addresses) {
    absl::StatusOr<std::string> vendor =
        host.ReadAttribute(absl::StrCat(kPciDevices, "/", address, "/vendor"));
    if (!vendor.ok() || ParseHex(*vendor) != kNvidiaVendorId) continue;
    ASSIGN_OR_RETURN(PciDevice device, ReadPciDevice(host, address));
    uint32_t base_and_sub = device.class_code >> 8;
    if (base_and_sub == 0x0300 || base_and_sub == 0x0302) gpus.push_back(std::move(device));
  }
  return gpus;
}

}  // namespace gpunode::host
