#include "labels/sharing.h"

namespace gpunode::labels {

const ReplicatedResource* SharingConfig::Find(std::string_view resource) const {
  for (const ReplicatedResource& r : resources) {
    if (r.name == resource) return &r;
  }
  return nullptr;
}

SharingConfig SharingFrom(const plugin_config::ConfigFile& file) {
  SharingConfig sharing;
  const plugin_config::TimeSlicing* section = nullptr;
  if (file.mps && !file.mps->resources.empty()) {
    sharing.strategy = "mps";
    section = &*file.mps;
  } else if (!file.time_slicing.resources.empty()) {
    sharing.strategy = "time-slicing";
    section = &file.time_slicing;
  }
  if (section == nullptr) return sharing;
  for (const plugin_config::TimeSlicedResource& r : section->resources) {
    // An explicit per-resource rename is not honoured (as in the plugin); renameByDefault renames
    // to <name>.shared, and a renamed resource's product label carries no -SHARED suffix.
    sharing.resources.push_back({r.name, r.replicas, section->rename_by_default});
  }
  return sharing;
}

}  // namespace gpunode::labels
