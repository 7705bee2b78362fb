#include "gpu/topology.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace gpunode::gpu {

int NvLinkCount(const LinkInputs& inputs, size_t a, size_t b) {
  const std::vector<std::string>& bus_ids = inputs.bus_ids;
  std::set<std::string> gpu_bus_ids(bus_ids.begin(), bus_ids.end());
  int direct = 0;
  std::map<std::string, int> a_switch_links;
  for (const std::string& remote : inputs.nvlink_remotes[a]) {
    if (remote == bus_ids[b]) {
      ++direct;
    } else if (!gpu_bus_ids.contains(remote)) {
      ++a_switch_links[remote];
    }
  }
  int a_shared = 0, b_shared = 0;
  for (const std::string& remote : inputs.nvlink_remotes[b]) {
    if (a_switch_links.contains(remote)) ++b_shared;
  }
  std::set<std::string> b_switches(inputs.nvlink_remotes[b].begin(),
                                   inputs.nvlink_remotes[b].end());
  for (const auto& [sw, count] : a_switch_links) {
    if (b_switches.contains(sw)) a_shared += count;
  }
  return direct + std::min(a_shared, b_shared);
}

std::string PcieLabel(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return "X";
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    default:
      return "SYS";
  }
}

std::vector<std::vector<std::optional<std::string>>> LinkMatrix(const LinkInputs& inputs,
                                                                const AncestorFn& ancestor) {
  size_t n = inputs.bus_ids.size();
  std::vector<std::vector<std::optional<std::string>>> matrix(
      n, std::vector<std::optional<std::string>>(n));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) {
        matrix[a][b] = "X";
        continue;
      }
      if (int links = NvLinkCount(inputs, a, b); links > 0) {
        matrix[a][b] = absl::StrCat("NV", links);
        continue;
      }
      if (absl::StatusOr<nvmlGpuTopologyLevel_t> level = ancestor(a, b); level.ok()) {
        matrix[a][b] = PcieLabel(*level);
      }
    }
  }
  return matrix;
}

}  // namespace gpunode::gpu
