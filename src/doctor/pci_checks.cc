// pci.*: what the kernel sees on the bus, independent of the driver.
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctor/checks.h"

namespace gpunode::doctor {
namespace {

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) return absl::StrCat(bytes >> 30, " GiB");
  if (bytes >= (uint64_t{1} << 20)) return absl::StrCat(bytes >> 20, " MiB");
  return absl::StrCat(bytes >> 10, " KiB");
}

std::string Bars(const host::PciDevice& device) {
  std::vector<std::string> bars;
  for (size_t i = 0; i < device.bar_sizes.size(); ++i) {
    if (device.bar_sizes[i] != 0) bars.push_back(FormatBytes(device.bar_sizes[i]));
  }
  return bars.empty() ? "no BARs assigned" : absl::StrCat("BARs ", absl::StrJoin(bars, ", "));
}

// "0000:07:00.1" and "0000:07:00.0" are functions of the same card.
std::string Slot(const std::string& address) { return address.substr(0, address.rfind('.')); }

Finding NvidiaDevices(const Context& context) {
  const auto& gpus = context.PciGpus();
  if (!gpus.ok()) {
    return Fail("cannot read the PCI bus", std::string(gpus.status().message()),
                "run on the node itself (or give --host-root the node's root)");
  }
  if (gpus->empty()) {
    return Fail("no NVIDIA GPU on the PCI bus",
                "/sys/bus/pci/devices: no vendor 0x10de display or 3D controller",
                "check that the GPU is seated and powered, and enabled in the BIOS; "
                "lspci -nn | grep -i nvidia");
  }
  std::vector<std::string> addresses;
  for (const host::PciDevice& gpu : *gpus) addresses.push_back(gpu.address);
  return Ok(absl::StrCat(gpus->size(), " NVIDIA GPU(s) on the PCI bus"),
            absl::StrJoin(addresses, " "));
}

Finding GpuCountMatch(const Context& context) {
  const auto& gpus = *context.PciGpus();
  const auto& node = context.Node();
  if (!node.ok()) {
    return Fail("NVML cannot list the GPUs", std::string(node.status().message()),
                "dmesg | grep -i NVRM");
  }
  std::set<std::string> seen;
  for (const gpu::GpuSnapshot& gpu : node->gpus) seen.insert(host::SysfsPciAddress(gpu.pci_bus_id));
  std::string counts = absl::StrCat("PCI: ", gpus.size(), ", NVML: ", node->gpus.size());
  if (node->gpus.size() == gpus.size()) return Ok("NVML sees every GPU on the bus", counts);
  if (node->gpus.size() > gpus.size()) {
    return Warn("NVML lists more GPUs than the PCI bus", counts,
                "check --host-root: sysfs and NVML should describe the same node");
  }
  std::vector<std::string> missing;
  for (const host::PciDevice& gpu : gpus) {
    if (!seen.contains(gpu.address))
      missing.push_back(absl::StrCat(gpu.address, " (", Bars(gpu), ")"));
  }
  return Fail(
      absl::StrCat("NVML sees ", node->gpus.size(), " of ", gpus.size(), " GPUs on the PCI bus"),
      absl::StrCat(counts, "; not initialized: ", absl::StrJoin(missing, ", ")),
      "GPUs whose large BAR1 could not be mapped stay invisible: enable Above 4G "
      "Decoding and Resizable BAR in the BIOS, then read the kernel log for the cause: "
      "dmesg | grep NVRM");
}

Finding Iommu(const Context& context) {
  std::vector<std::string> shared;
  for (const host::PciDevice& gpu : *context.PciGpus()) {
    if (!gpu.iommu_group) continue;
    absl::StatusOr<std::vector<std::string>> members = context.host().ListDir(
        absl::StrCat("/sys/kernel/iommu_groups/", *gpu.iommu_group, "/devices"));
    if (!members.ok()) continue;
    std::vector<std::string> others;
    for (const std::string& member : *members) {
      if (Slot(member) != Slot(gpu.address)) others.push_back(member);
    }
    if (!others.empty()) {
      shared.push_back(absl::StrCat(gpu.address, " shares IOMMU group ", *gpu.iommu_group, " with ",
                                    absl::StrJoin(others, " ")));
    }
  }
  if (!shared.empty()) {
    return Warn("a GPU shares its IOMMU group with other devices", absl::StrJoin(shared, "; "),
                "devices in one group can only be assigned together (VFIO passthrough, "
                "isolation); enable ACS on the upstream switch or move the card to another slot");
  }
  return Ok("each GPU has an IOMMU group of its own (or the IOMMU is off)");
}

}  // namespace

std::vector<Check> PciChecks() {
  return {
      {"pci", "pci.nvidia-devices", {}, NvidiaDevices},
      {"pci", "pci.gpu-count-match", {"pci.nvidia-devices", "driver.nvml"}, GpuCountMatch},
      {"pci", "pci.iommu", {"pci.nvidia-devices"}, Iommu},
  };
}

}  // namespace gpunode::doctor
