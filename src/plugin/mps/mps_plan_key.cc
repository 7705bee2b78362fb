#include "plugin/mps/mps_plan_key.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpunode::plugin {

std::vector<std::string> MpsGpuUuids(const Resource& resource, const Node& node) {
  std::vector<std::string> uuids;
  std::set<std::string> seen;
  for (const PluginDevice& device : resource.devices) {
    if (!seen.insert(device.uuid).second) continue;
    uuids.push_back(node.gpus[device.gpu].uuid);
  }
  return uuids;
}

std::string MpsPlanKey(const Resource& resource, const Node& node) {
  return absl::StrCat("plan ", resource.name, " replicas=", resource.replicas,
                      " gpus=", absl::StrJoin(MpsGpuUuids(resource, node), ","));
}

}  // namespace gpunode::plugin
