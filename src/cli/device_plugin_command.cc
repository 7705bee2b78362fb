// `gpunode device-plugin`: a drop-in for NVIDIA's k8s-device-plugin (same config file, flags,
// environment variables, resource names and Allocate answers).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/config_map_manifest.h"
#include "core/file_io.h"
#include "core/log.h"
#include "host/plugin_health_state.h"
#include "plugin/daemon/followed_config.h"
#include "plugin/daemon/plugin_daemon.h"
#include "plugin_config/sources.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

constexpr const char* kDefaultKubeletDir = "/var/lib/kubelet/device-plugins";

struct DevicePluginOptions {
  std::optional<std::string> config_file;
  std::optional<std::string> default_config;
  std::string check_config;
  std::optional<std::string> mig_strategy;
  std::optional<std::string> fail_on_init_error;
  std::optional<std::string> pass_device_specs;
  std::vector<std::string> device_list_strategy;
  std::optional<std::string> device_id_strategy;
  std::optional<std::string> cdi_annotation_prefix;
  std::optional<std::string> nvidia_driver_root;
  std::optional<std::string> nvidia_dev_root;
  std::optional<std::string> shared_devices_allocation_policy;
  std::string kubelet_dir = kDefaultKubeletDir;
  std::optional<std::string> kubelet_socket;
  std::string cdi_spec_dir = "/var/run/cdi";
  std::optional<std::string> cdi_hook_path;
  std::optional<std::string> mps_root;
  std::optional<std::string> container_driver_root;
  std::optional<std::string> device_discovery_strategy;
  // Features of NVIDIA's plugin gpunode does not have: accepted when off, refused when on.
  std::optional<std::string> gdrcopy_enabled;
  std::optional<std::string> gds_enabled;
  std::optional<std::string> mofed_enabled;
  std::vector<std::string> imex_channel_ids;
  std::optional<std::string> imex_required;
  std::vector<std::string> cdi_feature_flags;
  std::vector<std::string> cdi_disable_hooks;
  std::optional<std::string> recovery_period;
  std::optional<std::string> flap_limit;
};

// A flag's text through the same parser as the config file, naming the flag on error.
template <typename T>
absl::Status FlagValue(std::optional<T>& out, const char* flag,
                       const std::optional<std::string>& text,
                       absl::StatusOr<T> (*parse)(absl::string_view)) {
  if (!text) return absl::OkStatus();
  absl::StatusOr<T> value = parse(*text);
  if (!value.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", value.status().message()));
  }
  out = *value;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Text(absl::string_view text) { return std::string(text); }

absl::StatusOr<std::string> DiscoveryStrategy(absl::string_view text) {
  if (absl::Status st = plugin_config::CheckDeviceDiscoveryStrategy(text); !st.ok()) return st;
  return std::string(text);
}

absl::StatusOr<plugin_config::ConfigLayer> FlagLayer(const DevicePluginOptions& o) {
  plugin_config::ConfigLayer layer;
  absl::Status st;
  if (st = FlagValue(layer.mig_strategy, "--mig-strategy", o.mig_strategy,
                     &plugin_config::ParseMigStrategy);
      !st.ok())
    return st;
  if (st = FlagValue(layer.fail_on_init_error, "--fail-on-init-error", o.fail_on_init_error,
                     &plugin_config::ParseGoBool);
      !st.ok())
    return st;
  if (st = FlagValue(layer.pass_device_specs, "--pass-device-specs", o.pass_device_specs,
                     &plugin_config::ParseGoBool);
      !st.ok())
    return st;
  if (st = FlagValue(layer.device_id_strategy, "--device-id-strategy", o.device_id_strategy,
                     &plugin_config::ParseDeviceIdStrategy);
      !st.ok())
    return st;
  if (st = FlagValue(layer.shared_allocation_policy, "--shared-devices-allocation-policy",
                     o.shared_devices_allocation_policy,
                     &plugin_config::ParseSharedAllocationPolicy);
      !st.ok())
    return st;
  if (st = FlagValue(layer.cdi_annotation_prefix, "--cdi-annotation-prefix",
                     o.cdi_annotation_prefix, &Text);
      !st.ok())
    return st;
  if (st = FlagValue(layer.nvidia_driver_root, "--nvidia-driver-root", o.nvidia_driver_root, &Text);
      !st.ok())
    return st;
  if (st = FlagValue(layer.nvidia_dev_root, "--dev-root", o.nvidia_dev_root, &Text); !st.ok())
    return st;
  if (st = FlagValue(layer.mps_root, "--mps-root", o.mps_root, &Text); !st.ok()) return st;
  if (st = FlagValue(layer.nvidia_cdi_hook_path, "--nvidia-cdi-hook-path", o.cdi_hook_path, &Text);
      !st.ok())
    return st;
  if (st = FlagValue(layer.container_driver_root, "--driver-root-ctr-path", o.container_driver_root,
                     &Text);
      !st.ok())
    return st;
  if (st = FlagValue(layer.device_discovery_strategy, "--device-discovery-strategy",
                     o.device_discovery_strategy, &DiscoveryStrategy);
      !st.ok())
    return st;
  for (const auto& [flag, text, setting] :
       {std::tuple{"--gdrcopy-enabled", &o.gdrcopy_enabled, "gdrcopyEnabled"},
        std::tuple{"--gds-enabled", &o.gds_enabled, "gdsEnabled"},
        std::tuple{"--mofed-enabled", &o.mofed_enabled, "mofedEnabled"},
        std::tuple{"--imex-required", &o.imex_required, "imexRequired"}}) {
    std::optional<bool> on;
    if (st = FlagValue(on, flag, *text, &plugin_config::ParseGoBool); !st.ok()) return st;
    if (on.value_or(false)) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": ", plugin_config::UnsupportedFeature(setting), "; leave the flag out"));
    }
  }
  if (!o.imex_channel_ids.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--imex-channel-ids: ", plugin_config::UnsupportedFeature("imexChannelIDs"),
                     "; leave the flag out"));
  }
  if (!o.device_list_strategy.empty()) {
    std::vector<plugin_config::DeviceListStrategy> strategies;
    for (const std::string& name : o.device_list_strategy) {
      absl::StatusOr<plugin_config::DeviceListStrategy> s =
          plugin_config::ParseDeviceListStrategy(name);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--device-list-strategy: ", s.status().message()));
      }
      if (std::find(strategies.begin(), strategies.end(), *s) == strategies.end())
        strategies.push_back(*s);
    }
    layer.device_list_strategies = strategies;
  }
  return layer;
}

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

