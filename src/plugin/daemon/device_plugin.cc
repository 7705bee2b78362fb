#include "plugin/daemon/device_plugin.h"

#include <memory>
#include <utility>

#include "core/log.h"
#include "core/signal_fd.h"
#include "core/status_macros.h"
#include "host/plugin_health_state.h"
#include "plugin/daemon/followed_config.h"
#include "plugin/daemon/plugin_daemon.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

absl::Status RunDevicePlugin(const DevicePluginOptions& options, core::Env& env) {
  // Before any thread exists, so that every thread leaves these signals to the control loop.
  ASSIGN_OR_RETURN(core::SignalFd signals, core::SignalFd::Open());

  plugin_config::ConfigLayer flags = options.flags;
  plugin_config::ApplyDriverRootFlag(options.driver_root, flags);
  ASSIGN_OR_RETURN(plugin_config::ProcessSettings process,
                   plugin_config::ResolveProcessSettings(
                       {.kubelet_socket = options.kubelet_socket,
                        .cdi_disable_hooks = options.cdi_disable_hooks,
                        .cdi_feature_flags = options.cdi_feature_flags,
                        .health_recovery_period = options.health_recovery_period,
                        .health_flap_limit = options.health_flap_limit},
                       &plugin_config::ProcessEnvironment));
  ASSIGN_OR_RETURN(health::HealthOptions health, plugin_config::HealthOptionsFrom(process));
  ASSIGN_OR_RETURN(FollowedConfig followed,
                   FollowConfig(flags, options.config_file, options.default_config,
                                "gpunode-device-plugin", "the running config stays", env));
  const plugin_config::ResolvedConfig& config = followed.config;

  DaemonOptions daemon;
  daemon.kubelet_dir = options.kubelet_dir;
  daemon.config = followed.following;
  daemon.kubelet_socket = plugin_config::KubeletSocket(process, options.kubelet_dir);
  daemon.cdi_spec_dir = options.cdi_spec_dir;
  daemon.cdi_hooks_disabled = process.cdi_hooks_disabled;
  for (const std::string& flag : process.cdi_feature_flags) {
    spdlog::warn("--cdi-feature-flags: {} has no effect: gpunode's CDI spec has no feature flags",
                 flag);
  }
  daemon.health = std::move(health);
  daemon.health.state_file = options.kubelet_dir + "/" + host::kPluginHealthStateFile;

  absl::StatusOr<std::unique_ptr<nvml::Library>> library =
      options.open_nvml(plugin_config::NvmlDriverRoot(options.driver_root, config.config));
  if (library.ok()) {
    // Also the moment the simulator's timeline starts, which the health tests measure from.
    spdlog::info("NVML initialized from {}", (*library)->path());
  } else {
    if (config.config.fail_on_init_error) return library.status();
    spdlog::error("failed to initialize NVML: {}; offering no devices (failOnInitError is false)",
                  library.status().message());
  }
  PluginDaemon plugin_daemon(library.ok() ? library->get() : nullptr, std::move(daemon),
                             followed.loader, std::move(signals), env);
  return plugin_daemon.Run(config);
}

}  // namespace gpunode::plugin
