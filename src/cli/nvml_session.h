// Opens NVML for a command: the driver's library, or the simulator when --sim is given.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "cli/command.h"
#include "cli/report_error.h"
#include "nvml/library.h"

namespace gpunode::cli {

// With --sim, configures the simulator (so a bad SPEC is one clear InvalidArgument line) and
// loads it from next to the binary; otherwise loads libnvidia-ml.so.1 from --nvml-library or
// under --driver-root.
absl::StatusOr<std::unique_ptr<nvml::Library>> OpenNvml(const GlobalOptions& global);

// OpenNvml for a role that names the driver root itself (the global one, or its config's);
// `global` must outlive it.
nvml::Opener NvmlOpener(const GlobalOptions& global);

}  // namespace gpunode::cli
