// `gpunode device-plugin`: a drop-in for NVIDIA's k8s-device-plugin (same config file, flags,
// environment variables, resource names and Allocate answers).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/config_flags.h"
#include "cli/nvml_session.h"
#include "cli/report_error.h"
#include "core/config_map_manifest.h"
#include "core/file_io.h"
#include "core/system_env.h"
#include "plugin/daemon/device_plugin.h"
#include "plugin_config/sources.h"

namespace gpunode::cli {
namespace {

// A ConfigMap manifest (the configs under deploy/ are ones): each data key is checked as the
// config the plugin reads from the mounted volume.
int CheckConfigMap(const plugin_config::ConfigLayer& flags, const std::string& path,
                   const core::ConfigMapManifest& manifest) {
  if (manifest.data.empty()) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrCat(path, ": this is a ConfigMap (", manifest.name,
                     ") with no data keys; add one key per config under data")));
  }
  for (const auto& [key, text] : manifest.data) {
    std::string label = core::DataKeyLabel(path, key);
    absl::StatusOr<plugin_config::ResolvedConfig> resolved =
        plugin_config::ResolveConfigText(flags, text, label, &plugin_config::ProcessEnvironment);
    if (!resolved.ok()) return ReportError(resolved.status());
    for (const std::string& warning : resolved->warnings) {
      std::cerr << "warning: " << warning << "\n";
    }
    std::cout << label << ": valid; resolved with flags and environment: "
              << plugin_config::ConfigJson(resolved->config) << "\n";
  }
  return kExitOk;
}

// --check-config: the file (or each config of a ConfigMap manifest) resolved with the flags and
// the environment, printed.
int CheckConfig(const plugin_config::ConfigLayer& flags, const std::string& path) {
  if (absl::StatusOr<std::string> text = core::ReadFile(path); text.ok()) {
    if (std::optional<core::ConfigMapManifest> manifest = core::AsConfigMap(*text)) {
      return CheckConfigMap(flags, path, *manifest);
    }
  }
  absl::StatusOr<plugin_config::ResolvedConfig> resolved =
      plugin_config::ResolveConfig(flags, path, &plugin_config::ProcessEnvironment);
  if (!resolved.ok()) return ReportError(resolved.status());
  for (const std::string& warning : resolved->warnings) std::cerr << "warning: " << warning << "\n";
  std::cout << path << ": valid; resolved with flags and environment: "
            << plugin_config::ConfigJson(resolved->config) << "\n";
  return kExitOk;
}

}  // namespace

void AddDevicePluginCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto o = std::make_shared<plugin::DevicePluginOptions>();
  auto config_flags = std::make_shared<ConfigFlags>();
  auto check_config = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "device-plugin",
      "kubelet device plugin for NVIDIA GPUs, a drop-in for NVIDIA's k8s-device-plugin");
  cmd->add_option("--config-file", o->config_file,
                  "NVIDIA device plugin config file (version v1), or a directory of them (a "
                  "ConfigMap mounted whole) (env CONFIG_FILE)");
  cmd->add_option("--default-config", o->default_config,
                  "with --config-file naming a directory: the config of a node without the "
                  "nvidia.com/device-plugin.config label (env CONFIG_DEFAULT)");
  cmd->add_option("--check-config", *check_config,
                  "validate this config file (with the flags and environment) and exit");
  config_flags->Add(*cmd,
                    {"--mig-strategy", "--fail-on-init-error", "--pass-device-specs",
                     "--device-list-strategy", "--device-id-strategy", "--cdi-annotation-prefix",
                     "--nvidia-driver-root", "--dev-root", "--shared-devices-allocation-policy"});
  cmd->add_option("--kubelet-dir", o->kubelet_dir, "the kubelet's device-plugins directory")
      ->capture_default_str();
  cmd->add_option("--kubelet-socket", o->kubelet_socket,
                  "the kubelet's registration socket (env KUBELET_SOCKET; default "
                  "<kubelet-dir>/kubelet.sock; \"\" serves without registering)");
  cmd->add_option("--cdi-spec-dir", o->cdi_spec_dir,
                  "where the CDI spec is written when a CDI strategy is used")
      ->capture_default_str();
  config_flags->Add(*cmd, {"--nvidia-cdi-hook-path", "--mps-root", "--driver-root-ctr-path",
                           "--device-discovery-strategy", "--gdrcopy-enabled", "--gds-enabled",
                           "--mofed-enabled", "--imex-required", "--imex-channel-ids"});
  cmd->add_option("--cdi-feature-flags", o->cdi_feature_flags,
                  "feature flags of NVIDIA's CDI library (env CDI_FEATURE_FLAGS); gpunode's CDI "
                  "spec has none, so they have no effect")
      ->delimiter(',');
  cmd->add_option("--cdi-disable-hooks", o->cdi_disable_hooks,
                  "hooks to leave out of the CDI spec: all (env CDI_DISABLE_HOOKS)")
      ->delimiter(',');
  cmd->add_option("--health-recovery-period", o->health_recovery_period,
                  "an unhealthy device is Healthy again after NVML answered normally this long "
                  "(env HEALTH_RECOVERY_PERIOD; default 60s; 0 = never)");
  cmd->add_option("--health-flap-limit", o->health_flap_limit,
                  "a GPU that becomes Unhealthy more often than this within an hour stays "
                  "Unhealthy until the plugin restarts (env HEALTH_FLAP_LIMIT; default 3; 0 = "
                  "no limit)");
  cmd->callback([&global, &run, o, config_flags, check_config] {
    run = [&global, o, config_flags, check_config] {
      absl::StatusOr<plugin_config::ConfigLayer> flags = config_flags->Layer();
      if (!flags.ok()) return ReportError(flags.status());
      if (!check_config->empty()) return CheckConfig(*flags, *check_config);
      o->flags = *std::move(flags);
      o->driver_root = global.driver_root;
      o->open_nvml = NvmlOpener(global);
      core::SystemEnv env(global.host_root);
      return Report(plugin::RunDevicePlugin(*o, env));
    };
  });
}

}  // namespace gpunode::cli
