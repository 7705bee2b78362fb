// topology.*: how the GPUs are linked, so jobs can be kept inside one fast domain.
#include <map>
#include <numeric>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctor/checks.h"

namespace gpunode::doctor {
namespace {

size_t Root(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

Finding NvLink(const Context& /*context*/, const Gpus& gpus) {
  const gpu::NodeSnapshot& node = gpus.node;
  size_t n = node.gpus.size();
  if (n <= 1) return Ok(absl::StrCat(n, " GPU: nothing to link"));
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  bool unreadable = false;
  for (size_t i = 0; i < n && i < node.topology.size(); ++i) {
    for (size_t j = 0; j < n && j < node.topology[i].size(); ++j) {
      if (i == j) continue;
      const std::optional<std::string>& label = node.topology[i][j];
      if (!label) {
        unreadable = true;
      } else if (absl::StartsWith(*label, "NV")) {
        parent[Root(parent, i)] = Root(parent, j);
      }
    }
  }
  std::map<size_t, std::vector<std::string>> domains;
  for (size_t i = 0; i < n; ++i) {
    domains[Root(parent, i)].push_back(absl::StrCat(node.gpus[i].index));
  }
  std::vector<std::string> groups;
  for (const auto& [root, members] : domains) {
    groups.push_back("{" + absl::StrJoin(members, ",") + "}");
  }
  std::string evidence = absl::StrCat("GPU groups: ", absl::StrJoin(groups, " "));
  if (unreadable) {
    return Warn("the link between some GPUs cannot be read (a GPU may be lost)", evidence,
                "nvidia-smi topo -m; dmesg | grep -i xid");
  }
  if (domains.size() == 1) {
    return Ok(absl::StrCat("all ", n, " GPUs share one NVLink domain"), evidence);
  }
  Finding finding = Ok(domains.size() == n ? std::string("PCIe only: no NVLink between the GPUs")
                                           : absl::StrCat(domains.size(), " NVLink domains"),
                       evidence);
  finding.fix = domains.size() == n
                    ? "keep a multi-GPU job on GPUs under one PCIe switch or NUMA node "
                      "(nvidia-smi topo -m)"
                    : "keep a multi-GPU job's GPUs inside one NVLink domain (the groups above)";
  return finding;
}

}  // namespace

std::vector<Check> TopologyChecks() {
  return {{"topology", "topology.nvlink", {"driver.nvml"}, NvLink}};
}

}  // namespace gpunode::doctor
