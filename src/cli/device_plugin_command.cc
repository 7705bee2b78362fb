// `gpunode device-plugin`: a drop-in for NVIDIA's k8s-device-plugin (same config file, flags,
// environment variables, resource names and Allocate answers).
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "cli/config_label.h"
#include "cli/nvml_session.h"
#include "core/duration.h"
#include "core/log.h"
#include "host/plugin_health_state.h"
#include "plugin/config/sources.h"
#include "plugin/daemon/plugin_daemon.h"
#include "plugin/health/xid.h"
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
  if (absl::Status st = plugin::CheckDeviceDiscoveryStrategy(text); !st.ok()) return st;
  return std::string(text);
}

// A list flag's value, else the comma list in its environment variable.
std::vector<std::string> ListOrEnvironment(const std::vector<std::string>& flag, const char* env) {
  if (!flag.empty()) return flag;
  const char* value = std::getenv(env);
  if (value == nullptr) return {};
  return absl::StrSplit(value, ',', absl::SkipWhitespace());
}

// NVIDIA's --cdi-disable-hooks names hooks to leave out of the CDI spec. gpunode's spec has
// two (update-ldcache, create-symlinks) and leaves them out together; hooks it never writes need
// no disabling.
absl::StatusOr<bool> HooksDisabled(const std::vector<std::string>& names) {
  bool all = false, some = false;
  for (const std::string& name : names) {
    if (name == "all") all = true;
    if (name == "update-ldcache" || name == "create-symlinks") some = true;
  }
  if (some && !all) {
    return absl::InvalidArgumentError(
        "--cdi-disable-hooks: not supported by gpunode: disabling update-ldcache or "
        "create-symlinks alone; give all (both) or neither");
  }
  return all;
}

