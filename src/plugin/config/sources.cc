#include "plugin/config/sources.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "plugin/config/config_file.h"

namespace gpunode::plugin {
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

}  // namespace

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

absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env,
                                             const ConfigSelection& selection) {
  ResolvedConfig resolved;
  ASSIGN_OR_RETURN(ConfigLayer environment, EnvironmentLayer(env));
  if (config_file_flag && !config_file_flag->empty()) {
    resolved.config_file = *config_file_flag;
  } else if (const char* file = env("CONFIG_FILE"); file != nullptr) {
    resolved.config_file = file;
  }
  std::error_code ec;
  if (!resolved.config_file.empty() && std::filesystem::is_directory(resolved.config_file, ec)) {
    ConfigSelection pick = selection;
    if (!pick.default_config) {
      if (const char* name = env("CONFIG_DEFAULT"); name != nullptr && *name != '\0') {
        pick.default_config = name;
      }
    }
    ASSIGN_OR_RETURN(SelectedConfig selected, SelectConfig(resolved.config_file, pick));
    resolved.config_file = selected.path;
    resolved.config_name = selected.name;
    resolved.selected_by = selected.why;
  }
  ConfigFile file;
  if (!resolved.config_file.empty()) {
    ASSIGN_OR_RETURN(file, ReadConfigFile(resolved.config_file));
  }
  resolved.config = Merge({&flags, &environment, &file.flags}, file.time_slicing,
                          file.mps.value_or(TimeSlicing{}));
  if (resolved.config.sharing_strategy() == SharingStrategy::kMps) {
    RETURN_IF_ERROR(CheckMps(resolved.config, resolved.config_file, file.mps_line));
  }
  resolved.warnings = std::move(file.warnings);
  return resolved;
}

}  // namespace gpunode::plugin
