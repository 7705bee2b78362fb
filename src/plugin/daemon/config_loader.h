// How a node daemon reads its configuration again after a change: the flags and environment of
// its start, the file (or the config the node label selects) as it is now. The device plugin and
// the MPS control daemon follow the same sources through it.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "plugin_config/sources.h"

namespace gpunode::plugin {

using ConfigLoader = std::function<absl::StatusOr<plugin_config::ResolvedConfig>()>;

}  // namespace gpunode::plugin
