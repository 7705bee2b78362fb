// A containerd config file as read from disk: its exact bytes, its TOML, the config version that
// decides where the CRI plugin lives, and the refusal of files that something else regenerates.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "containerd/toml_document.h"
#include "toml++/toml.h"

namespace gpunode::containerd {

// The version gpunode writes into a config that has nothing in it yet.
inline constexpr int kDefaultConfigVersion = 2;

struct ContainerdConfig {
  std::string path;
  bool exists = false;
  std::string text;  // the exact bytes; empty when the file does not exist
  toml::table doc;
  // 1 (no `version` key), 2, or 3 and later. A blank file gets kDefaultConfigVersion.
  int version = 1;
  // No keys and no tables: containerd uses its defaults, so any version means the same.
  bool blank = true;
};

// Editing refuses files a platform regenerates (an edit would be lost); reading them is fine.
enum class ConfigUse { kEdit, kRead };

// Reads and checks a config. A missing file is a blank config (gpunode creates it); an unreadable
// one, a TOML syntax error, a non-integer version, and for kEdit a template or a file its platform
// regenerates, is an InvalidArgument naming the file and the fix.
absl::StatusOr<ContainerdConfig> LoadContainerdConfig(const std::string& path,
                                                      ConfigUse use = ConfigUse::kEdit);

// The same checks on text already in memory.
absl::StatusOr<ContainerdConfig> ParseContainerdConfig(const std::string& path, std::string text,
                                                       ConfigUse use = ConfigUse::kEdit);

// The plugin table that holds the CRI runtime settings for a config version:
// v1 "cri", v2 "io.containerd.grpc.v1.cri", v3 and later "io.containerd.cri.v1.runtime".
std::string CriPluginId(int version);

}  // namespace gpunode::containerd
