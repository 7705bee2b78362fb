// Where the device plugin's settings come from, and their precedence: flag, then environment
// variable, then config file, then default, as in NVIDIA's plugin.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/config/config.h"
#include "plugin/config/layer.h"

namespace gpunode::plugin {

// getenv(3) in production; a map in tests. Returns nullptr when unset.
using Environment = std::function<const char*(const char*)>;

// The settings NVIDIA's environment variables carry (MIG_STRATEGY, FAIL_ON_INIT_ERROR,
// NVIDIA_DRIVER_ROOT, NVIDIA_DEV_ROOT, PASS_DEVICE_SPECS, DEVICE_LIST_STRATEGY (comma list),
// DEVICE_ID_STRATEGY, CDI_ANNOTATION_PREFIX, SHARED_DEVICES_ALLOCATION_POLICY). An empty variable
// counts as unset. A bad value is an error naming the variable.
absl::StatusOr<ConfigLayer> EnvironmentLayer(const Environment& env);

struct ResolvedConfig {
  Config config;
  std::string config_file;  // "" when none was given
  std::vector<std::string> warnings;
};

// Reads the config file named by `config_file_flag` or else CONFIG_FILE, and merges
// flags > environment > file > defaults.
absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env);

}  // namespace gpunode::plugin
