// Adds the drop-in to the main config's `imports` by splicing text: an existing array grows in
// place (its layout, comments and trailing comma kept), or an `imports` line is added among the
// top-level keys. A blank file also gets a `version` line so it states the version the drop-in is
// written in. No other byte of the file changes.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "containerd/containerd_config.h"

namespace gpunode::runtime {

absl::StatusOr<std::string> SpliceImport(const containerd::ContainerdConfig& config,
                                         const std::string& import_path);

}  // namespace gpunode::runtime
