#include "gpu/inventory_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpunode::gpu {
namespace {

template <typename T>
nlohmann::ordered_json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json OrNull(const std::string& value) {
  return value.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
}

std::string Cell(const std::optional<std::string>& value) { return value.value_or("?"); }

}  // namespace

nlohmann::ordered_json InventoryJson(const NodeSnapshot& node) {
  nlohmann::ordered_json out;
  out["driver_version"] = OrNull(node.driver_version);
  out["cuda_driver_version"] = OrNull(node.cuda_driver_version);
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const GpuSnapshot& gpu : node.gpus) {
    nlohmann::ordered_json g;
    g["index"] = gpu.index;
    g["uuid"] = OrNull(gpu.uuid);
    g["name"] = OrNull(gpu.name);
    g["pci_bus_id"] = OrNull(gpu.pci_bus_id);
    g["numa_node"] = OrNull(gpu.numa_node);
    g["memory_total_mib"] = OrNull(gpu.memory_total_mib);
    g["memory_used_mib"] = OrNull(gpu.memory_used_mib);
    g["temperature_c"] = OrNull(gpu.temperature_c);
    g["power_w"] = OrNull(gpu.power_w);
    g["utilization_gpu_pct"] = OrNull(gpu.utilization_gpu_pct);
    g["mig_enabled"] = OrNull(gpu.mig_enabled);
    nlohmann::ordered_json migs = nlohmann::ordered_json::array();
    for (const MigDeviceSnapshot& mig : gpu.mig_devices) {
      nlohmann::ordered_json m;
      m["uuid"] = OrNull(mig.uuid);
      m["profile"] = OrNull(mig.profile);
      m["gi_id"] = mig.gi_id;
      m["ci_id"] = mig.ci_id;
      m["memory_mib"] = OrNull(mig.memory_mib);
      migs.push_back(std::move(m));
    }
    g["mig_devices"] = std::move(migs);
    g["lost"] = gpu.lost;
    gpus.push_back(std::move(g));
  }
  out["gpus"] = std::move(gpus);
  nlohmann::ordered_json topology = nlohmann::ordered_json::array();
  for (const auto& row : node.topology) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (const auto& cell : row) r.push_back(OrNull(cell));
    topology.push_back(std::move(r));
  }
  out["topology"] = std::move(topology);
  return out;
}

std::string InventoryTable(const NodeSnapshot& node) {
  std::string out = absl::StrFormat(
      "Driver %s   CUDA %s   %d GPU%s\n\n", node.driver_version.value_or("?"),
      node.cuda_driver_version.value_or("?"), node.gpus.size(), node.gpus.size() == 1 ? "" : "s");
  size_t name_width = 4;
  for (const GpuSnapshot& gpu : node.gpus) name_width = std::max(name_width, gpu.name.size());
  absl::StrAppendFormat(&out, "%-4s %-*s  %-40s  %10s  %-16s  %s\n", "GPU", name_width, "NAME",
                        "UUID", "MEMORY", "PCI BUS ID", "NUMA");
  for (const GpuSnapshot& gpu : node.gpus) {
    if (gpu.lost) {
      absl::StrAppendFormat(&out, "%-4d %-*s (lost: fell off the bus or unreachable)\n", gpu.index,
                            name_width, "?");
      continue;
    }
    std::string memory = gpu.memory_total_mib ? absl::StrCat(*gpu.memory_total_mib, " MiB") : "?";
    std::string numa = gpu.numa_node ? absl::StrCat(*gpu.numa_node) : "N/A";
    absl::StrAppendFormat(&out, "%-4d %-*s  %-40s  %10s  %-16s  %s\n", gpu.index, name_width,
                          gpu.name, gpu.uuid, memory, gpu.pci_bus_id, numa);
    for (const MigDeviceSnapshot& mig : gpu.mig_devices) {
      absl::StrAppendFormat(&out, "       MIG %-10s gi %-2d ci %-2d %s\n", mig.profile, mig.gi_id,
                            mig.ci_id, mig.uuid);
    }
  }
  if (node.gpus.size() > 1) {
    out += "\nLinks\n      ";
    for (size_t j = 0; j < node.gpus.size(); ++j)
      absl::StrAppendFormat(&out, "%-6s", absl::StrCat("GPU", j));
    out += "\n";
    for (size_t i = 0; i < node.topology.size(); ++i) {
      absl::StrAppendFormat(&out, "%-6s", absl::StrCat("GPU", i));
      for (const auto& cell : node.topology[i]) absl::StrAppendFormat(&out, "%-6s", Cell(cell));
      out += "\n";
    }
    out +=
        "\n  X    = self\n"
        "  NV#  = connected by # NVLinks (directly or through NVSwitch)\n"
        "  PIX  = through at most a single PCIe switch\n"
        "  PXB  = through multiple PCIe switches, not the host bridge\n"
        "  PHB  = through a PCIe host bridge (typically the CPU)\n"
        "  NODE = across PCIe host bridges within one NUMA node\n"
        "  SYS  = across NUMA nodes (the SMP interconnect)\n";
  }
  return out;
}

}  // namespace gpunode::gpu