absl::StatusOr<plugin::ConfigLayer> FlagLayer(const DevicePluginOptions& o) {
  plugin::ConfigLayer layer;
  absl::Status st;
  if (st = FlagValue(layer.mig_strategy, "--mig-strategy", o.mig_strategy,
                     &plugin::ParseMigStrategy);
      !st.ok())
    return st;
  if (st = FlagValue(layer.fail_on_init_error, "--fail-on-init-error", o.fail_on_init_error,
                     &plugin::ParseGoBool);
      !st.ok())
    return st;
  if (st = FlagValue(layer.pass_device_specs, "--pass-device-specs", o.pass_device_specs,
                     &plugin::ParseGoBool);
      !st.ok())
    return st;
  if (st = FlagValue(layer.device_id_strategy, "--device-id-strategy", o.device_id_strategy,
                     &plugin::ParseDeviceIdStrategy);
      !st.ok())
    return st;
  if (st = FlagValue(layer.shared_allocation_policy, "--shared-devices-allocation-policy",
                     o.shared_devices_allocation_policy, &plugin::ParseSharedAllocationPolicy);
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
    if (st = FlagValue(on, flag, *text, &plugin::ParseGoBool); !st.ok()) return st;
    if (on.value_or(false)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", plugin::UnsupportedFeature(setting), "; leave the flag out"));
    }
  }
  if (!o.imex_channel_ids.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--imex-channel-ids: ", plugin::UnsupportedFeature("imexChannelIDs"),
                     "; leave the flag out"));
  }
  if (!o.device_list_strategy.empty()) {
    std::vector<plugin::DeviceListStrategy> strategies;
    for (const std::string& name : o.device_list_strategy) {
      absl::StatusOr<plugin::DeviceListStrategy> s = plugin::ParseDeviceListStrategy(name);
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

const char* Getenv(const char* name) { return std::getenv(name); }

int CheckConfig(const DevicePluginOptions& options) {
  absl::StatusOr<plugin::ConfigLayer> flags = FlagLayer(options);
  if (!flags.ok()) return ReportError(flags.status());
  absl::StatusOr<plugin::ResolvedConfig> resolved =
      plugin::ResolveConfig(*flags, options.check_config, &Getenv);
  if (!resolved.ok()) return ReportError(resolved.status());
  for (const std::string& warning : resolved->warnings) std::cerr << "warning: " << warning << "\n";
  std::cout << options.check_config << ": valid; resolved with flags and environment: "
            << plugin::ConfigJson(resolved->config) << "\n";
  return kExitOk;
}

int RunDevicePlugin(const GlobalOptions& global, const DevicePluginOptions& options) {
  if (!options.check_config.empty()) return CheckConfig(options);

  // Before any thread exists, so that every thread leaves these signals to the control loop.
  absl::StatusOr<plugin::SignalFd> signals = plugin::SignalFd::Open();
  if (!signals.ok()) return ReportError(signals.status());

  absl::StatusOr<plugin::ConfigLayer> flags = FlagLayer(options);
  if (!flags.ok()) return ReportError(flags.status());
  // NVIDIA's --driver-root is gpunode's global one; it also sets nvidiaDriverRoot.
  if (!flags->nvidia_driver_root && global.driver_root != "/") {
    flags->nvidia_driver_root = global.driver_root;
  }
  std::optional<std::string> config_path = options.config_file;
  if (!config_path || config_path->empty()) {
    if (const char* env = std::getenv("CONFIG_FILE"); env != nullptr && *env != '\0') {
      config_path = env;
    }
  }
  std::error_code ec;
  bool config_directory =
      config_path && !config_path->empty() && std::filesystem::is_directory(*config_path, ec);
  // A directory of configs: the node's label picks one, followed through the API server.
  std::optional<ConfigLabelSource> label;
  if (config_directory) label = ConfigLabelSource::Follow("gpunode-device-plugin");

  plugin::ConfigSelection selection{.default_config = options.default_config};
  const kube::NodeLabelWatch* watch = label ? &label->watch() : nullptr;
  plugin::ConfigLoader loader = [flags = *flags, file = options.config_file, selection, watch] {
    plugin::ConfigSelection now = selection;
    if (watch != nullptr) now.label = watch->Value();
    return plugin::ResolveConfig(flags, file, &Getenv, now);
  };
  absl::StatusOr<plugin::ResolvedConfig> config = loader();
  if (!config.ok() && watch != nullptr && watch->Value()) {
    // A label naming a config that is missing or broken must not stop the plugin (a crash loop
    // would take the node's GPUs away): start with the default and say why.
    spdlog::error("{}; starting with the default config instead", config.status().message());
    label->Refused(std::string(config.status().message()),
                   "starting with the default config instead");
    config = plugin::ResolveConfig(*flags, options.config_file, &Getenv, selection);
  }
  if (!config.ok()) return ReportError(config.status());

  plugin::DaemonOptions daemon;
  daemon.kubelet_dir = options.kubelet_dir;
  if (config_path && !config_path->empty()) {
    daemon.config_watch_dir = config_directory
                                  ? *config_path
                                  : std::filesystem::path(*config_path).parent_path().string();
    if (daemon.config_watch_dir.empty()) daemon.config_watch_dir = ".";
  }
  if (label) {
    kube::NodeLabelWatch* follow = &label->watch();
    daemon.config_label_fd = follow->fd();
    daemon.clear_config_label = [follow] { follow->Clear(); };
    daemon.config_refused = [&label](const std::string& why) {
      label->Refused(why, "the running config stays");
    };
  }
  std::optional<std::string> kubelet_socket = options.kubelet_socket;
  if (!kubelet_socket) {
    if (const char* env = std::getenv("KUBELET_SOCKET")) kubelet_socket = env;
  }
  daemon.kubelet_socket = kubelet_socket ? *kubelet_socket : options.kubelet_dir + "/kubelet.sock";
  daemon.cdi_spec_dir = options.cdi_spec_dir;
  absl::StatusOr<bool> hooks_disabled =
      HooksDisabled(ListOrEnvironment(options.cdi_disable_hooks, "CDI_DISABLE_HOOKS"));
  if (!hooks_disabled.ok()) return ReportError(hooks_disabled.status());
  daemon.cdi_hooks_disabled = *hooks_disabled;
  for (const std::string& flag :
       ListOrEnvironment(options.cdi_feature_flags, "CDI_FEATURE_FLAGS")) {
    spdlog::warn("--cdi-feature-flags: {} has no effect: gpunode's CDI spec has no feature flags",
                 flag);
  }
  daemon.host_root = global.host_root;
  absl::StatusOr<plugin::XidPolicy> xids = plugin::XidPolicyFromEnvironment(
      std::getenv("DP_DISABLE_HEALTHCHECKS"), std::getenv("DP_ENABLE_HEALTHCHECKS"));
  if (!xids.ok()) return ReportError(xids.status());
  daemon.health.xids = *xids;
  std::optional<std::string> period = options.recovery_period;
  if (!period) {
    if (const char* env = std::getenv("HEALTH_RECOVERY_PERIOD")) period = env;
  }
  if (period) {
    // "0" turns recovery off.
    absl::StatusOr<absl::Duration> recovery =
        core::ParseDuration("--health-recovery-period", *period, {.max = absl::Hours(24)});
    if (!recovery.ok()) return ReportError(recovery.status());
    daemon.health.recovery_period = absl::ToChronoMilliseconds(*recovery);
  }
  std::optional<std::string> flap_limit = options.flap_limit;
  if (!flap_limit) {
    if (const char* env = std::getenv("HEALTH_FLAP_LIMIT")) flap_limit = env;
  }
  if (flap_limit && !absl::SimpleAtoi(*flap_limit, &daemon.health.flap_limit)) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrCat("--health-flap-limit: \"", *flap_limit,
                     "\" is not a count; give a whole number such as 3 (0 = no limit)")));
  }
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
                                     std::move(loader), std::move(*signals));
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
