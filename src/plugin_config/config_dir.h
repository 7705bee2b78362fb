// A directory of configs (a ConfigMap mounted whole) and which one a node runs, as NVIDIA's
// config-manager picks it: the node label's value names a file; without a label, the default
// config (--default-config, CONFIG_DEFAULT); else a file named "default"; else the only file.
// Entries whose name starts with ".." (the kubelet's ConfigMap bookkeeping) and directories are
// not configs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::plugin_config {

// The node label that names a node's config, as NVIDIA's.
inline constexpr const char* kConfigLabel = "nvidia.com/device-plugin.config";

struct ConfigSelection {
  std::optional<std::string> label = std::nullopt;  // the node's label value, when it has one
  std::optional<std::string> default_config;        // --default-config or CONFIG_DEFAULT
};

// The config names in `directory`, sorted.
absl::StatusOr<std::vector<std::string>> ConfigNames(const std::string& directory);

struct SelectedConfig {
  std::string name;
  std::string path;
  std::string why;  // "node label nvidia.com/device-plugin.config=a", "default config", ...
};

// Fails (one line naming the directory, the key and the keys there) when the label or the default
// names a config that is not there, or nothing selects one.
absl::StatusOr<SelectedConfig> SelectConfig(const std::string& directory,
                                            const ConfigSelection& selection);

}  // namespace gpunode::plugin_config
