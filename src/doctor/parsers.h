// Parsers of the files doctor reads from the node. Each takes untrusted text (fuzzed in
// fuzz/doctor/) and returns InvalidArgument, never throws, on input it cannot use.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpunode::doctor {

// The driver version in /proc/driver/nvidia/version's "NVRM version:" line, e.g. "550.54.15".
absl::StatusOr<std::string> ParseNvrmVersion(absl::string_view text);

// The settings of /etc/nvidia-container-runtime/config.toml that doctor judges.
struct ToolkitConfig {
  std::optional<bool> no_cgroups;   // nvidia-container-cli.no-cgroups; unset means false
  std::optional<std::string> mode;  // nvidia-container-runtime.mode; unset means auto
};
// `path` only names the file in errors.
absl::StatusOr<ToolkitConfig> ParseToolkitConfig(absl::string_view text, const std::string& path);

// The Version of `package` in a dpkg status file (/var/lib/dpkg/status) if it is installed.
std::optional<std::string> DpkgInstalledVersion(absl::string_view status,
                                                absl::string_view package);

}  // namespace gpunode::doctor
