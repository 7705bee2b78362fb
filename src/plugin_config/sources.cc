#include "plugin_config/sources.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "plugin_config/config_file.h"

namespace gpunode::plugin_config {
namespace {

// Wraps a value error with the variable's name: "environment MIG_STRATEGY: ...".
template <typename T>
absl::Status Set(std::optional<T>& out, const Environment& env, const char* name,
                 absl::StatusOr<T> (*parse)(absl::string_view)) {
  const char* value = env(name);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  absl::StatusOr<T> parsed = parse(value);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, ": ", parsed.status().message()));
  }
  out = *parsed;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Text(absl::string_view text) { return std::string(text); }

absl::StatusOr<std::vector<DeviceListStrategy>> Strategies(absl::string_view text) {
  std::vector<DeviceListStrategy> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    ASSIGN_OR_RETURN(DeviceListStrategy s,
                     ParseDeviceListStrategy(absl::StripAsciiWhitespace(part)));
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        "empty; give envvar, volume-mounts, cdi-annotations or cdi-cri");
  }
  return out;
}

absl::StatusOr<std::string> DiscoveryStrategy(absl::string_view text) {
  RETURN_IF_ERROR(CheckDeviceDiscoveryStrategy(text));
  return std::string(text);
}

// The first of `names` that is set and not empty, as NVIDIA's flags with two variables read them.
const char* FirstSet(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = env(name);
    if (value != nullptr && *value != '\0') return name;
  }
  return *names.begin();
}

// Variables that turn on a feature gpunode does not have: "false" (or unset) is fine.
absl::Status RefuseFeatures(const Environment& env) {
  for (const auto& [name, setting] :
       {std::pair{"GDS_ENABLED", "gdsEnabled"}, std::pair{"MOFED_ENABLED", "mofedEnabled"},
        std::pair{"GDRCOPY_ENABLED", "gdrcopyEnabled"},
        std::pair{"IMEX_REQUIRED", "imexRequired"}}) {
    std::optional<bool> on;
    RETURN_IF_ERROR(Set(on, env, name, &ParseGoBool));
    if (on.value_or(false)) {
      return absl::InvalidArgumentError(absl::StrCat("environment variable ", name, ": ",
                                                     UnsupportedFeature(setting),
                                                     "; unset it or set it to false"));
    }
  }
  if (const char* ids = env("IMEX_CHANNEL_IDS"); ids != nullptr && *ids != '\0') {
    return absl::InvalidArgumentError(absl::StrCat(
        "environment variable IMEX_CHANNEL_IDS: ", UnsupportedFeature("imexChannelIDs"),
        "; unset it"));
  }
  return absl::OkStatus();
}

// The longest recovery period accepted (--health-recovery-period, HEALTH_RECOVERY_PERIOD).
constexpr absl::Duration kMaxRecoveryPeriod = absl::Hours(24);

// A list flag's values, else the comma list of its variable, as NVIDIA's list flags read them.
std::optional<SettingText> ListFlagOrEnvironment(const char* flag,
                                                 const std::vector<std::string>& values,
                                                 const Environment& env, const char* variable) {
  std::optional<std::string> given;
  if (!values.empty()) given = absl::StrJoin(values, ",");
  return FlagOrEnvironment(flag, given, env, {variable});
}

std::vector<std::string> Items(const std::optional<SettingText>& list) {
  if (!list) return {};
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(list->text, ',', absl::SkipWhitespace())) {
    items.emplace_back(absl::StripAsciiWhitespace(item));
  }
  return items;
}

// NVIDIA's --cdi-disable-hooks names hooks to leave out of the CDI spec. gpunode's spec has two
// (update-ldcache, create-symlinks) and leaves them out together.
absl::StatusOr<bool> HooksDisabled(const std::optional<SettingText>& hooks) {
  bool all = false, some = false;
  for (const std::string& name : Items(hooks)) {
    if (name == "all") all = true;
    if (name == "update-ldcache" || name == "create-symlinks") some = true;
  }
  if (some && !all) {
    return absl::InvalidArgumentError(absl::StrCat(
        hooks->source,
        ": not supported by gpunode: disabling update-ldcache or create-symlinks alone; give all "
        "(both) or neither"));
  }
  return all;
}

absl::StatusOr<int> FlapLimit(const SettingText& limit) {
  int count = 0;
  if (!absl::SimpleAtoi(limit.text, &count) || count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(limit.source, ": \"", limit.text,
                     "\" is not a count; give a whole number such as 3 (0 = no limit)"));
  }
  return count;
}

std::optional<std::string> Variable(const Environment& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return value;
}

}  // namespace

