#include "plugin/config/sources.h"

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
  return layer;
}

absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env) {
  ResolvedConfig resolved;
  ASSIGN_OR_RETURN(ConfigLayer environment, EnvironmentLayer(env));
  if (config_file_flag && !config_file_flag->empty()) {
    resolved.config_file = *config_file_flag;
  } else if (const char* file = env("CONFIG_FILE"); file != nullptr) {
    resolved.config_file = file;
  }
  ConfigFile file;
  if (!resolved.config_file.empty()) {
    ASSIGN_OR_RETURN(file, ReadConfigFile(resolved.config_file));
  }
  if (file.mps) {
    return absl::InvalidArgumentError(absl::StrCat(
        resolved.config_file, ":", file.mps_line,
        ": sharing.mps: MPS sharing is not supported by gpunode device-plugin; remove it or use "
        "sharing.timeSlicing"));
  }
  resolved.config = Merge({&flags, &environment, &file.flags}, file.time_slicing);
  resolved.warnings = std::move(file.warnings);
  return resolved;
}

}  // namespace gpunode::plugin