int CheckConfig(const DevicePluginOptions& options) {
  absl::StatusOr<plugin_config::ConfigLayer> flags = FlagLayer(options);
  if (!flags.ok()) return ReportError(flags.status());
  if (absl::StatusOr<std::string> text = core::ReadFile(options.check_config); text.ok()) {
    if (std::optional<core::ConfigMapManifest> manifest = core::AsConfigMap(*text)) {
      return CheckConfigMap(*flags, options.check_config, *manifest);
    }
  }
  absl::StatusOr<plugin_config::ResolvedConfig> resolved = plugin_config::ResolveConfig(
      *flags, options.check_config, &plugin_config::ProcessEnvironment);
  if (!resolved.ok()) return ReportError(resolved.status());
  for (const std::string& warning : resolved->warnings) std::cerr << "warning: " << warning << "\n";
  std::cout << options.check_config << ": valid; resolved with flags and environment: "
            << plugin_config::ConfigJson(resolved->config) << "\n";
  return kExitOk;
}

int RunDevicePlugin(const GlobalOptions& global, const DevicePluginOptions& options) {
  if (!options.check_config.empty()) return CheckConfig(options);

  // Before any thread exists, so that every thread leaves these signals to the control loop.
  absl::StatusOr<core::SignalFd> signals = core::SignalFd::Open();
  if (!signals.ok()) return ReportError(signals.status());

  absl::StatusOr<plugin_config::ConfigLayer> flags = FlagLayer(options);
  if (!flags.ok()) return ReportError(flags.status());
  // NVIDIA's --driver-root is gpunode's global one; it also sets nvidiaDriverRoot.
  if (!flags->nvidia_driver_root && global.driver_root != "/") {
    flags->nvidia_driver_root = global.driver_root;
  }
  absl::StatusOr<plugin_config::ProcessSettings> process =
      plugin_config::ResolveProcessSettings({.kubelet_socket = options.kubelet_socket,
                                             .cdi_disable_hooks = options.cdi_disable_hooks,
                                             .cdi_feature_flags = options.cdi_feature_flags,
                                             .health_recovery_period = options.recovery_period,
                                             .health_flap_limit = options.flap_limit},
                                            &plugin_config::ProcessEnvironment);
  if (!process.ok()) return ReportError(process.status());
  absl::StatusOr<health::HealthOptions> health = plugin_config::HealthOptionsFrom(*process);
  if (!health.ok()) return ReportError(health.status());
  absl::StatusOr<plugin::FollowedConfig> followed =
      plugin::FollowConfig(*flags, options.config_file, options.default_config,
                           "gpunode-device-plugin", "the running config stays");
  if (!followed.ok()) return ReportError(followed.status());
  const plugin_config::ResolvedConfig* config = &followed->config;

  plugin::DaemonOptions daemon;
  daemon.kubelet_dir = options.kubelet_dir;
  daemon.config = followed->following;
  daemon.kubelet_socket = process->kubelet_socket.value_or(options.kubelet_dir + "/kubelet.sock");
  daemon.cdi_spec_dir = options.cdi_spec_dir;
  daemon.cdi_hooks_disabled = process->cdi_hooks_disabled;
  for (const std::string& flag : process->cdi_feature_flags) {
    spdlog::warn("--cdi-feature-flags: {} has no effect: gpunode's CDI spec has no feature flags",
                 flag);
  }
  daemon.host_root = global.host_root;
  daemon.health = *std::move(health);
  daemon.health.state_file = options.kubelet_dir + "/" + host::kPluginHealthStateFile;

  // NVIDIA's nvidiaDriverRoot says where the driver's libnvidia-ml is, unless --driver-root does.
  GlobalOptions nvml_options = global;
  if (nvml_options.driver_root == "/") {
    // In a container the host's driver root is mounted at containerDriverRoot when that is set.
    nvml_options.driver_root = config->config.container_driver_root.empty()
                                   ? config->config.nvidia_driver_root
                                   : config->config.container_driver_root;
  }
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(nvml_options);
  if (library.ok()) {
    // Also the moment the simulator's timeline starts, which the health tests measure from.
    spdlog::info("NVML initialized from {}", (*library)->path());
  } else {
    if (config->config.fail_on_init_error) return ReportError(library.status());
    spdlog::error("failed to initialize NVML: {}; offering no devices (failOnInitError is false)",
                  library.status().message());
  }
  plugin::PluginDaemon plugin_daemon(library.ok() ? library->get() : nullptr, std::move(daemon),
                                     followed->loader, std::move(*signals));
  absl::Status st = plugin_daemon.Run(*config);
  if (!st.ok()) return ReportError(st);
  return kExitOk;
}

}  // namespace

void AddDevicePluginCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto o = std::make_shared<DevicePluginOptions>();
  CLI::App* cmd = app.add_subcommand(
      "device-plugin",
      "kubelet device plugin for NVIDIA GPUs, a drop-in for NVIDIA's k8s-device-plugin");
  cmd->add_option("--config-file", o->config_file,
                  "NVIDIA device plugin config file (version v1), or a directory of them (a "
                  "ConfigMap mounted whole) (env CONFIG_FILE)");
  cmd->add_option("--default-config", o->default_config,
                  "with --config-file naming a directory: the config of a node without the "
                  "nvidia.com/device-plugin.config label (env CONFIG_DEFAULT)");
  cmd->add_option("--check-config", o->check_config,
                  "validate this config file (with the flags and environment) and exit");
  cmd->add_option("--mig-strategy", o->mig_strategy, "none, single or mixed (env MIG_STRATEGY)");
  cmd->add_option("--fail-on-init-error", o->fail_on_init_error,
                  "fail when NVML cannot start (env FAIL_ON_INIT_ERROR; default true)")
      ->expected(0, 1)
      ->default_str("true")
      ->option_text("[BOOL]");
  cmd->add_option("--pass-device-specs", o->pass_device_specs,
                  "pass the device nodes in Allocate (env PASS_DEVICE_SPECS; default false)")
      ->expected(0, 1)
      ->default_str("true")
      ->option_text("[BOOL]");
  cmd->add_option("--device-list-strategy", o->device_list_strategy,
                  "envvar, volume-mounts, cdi-annotations, cdi-cri; repeat or comma-separate "
                  "(env DEVICE_LIST_STRATEGY; default envvar)")
      ->delimiter(',');
  cmd->add_option("--device-id-strategy", o->device_id_strategy,
                  "uuid or index (env DEVICE_ID_STRATEGY; default uuid)");
  cmd->add_option("--cdi-annotation-prefix", o->cdi_annotation_prefix,
                  "prefix of the CDI annotation (env CDI_ANNOTATION_PREFIX; default cdi.k8s.io/)");
  cmd->add_option("--nvidia-driver-root", o->nvidia_driver_root,
                  "root of the NVIDIA driver installation (env NVIDIA_DRIVER_ROOT; default /)");
  cmd->add_option("--dev-root,--nvidia-dev-root", o->nvidia_dev_root,
                  "root of the device nodes, prefix of DeviceSpec host paths (env "
                  "NVIDIA_DEV_ROOT; default the driver root)");
  cmd->add_option("--shared-devices-allocation-policy", o->shared_devices_allocation_policy,
                  "distributed or packed (env SHARED_DEVICES_ALLOCATION_POLICY)");
  cmd->add_option("--kubelet-dir", o->kubelet_dir, "the kubelet's device-plugins directory")
      ->capture_default_str();
  cmd->add_option("--kubelet-socket", o->kubelet_socket,
                  "the kubelet's registration socket (env KUBELET_SOCKET; default "
                  "<kubelet-dir>/kubelet.sock; \"\" serves without registering)");
  cmd->add_option("--cdi-spec-dir", o->cdi_spec_dir,
                  "where the CDI spec is written when a CDI strategy is used")
      ->capture_default_str();
  cmd->add_option("--nvidia-cdi-hook-path,--nvidia-ctk-path", o->cdi_hook_path,
                  "nvidia-cdi-hook on the host, named by the CDI spec's hooks (env "
                  "NVIDIA_CDI_HOOK_PATH, NVIDIA_CTK_PATH; default /usr/bin/nvidia-cdi-hook)");
  cmd->add_option("--mps-root", o->mps_root,
                  "host directory of the MPS control daemons' pipes and logs, needed with "
                  "sharing.mps (env MPS_ROOT)");
  cmd->add_option("--driver-root-ctr-path,--container-driver-root", o->container_driver_root,
                  "where the driver root is mounted in this container (env "
                  "DRIVER_ROOT_CTR_PATH, CONTAINER_DRIVER_ROOT)");
  cmd->add_option("--device-discovery-strategy", o->device_discovery_strategy,
                  "auto or nvml (env DEVICE_DISCOVERY_STRATEGY; default auto)");
  for (auto [name, target, what] :
       {std::tuple{"--gdrcopy-enabled", &o->gdrcopy_enabled, "GDRCopy (env GDRCOPY_ENABLED)"},
        std::tuple{"--gds-enabled", &o->gds_enabled, "GPUDirect Storage (env GDS_ENABLED)"},
        std::tuple{"--mofed-enabled", &o->mofed_enabled, "MOFED (env MOFED_ENABLED)"},
        std::tuple{"--imex-required", &o->imex_required, "IMEX channels (env IMEX_REQUIRED)"}}) {
    cmd->add_option(name, *target, absl::StrCat(what, ": not supported by gpunode; false only"))
        ->expected(0, 1)
        ->default_str("true")
        ->option_text("[BOOL]");
  }
  cmd->add_option("--imex-channel-ids", o->imex_channel_ids,
                  "IMEX channels (env IMEX_CHANNEL_IDS): not supported by gpunode")
      ->delimiter(',');
  cmd->add_option("--cdi-feature-flags", o->cdi_feature_flags,
                  "feature flags of NVIDIA's CDI library (env CDI_FEATURE_FLAGS); gpunode's CDI "
                  "spec has none, so they have no effect")
      ->delimiter(',');
  cmd->add_option("--cdi-disable-hooks", o->cdi_disable_hooks,
                  "hooks to leave out of the CDI spec: all (env CDI_DISABLE_HOOKS)")
      ->delimiter(',');
  cmd->add_option("--health-recovery-period", o->recovery_period,
                  "an unhealthy device is Healthy again after NVML answered normally this long "
                  "(env HEALTH_RECOVERY_PERIOD; default 60s; 0 = never)");
  cmd->add_option("--health-flap-limit", o->flap_limit,
                  "a GPU that becomes Unhealthy more often than this within an hour stays "
                  "Unhealthy until the plugin restarts (env HEALTH_FLAP_LIMIT; default 3; 0 = "
                  "no limit)");
  cmd->callback([&global, &run, o] { run = [&global, o] { return RunDevicePlugin(global, *o); }; });
}

}  // namespace gpunode::cli
