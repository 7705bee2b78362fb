// Where the device plugin's settings come from, and their precedence: flag, then environment
// variable, then config file, then default, as in NVIDIA's plugin.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/config/config.h"
#include "plugin/config/config_dir.h"
#include "plugin/config/layer.h"

namespace gpunode::plugin {

// getenv(3) in production; a map in tests. Returns nullptr when unset.
using Environment = std::function<const char*(const char*)>;

// The settings NVIDIA's environment variables carry (MIG_STRATEGY, FAIL_ON_INIT_ERROR,
// NVIDIA_DRIVER_ROOT, NVIDIA_DEV_ROOT, PASS_DEVICE_SPECS, DEVICE_LIST_STRATEGY (comma list),
// DEVICE_ID_STRATEGY, CDI_ANNOTATION_PREFIX, SHARED_DEVICES_ALLOCATION_POLICY, MPS_ROOT,
// NVIDIA_CDI_HOOK_PATH or NVIDIA_CTK_PATH, DRIVER_ROOT_CTR_PATH or CONTAINER_DRIVER_ROOT,
// DEVICE_DISCOVERY_STRATEGY). An empty variable counts as unset. A bad value is an error naming
// the variable; so is one that turns on a feature gpunode lacks (GDS_ENABLED, MOFED_ENABLED,
// GDRCOPY_ENABLED, IMEX_REQUIRED true, IMEX_CHANNEL_IDS set).
absl::StatusOr<ConfigLayer> EnvironmentLayer(const Environment& env);

// The rules of sharing.mps that need the merged settings: not with migStrategy mixed, and an
// absolute MPS root. Errors name `file`:`line`.
absl::Status CheckMps(const Config& config, const std::string& file, int line);

struct ResolvedConfig {
  Config config;
  std::string config_file;  // "" when none was given; the file read, in a config directory
  std::string config_name;  // in a config directory: the config picked, and why
  std::string selected_by;
  std::vector<std::string> warnings;
};

// Reads the config file named by `config_file_flag` or else CONFIG_FILE, and merges
// flags > environment > file > defaults. When that names a directory, `selection` picks the
// config in it (config_dir.h); its default_config falls back to CONFIG_DEFAULT.
absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env,
                                             const ConfigSelection& selection = {});

}  // namespace gpunode::plugin
