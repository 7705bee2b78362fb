// How the device plugin shares GPUs, as GPU feature discovery labels it: the strategy
// (none, time-slicing, mps) and the replicated resources, taken from the plugin's config file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plugin_config/config_file.h"

namespace gpunode::labels {

struct ReplicatedResource {
  std::string name;  // always with its "nvidia.com/" prefix
  int replicas = 0;  // >= 2
  bool renamed = false;
};

struct SharingConfig {
  std::string strategy = "none";  // "none", "time-slicing" or "mps"
  std::vector<ReplicatedResource> resources;

  // The resource's entry, or null when it is not shared.
  const ReplicatedResource* Find(std::string_view resource) const;
};

// As NVIDIA's config API decides the strategy: an mps section with resources wins over
// timeSlicing.
SharingConfig SharingFrom(const plugin_config::ConfigFile& file);

}  // namespace gpunode::labels
