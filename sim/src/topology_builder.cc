#include "topology_builder.h"

#include <algorithm>
#include <set>

#include "messages.h"

namespace gpunode::sim {
namespace {

std::string label(const TopologyCell& cell) { return "NV" + std::to_string(cell.nvlinks); }

// GPUs joined by NV cells, as lists of indexes; singletons are left out.
std::vector<std::vector<size_t>> nvlink_groups(const TopologyMatrix& matrix) {
  size_t n = matrix.gpu_count();
  std::vector<int> group(n, -1);
  std::vector<std::vector<size_t>> groups;
  for (size_t start = 0; start < n; ++start) {
    if (group[start] >= 0) continue;
    std::vector<size_t> members = {start};
    group[start] = static_cast<int>(groups.size());
    for (size_t k = 0; k < members.size(); ++k) {
      for (size_t other = 0; other < n; ++other) {
        if (group[other] < 0 && matrix.cells[members[k]][other].nvlinks > 0) {
          group[other] = static_cast<int>(groups.size());
          members.push_back(other);
        }
      }
    }
    std::sort(members.begin(), members.end());
    groups.push_back(std::move(members));
  }
  std::erase_if(groups, [](const std::vector<size_t>& g) { return g.size() < 2; });
  return groups;
}

// Empty when `members` is an all-to-all group with one NV count; else why it is not.
std::optional<std::string> uniform_clique_problem(const TopologyMatrix& matrix,
                                                  const std::vector<size_t>& members) {
  const TopologyCell& first = matrix.cells[members[0]][members[1]];
  for (size_t a : members) {
    for (size_t b : members) {
      if (a == b) continue;
      const TopologyCell& cell = matrix.cells[a][b];
      if (cell.nvlinks == 0) {
        return str_cat("GPU", a, " and GPU", b,
                       " are in one NVLink group but their cell is not NV#");
      }
      if (cell.nvlinks != first.nvlinks) {
        return str_cat("GPU", members[0], "-GPU", members[1], " is ", label(first), " but GPU", a,
                       "-GPU", b, " is ", label(cell));
      }
    }
  }
  return std::nullopt;
}

unsigned default_switch_count(unsigned links) {
  for (unsigned d = std::min(links, 6u); d > 1; --d) {
    if (links % d == 0) return d;
  }
  return 1;
}

}  // namespace

std::optional<std::string> apply_topology(const TopologyMatrix& matrix,
                                          std::optional<unsigned> nvswitches,
                                          std::string_view source, NodeModel& node) {
  auto problem = [&](const std::string& what) { return str_cat(source, ": ", what); };
  size_t n = matrix.gpu_count();
  if (n != node.gpus.size()) {
    return problem(str_cat("the matrix has ", n, " GPUs but the node has ", node.gpus.size(),
                           "; give the topology captured on the same node"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (matrix.numa_nodes[i]) node.gpus[i].numa_node = matrix.numa_nodes[i];
    node.gpus[i].nvlinks.clear();
  }

  std::vector<std::vector<size_t>> groups = nvlink_groups(matrix);
  std::set<PciAddress> taken;
  for (size_t i = 0; i < n; ++i) {
    if (node.gpus[i].pci) taken.insert(*node.gpus[i].pci);
  }
  for (const auto& members : groups) {
    for (size_t i : members) {
      if (!node.gpus[i].pci) {
        return problem(str_cat("GPU", i,
                               " has NVLinks in the matrix but no PCI bus id in the node, "
                               "and NVLinks are reported by the bus id at their far end"));
      }
    }
  }
  auto gpus_with_pci = static_cast<size_t>(std::count_if(
      node.gpus.begin(), node.gpus.end(), [](const GpuModel& g) { return g.pci.has_value(); }));
  if (taken.size() != gpus_with_pci && !groups.empty()) {
    return problem(
        "two GPUs share a PCI bus id, so NVLinks between them cannot be told apart; give each GPU "
        "its own bus id");
  }

  // Addresses for NVSwitches: high bus numbers down, skipping any a GPU uses.
  PciAddress next_switch{0, 0xFF, 0, 0};
  auto allocate_switch = [&]() -> std::optional<PciAddress> {
    while (taken.contains(next_switch)) {
      if (next_switch.device < 0x1F) {
        ++next_switch.device;
      } else if (next_switch.bus > 0) {
        --next_switch.bus;
        next_switch.device = 0;
      } else {
        return std::nullopt;
      }
    }
    taken.insert(next_switch);
    return next_switch;
  };

  for (const auto& members : groups) {
    unsigned total_max = 0;
    size_t busiest = members[0];
    for (size_t a : members) {
      unsigned total = 0;
      for (size_t b : members) total += static_cast<unsigned>(matrix.cells[a][b].nvlinks);
      if (total > total_max) {
        total_max = total;
        busiest = a;
      }
    }
    bool fits_direct = total_max <= NVML_NVLINK_MAX_LINKS;
    bool use_switches = (nvswitches && *nvswitches > 0) || !fits_direct;
    if (!use_switches) {
      for (size_t a : members) {
        for (size_t b : members) {
          for (int k = 0; k < matrix.cells[a][b].nvlinks; ++k)
            node.gpus[a].nvlinks.push_back(*node.gpus[b].pci);
        }
      }
      continue;
    }
    if (auto why = uniform_clique_problem(matrix, members)) {
      if (!fits_direct && !(nvswitches && *nvswitches > 0)) {
        return problem(
            str_cat("GPU", busiest, "'s NVLink cells add up to ", total_max,
                    " links, more than NVML's ", unsigned{NVML_NVLINK_MAX_LINKS},
                    " per GPU, and its group is not the all-to-all, one-count group NVSwitches "
                    "would give (",
                    *why, ")"));
      }
      return problem(
          str_cat("NVSwitch topologies link every pair of a group with the same count, but ", *why,
                  "; drop topology.nvswitches for direct links"));
    }
    unsigned links = static_cast<unsigned>(matrix.cells[members[0]][members[1]].nvlinks);
    if (links > NVML_NVLINK_MAX_LINKS) {
      return problem(str_cat("NV", links, " needs more than NVML's ",
                             unsigned{NVML_NVLINK_MAX_LINKS}, " links per GPU"));
    }
    unsigned switches = nvswitches && *nvswitches > 0 ? *nvswitches : default_switch_count(links);
    std::vector<PciAddress> switch_addresses;
    for (unsigned s = 0; s < switches; ++s) {
      auto address = allocate_switch();
      if (!address) return problem("too many NVSwitches to give each a PCI address");
      switch_addresses.push_back(*address);
    }
    for (size_t a : members) {
      for (unsigned s = 0; s < switches; ++s) {
        unsigned share = links / switches + (s < links % switches ? 1 : 0);
        for (unsigned k = 0; k < share; ++k) node.gpus[a].nvlinks.push_back(switch_addresses[s]);
      }
    }
  }

  node.pcie_levels.assign(n, std::vector<nvmlGpuTopologyLevel_t>(n, NVML_TOPOLOGY_SYSTEM));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      const TopologyCell& cell = matrix.cells[a][b];
      if (cell.nvlinks == 0) {
        node.pcie_levels[a][b] = cell.level;
      } else {
        const auto& numa_a = node.gpus[a].numa_node;
        const auto& numa_b = node.gpus[b].numa_node;
        node.pcie_levels[a][b] =
            numa_a && numa_a == numa_b ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
      }
    }
  }
  return std::nullopt;
}

}  // namespace gpunode::sim
