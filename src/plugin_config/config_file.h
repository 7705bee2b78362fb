// NVIDIA's device plugin config file (version v1, YAML or JSON), read strictly: every key
// NVIDIA's plugin knows is accepted, and anything else is an error that names the key, its line
// and where it belongs, where NVIDIA's plugin ignores it silently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin_config/layer.h"

namespace gpunode::plugin_config {

struct ConfigFile {
  ConfigLayer flags;
  TimeSlicing time_slicing;
  // sharing.mps, read with the same rules as timeSlicing: the labels report it as the sharing
  // strategy, and the device plugin refuses it (ResolveConfig).
  std::optional<TimeSlicing> mps;
  int mps_line = 0;
  // Settings NVIDIA's plugin accepts that gpunode reads but does not act on (GFD's flags excepted),
  // one line each, for the log.
  std::vector<std::string> warnings;
};

// `file_name` only labels errors: "<file>:<line>: <key path>: <what is wrong>; <fix>".
absl::StatusOr<ConfigFile> ParseConfigFile(const std::string& text, const std::string& file_name);

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path);

}  // namespace gpunode::plugin_config