const char* ProcessEnvironment(const char* name) { return std::getenv(name); }

std::optional<SettingText> FlagOrEnvironment(const char* flag,
                                             const std::optional<std::string>& flag_text,
                                             const Environment& env,
                                             std::initializer_list<const char*> variables) {
  if (flag_text) return SettingText{*flag_text, flag};
  for (const char* name : variables) {
    if (std::optional<std::string> value = Variable(env, name)) {
      return SettingText{*value, absl::StrCat("environment variable ", name)};
    }
  }
  return std::nullopt;
}

std::string ConfigFilePath(const std::optional<std::string>& flag, const Environment& env) {
  if (flag && !flag->empty()) return *flag;
  return Variable(env, "CONFIG_FILE").value_or("");
}

std::optional<std::string> DefaultConfigName(const std::optional<std::string>& flag,
                                             const Environment& env) {
  if (flag) return flag;
  return Variable(env, "CONFIG_DEFAULT");
}

absl::StatusOr<ConfigLayer> EnvironmentLayer(const Environment& env) {
  ConfigLayer layer;
  RETURN_IF_ERROR(Set(layer.mig_strategy, env, "MIG_STRATEGY", &ParseMigStrategy));
  RETURN_IF_ERROR(Set(layer.fail_on_init_error, env, "FAIL_ON_INIT_ERROR", &ParseGoBool));
  RETURN_IF_ERROR(Set(layer.nvidia_driver_root, env, "NVIDIA_DRIVER_ROOT", &Text));
  RETURN_IF_ERROR(Set(layer.nvidia_dev_root, env, "NVIDIA_DEV_ROOT", &Text));
  RETURN_IF_ERROR(Set(layer.pass_device_specs, env, "PASS_DEVICE_SPECS", &ParseGoBool));
  RETURN_IF_ERROR(Set(layer.device_list_strategies, env, "DEVICE_LIST_STRATEGY", &Strategies));
  RETURN_IF_ERROR(Set(layer.device_id_strategy, env, "DEVICE_ID_STRATEGY", &ParseDeviceIdStrategy));
  RETURN_IF_ERROR(Set(layer.cdi_annotation_prefix, env, "CDI_ANNOTATION_PREFIX", &Text));
  RETURN_IF_ERROR(Set(layer.shared_allocation_policy, env, "SHARED_DEVICES_ALLOCATION_POLICY",
                      &ParseSharedAllocationPolicy));
  RETURN_IF_ERROR(Set(layer.mps_root, env, "MPS_ROOT", &Text));
  RETURN_IF_ERROR(Set(layer.nvidia_cdi_hook_path, env,
                      FirstSet(env, {"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"}), &Text));
  RETURN_IF_ERROR(Set(layer.container_driver_root, env,
                      FirstSet(env, {"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"}), &Text));
  RETURN_IF_ERROR(
      Set(layer.device_discovery_strategy, env, "DEVICE_DISCOVERY_STRATEGY", &DiscoveryStrategy));
  RETURN_IF_ERROR(RefuseFeatures(env));
  return layer;
}

absl::Status CheckMps(const Config& config, const std::string& file, int line) {
  std::string at = absl::StrCat(file, ":", line, ": sharing.mps: ");
  if (config.mig_strategy == MigStrategy::kMixed) {
    return absl::InvalidArgumentError(absl::StrCat(
        at,
        "MPS is not supported with migStrategy mixed (MIG devices cannot be shared through "
        "MPS); use migStrategy none, or sharing.timeSlicing"));
  }
  if (config.mps_root.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        at,
        "MPS needs the MPS root shared with the control daemon; set --mps-root, MPS_ROOT or "
        "flags.mpsRoot (NVIDIA's chart uses /run/nvidia/mps)"));
  }
  if (config.mps_root.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(at, "the MPS root \"", config.mps_root,
                                                   "\" is not an absolute path; use e.g. "
                                                   "/run/nvidia/mps"));
  }
  return absl::OkStatus();
}

namespace {

// flags > environment > file > defaults, then the checks of the merged config.
absl::StatusOr<ResolvedConfig> Resolve(const ConfigLayer& flags, const ConfigLayer& environment,
                                       ConfigFile file, ResolvedConfig resolved) {
  resolved.config = Merge({&flags, &environment, &file.flags}, file.time_slicing,
                          file.mps.value_or(TimeSlicing{}));
  if (resolved.config.sharing_strategy() == SharingStrategy::kMps) {
    RETURN_IF_ERROR(CheckMps(resolved.config, resolved.config_file, file.mps_line));
  }
  resolved.warnings = std::move(file.warnings);
  return resolved;
}

}  // namespace

absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env,
                                             const ConfigSelection& selection) {
  ResolvedConfig resolved;
  ASSIGN_OR_RETURN(ConfigLayer environment, EnvironmentLayer(env));
  resolved.config_file = ConfigFilePath(config_file_flag, env);
  std::error_code ec;
  if (!resolved.config_file.empty() && std::filesystem::is_directory(resolved.config_file, ec)) {
    ConfigSelection pick = selection;
    pick.default_config = DefaultConfigName(selection.default_config, env);
    ASSIGN_OR_RETURN(SelectedConfig selected, SelectConfig(resolved.config_file, pick));
    resolved.config_file = selected.path;
    resolved.config_name = selected.name;
    resolved.selected_by = selected.why;
  }
  ConfigFile file;
  if (!resolved.config_file.empty()) {
    ASSIGN_OR_RETURN(file, ReadConfigFile(resolved.config_file));
  }
  return Resolve(flags, environment, std::move(file), std::move(resolved));
}

absl::StatusOr<ResolvedConfig> ResolveConfigText(const ConfigLayer& flags, const std::string& text,
                                                 const std::string& label, const Environment& env) {
  ResolvedConfig resolved;
  resolved.config_file = label;
  ASSIGN_OR_RETURN(ConfigLayer environment, EnvironmentLayer(env));
  ASSIGN_OR_RETURN(ConfigFile file, ParseConfigFile(text, label));
  return Resolve(flags, environment, std::move(file), std::move(resolved));
}

absl::StatusOr<ProcessSettings> ResolveProcessSettings(const ProcessFlags& flags,
                                                       const Environment& env) {
  ProcessSettings settings;
  settings.kubelet_socket = flags.kubelet_socket;
  if (const char* socket = env("KUBELET_SOCKET"); !settings.kubelet_socket && socket != nullptr) {
    settings.kubelet_socket = socket;  // "" too: serve without registering
  }
  ASSIGN_OR_RETURN(settings.cdi_hooks_disabled,
                   HooksDisabled(ListFlagOrEnvironment(
                       "--cdi-disable-hooks", flags.cdi_disable_hooks, env, "CDI_DISABLE_HOOKS")));
  settings.cdi_feature_flags = Items(ListFlagOrEnvironment(
      "--cdi-feature-flags", flags.cdi_feature_flags, env, "CDI_FEATURE_FLAGS"));
  settings.disable_healthchecks = Variable(env, "DP_DISABLE_HEALTHCHECKS");
  settings.enable_healthchecks = Variable(env, "DP_ENABLE_HEALTHCHECKS");
  if (std::optional<SettingText> period =
          FlagOrEnvironment("--health-recovery-period", flags.health_recovery_period, env,
                            {"HEALTH_RECOVERY_PERIOD"})) {
    ASSIGN_OR_RETURN(
        settings.health_recovery_period,
        core::ParseDuration(period->source, period->text, {.max = kMaxRecoveryPeriod}));
  }
  if (std::optional<SettingText> limit = FlagOrEnvironment(
          "--health-flap-limit", flags.health_flap_limit, env, {"HEALTH_FLAP_LIMIT"})) {
    ASSIGN_OR_RETURN(settings.health_flap_limit, FlapLimit(*limit));
  }
  return settings;
}

std::string KubeletSocket(const ProcessSettings& settings, const std::string& kubelet_dir) {
  return settings.kubelet_socket.value_or(kubelet_dir + "/kubelet.sock");
}

void ApplyDriverRootFlag(const std::string& driver_root, ConfigLayer& flags) {
  if (!flags.nvidia_driver_root && driver_root != "/") flags.nvidia_driver_root = driver_root;
}

std::string NvmlDriverRoot(const std::string& driver_root, const Config& config) {
  if (driver_root != "/") return driver_root;
  return config.container_driver_root.empty() ? config.nvidia_driver_root
                                              : config.container_driver_root;
}

absl::StatusOr<health::HealthOptions> HealthOptionsFrom(const ProcessSettings& settings) {
  health::HealthOptions options;
  ASSIGN_OR_RETURN(
      options.xids,
      health::XidPolicyFromEnvironment(
          settings.disable_healthchecks ? settings.disable_healthchecks->c_str() : nullptr,
          settings.enable_healthchecks ? settings.enable_healthchecks->c_str() : nullptr));
  if (settings.health_recovery_period) {
    // "0" turns recovery off.
    options.recovery_period = absl::ToChronoMilliseconds(*settings.health_recovery_period);
  }
  if (settings.health_flap_limit) options.flap_limit = *settings.health_flap_limit;
  return options;
}

}  // namespace gpunode::plugin_config
