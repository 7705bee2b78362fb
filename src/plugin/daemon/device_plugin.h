// `gpunode device-plugin` from its settings to its end: the signals taken, the process settings
// and the config resolved and followed (plugin_config/sources.h), NVML opened where the config
// says the driver is (or, with failOnInitError off, nothing offered without it), and the
// PluginDaemon run until a stop signal.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/env.h"
#include "nvml/library.h"
#include "plugin_config/layer.h"

namespace gpunode::plugin {

struct DevicePluginOptions {
  plugin_config::ConfigLayer flags;           // the config's flags, as given
  std::optional<std::string> config_file;     // --config-file, else CONFIG_FILE
  std::optional<std::string> default_config;  // --default-config, else CONFIG_DEFAULT
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::optional<std::string> kubelet_socket;  // the process's own settings, as given
  std::string cdi_spec_dir = "/var/run/cdi";
  std::vector<std::string> cdi_feature_flags;
  std::vector<std::string> cdi_disable_hooks;
  std::optional<std::string> health_recovery_period;
  std::optional<std::string> health_flap_limit;
  std::string driver_root = "/";  // gpunode's --driver-root ("/": not given)
  nvml::Opener open_nvml;
};

// Returns after a clean stop (SIGTERM, SIGINT, SIGQUIT, read by the daemon itself, which reloads
// on SIGHUP, and passed on as a stop of `env`); an error when the start fails (kInvalidArgument
// for bad settings or config). The host's files are read through `env`.
absl::Status RunDevicePlugin(const DevicePluginOptions& options, core::Env& env);

}  // namespace gpunode::plugin
