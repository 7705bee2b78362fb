#include "plugin_config/config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace gpunode::plugin_config {
namespace {

template <typename T, size_t N>
absl::StatusOr<T> Lookup(const std::pair<const char*, T> (&table)[N], absl::string_view text,
                         absl::string_view what) {
  std::vector<std::string> names;
  for (const auto& [name, value] : table) {
    if (text == name) return value;
    names.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat("\"", std::string(text), "\" is not a ",
                                                 std::string(what), "; use ",
                                                 absl::StrJoin(names, ", ")));
}

template <typename T, size_t N>
std::string NameOf(const std::pair<const char*, T> (&table)[N], T value) {
  for (const auto& [name, v] : table) {
    if (v == value) return name;
  }
  return "?";
}

constexpr std::pair<const char*, MigStrategy> kMigStrategies[] = {
    {"none", MigStrategy::kNone}, {"single", MigStrategy::kSingle}, {"mixed", MigStrategy::kMixed}};
constexpr std::pair<const char*, DeviceListStrategy> kListStrategies[] = {
    {"envvar", DeviceListStrategy::kEnvvar},
    {"volume-mounts", DeviceListStrategy::kVolumeMounts},
    {"cdi-annotations", DeviceListStrategy::kCdiAnnotations},
    {"cdi-cri", DeviceListStrategy::kCdiCri}};
constexpr std::pair<const char*, DeviceIdStrategy> kIdStrategies[] = {
    {"uuid", DeviceIdStrategy::kUuid}, {"index", DeviceIdStrategy::kIndex}};
constexpr std::pair<const char*, SharedAllocationPolicy> kPolicies[] = {
    {"distributed", SharedAllocationPolicy::kDistributed},
    {"packed", SharedAllocationPolicy::kPacked}};

}  // namespace

bool Config::Uses(DeviceListStrategy strategy) const {
  return std::find(device_list_strategies.begin(), device_list_strategies.end(), strategy) !=
         device_list_strategies.end();
}

SharingStrategy Config::sharing_strategy() const {
  if (!mps.resources.empty()) return SharingStrategy::kMps;
  if (!time_slicing.resources.empty()) return SharingStrategy::kTimeSlicing;
  return SharingStrategy::kNone;
}

const TimeSlicing* Config::shared() const {
  switch (sharing_strategy()) {
    case SharingStrategy::kMps:
      return &mps;
    case SharingStrategy::kTimeSlicing:
      return &time_slicing;
    case SharingStrategy::kNone:
      break;
  }
  return nullptr;
}

std::string Name(SharingStrategy value) {
  switch (value) {
    case SharingStrategy::kMps:
      return "mps";
    case SharingStrategy::kTimeSlicing:
      return "time-slicing";
    case SharingStrategy::kNone:
      break;
  }
  return "none";
}

absl::StatusOr<MigStrategy> ParseMigStrategy(absl::string_view text) {
  return Lookup(kMigStrategies, text, "MIG strategy");
}
absl::StatusOr<DeviceListStrategy> ParseDeviceListStrategy(absl::string_view text) {
  return Lookup(kListStrategies, text, "device list strategy");
}
absl::StatusOr<DeviceIdStrategy> ParseDeviceIdStrategy(absl::string_view text) {
  return Lookup(kIdStrategies, text, "device ID strategy");
}
absl::StatusOr<SharedAllocationPolicy> ParseSharedAllocationPolicy(absl::string_view text) {
  return Lookup(kPolicies, text, "shared devices allocation policy");
}
std::string Name(MigStrategy value) { return NameOf(kMigStrategies, value); }
std::string Name(DeviceListStrategy value) { return NameOf(kListStrategies, value); }
std::string Name(DeviceIdStrategy value) { return NameOf(kIdStrategies, value); }
std::string Name(SharedAllocationPolicy value) { return NameOf(kPolicies, value); }

absl::Status CheckDeviceDiscoveryStrategy(absl::string_view text) {
  if (text == "auto" || text == "nvml") return absl::OkStatus();
  if (text == "tegra" || text == "vfio") {
    return absl::InvalidArgumentError(absl::StrCat("not supported by gpunode: ", std::string(text),
                                                   " device discovery; use auto or nvml"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", std::string(text), "\" is not a device discovery strategy; use auto or nvml"));
}

std::string UnsupportedFeature(absl::string_view setting) {
  constexpr std::pair<const char*, const char*> kFeatures[] = {
      {"gdsEnabled", "GPUDirect Storage"},
      {"mofedEnabled", "MOFED (GPUDirect RDMA devices)"},
      {"gdrcopyEnabled", "GDRCopy"},
      {"imexChannelIDs", "IMEX channels"},
      {"imexRequired", "IMEX channels"}};
  for (const auto& [key, feature] : kFeatures) {
    if (setting == key) return absl::StrCat("not supported by gpunode: ", feature, " (", key, ")");
  }
  return absl::StrCat("not supported by gpunode: ", std::string(setting));
}

absl::StatusOr<bool> ParseGoBool(absl::string_view text) {
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", std::string(text), "\" is not a boolean; use true or false"));
}

std::string ConfigJson(const Config& config) {
  nlohmann::json strategies = nlohmann::json::array();
  for (DeviceListStrategy s : config.device_list_strategies) strategies.push_back(Name(s));
  auto section = [](const TimeSlicing& ts) {
    nlohmann::json resources = nlohmann::json::array();
    for (const TimeSlicedResource& r : ts.resources) {
      resources.push_back({{"name", r.name}, {"replicas", r.replicas}});
    }
    return nlohmann::json{{"renameByDefault", ts.rename_by_default},
                          {"failRequestsGreaterThanOne", ts.fail_requests_greater_than_one},
                          {"resources", resources}};
  };
  nlohmann::json json = {
      {"version", "v1"},
      {"flags",
       {{"migStrategy", Name(config.mig_strategy)},
        {"failOnInitError", config.fail_on_init_error},
        {"nvidiaDriverRoot", config.nvidia_driver_root},
        {"nvidiaDevRoot", config.dev_root()},
        {"mpsRoot", config.mps_root},
        {"deviceDiscoveryStrategy", config.device_discovery_strategy},
        {"plugin",
         {{"passDeviceSpecs", config.pass_device_specs},
          {"deviceListStrategy", strategies},
          {"deviceIDStrategy", Name(config.device_id_strategy)},
          {"cdiAnnotationPrefix", config.cdi_annotation_prefix},
          {"nvidiaCTKPath", config.nvidia_cdi_hook_path},
          {"containerDriverRoot", config.container_driver_root},
          {"sharedDevicesAllocationPolicy", Name(config.shared_allocation_policy)}}}}},
      {"sharing", {{"timeSlicing", section(config.time_slicing)}}}};
  if (config.sharing_strategy() == SharingStrategy::kMps) {
    json["sharing"]["mps"] = section(config.mps);
  }
  // Replace rather than throw on text that is not UTF-8 (a flag or variable can hold any bytes).
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gpunode::plugin_config
