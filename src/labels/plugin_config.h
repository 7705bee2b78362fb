// The part of NVIDIA's device plugin config file (api/config/v1: `version: v1`) that the labels
// depend on: flags.migStrategy and sharing (timeSlicing or mps). A minimal, strict reader: the keys
// it reads are checked for type and value, unknown keys where it reads are errors (a typo there
// would silently change the labels), and the parts it does not need (the rest of `flags`,
// `resources`, `imex`) are left to the plugin. Reusable by the device plugin's own parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::labels {

enum class MigStrategy { kNone, kSingle, kMixed };

// "none", "single", "mixed"; InvalidArgument naming `what` (the flag, variable or field) otherwise.
absl::StatusOr<MigStrategy> ParseMigStrategy(std::string_view text, std::string_view what);
std::string_view MigStrategyName(MigStrategy strategy);

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

struct PluginConfig {
  std::optional<MigStrategy> mig_strategy;  // flags.migStrategy when the file sets it
  SharingConfig sharing;
};

// Parses YAML or JSON. `file_name` prefixes every error: "<file>:<line>: <field>: <problem>;
// <fix>".
absl::StatusOr<PluginConfig> ParsePluginConfig(std::string_view text, std::string_view file_name);
// Reads and parses a file; errors name the path.
absl::StatusOr<PluginConfig> ReadPluginConfig(const std::string& path);

}  // namespace gpunode::labels
