// `gpunode mps-control-daemon` from its settings to its end: the device plugin's config read and
// followed as the plugin reads it, NVML opened where that config says the driver is, and the
// MpsDaemon run until a stop signal; or the config's MPS limits checked, or the clients' /dev/shm
// mounted, at once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/env.h"
#include "nvml/library.h"
#include "plugin_config/layer.h"

namespace gpunode::plugin {

struct MpsControlDaemonOptions {
  std::optional<std::string> config_file;     // --config-file, else CONFIG_FILE
  std::optional<std::string> default_config;  // --default-config, else CONFIG_DEFAULT
  plugin_config::ConfigLayer flags;           // the config's flags, as given (--mps-root)
  std::string driver_root = "/";              // gpunode's --driver-root ("/": not given)
  nvml::Opener open_nvml;
};

// Runs the control daemons until a stop signal (read by the daemon, which re-reads its config on
// SIGHUP, and passed on as a stop of `env`). The host's files, the programs and the waits go
// through `env`.
absl::Status RunMpsControlDaemon(const MpsControlDaemonOptions& options, core::Env& env);

// --check-config: the lines that say each GPU's MPS limits (threads, pinned memory, clients).
absl::StatusOr<std::vector<std::string>> CheckMpsControlDaemonConfig(
    const MpsControlDaemonOptions& options, core::Env& env);

// mount-shm: the tmpfs at <mps-root>/shm for the MPS clients' /dev/shm.
absl::Status MountMpsControlDaemonShm(const MpsControlDaemonOptions& options);

}  // namespace gpunode::plugin
