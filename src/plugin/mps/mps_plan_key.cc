#include "plugin/mps/mps_plan_key.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpunode::plugin {

std::vector<const NodeGpu*> MpsGpus(const Resource& resource, const Node& node) {
  std::vector<const NodeGpu*> gpus;
  std::set<std::string> seen;
  for (const PluginDevice& device : resource.devices) {
    if (seen.insert(device.uuid).second) gpus.push_back(&node.gpus[device.gpu]);
  }
  return gpus;
}

std::string MpsPlanKey(const Resource& resource, const Node& node) {
  std::vector<std::string> uuids;
  for (const NodeGpu* gpu : MpsGpus(resource, node)) uuids.push_back(gpu->uuid);
  return absl::StrCat("plan ", resource.name, " replicas=", resource.replicas,
                      " gpus=", absl::StrJoin(uuids, ","));
}

}  // namespace gpunode::plugin
