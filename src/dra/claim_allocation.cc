#include "dra/claim_allocation.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/json_field.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/quantity.h"
#include "nlohmann/json.hpp"

namespace gpunode::dra {
namespace {

using json = nlohmann::json;
using core::JsonAt;
using core::JsonString;

const json kNull;

// The member at `path`, or null: outside input read without a throw.
const json& At(const json& object, std::initializer_list<const char*> path) {
  const json* at = JsonAt(object, path);
  return at != nullptr ? *at : kNull;
}

constexpr char kConfigApiVersion[] = "resource.nvidia.com/v1beta1";

std::string Quoted(const json& value) {
  return value.is_string() ? core::StrCat("\"", core::Printable(value.get<std::string>()), "\"")
                           : value.dump();
}

// The names in `object` that are not in `known`, for an error that lists them.
std::vector<std::string> UnknownFields(const json& object, const std::set<std::string>& known) {
  std::vector<std::string> unknown;
  for (const auto& [key, value] : object.items()) {
    if (!known.contains(key)) unknown.push_back(std::string(core::Printable(key)));
  }
  return unknown;
}

absl::Status ConfigError(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(core::StrCat(where, ": ", what));
}

// How a config says to share its devices: a time-slice interval, or an MPS daemon, or neither
// (a config without `sharing`, or TimeSlicing without an interval, leaves the devices as an
// earlier config left them).
struct Sharing {
  std::string interval;
  std::optional<MpsRequest> mps;
  bool SaysHow() const { return !interval.empty() || mps.has_value(); }
};

// A memory limit of mpsConfig: a resource.Quantity in NVIDIA's type, so "4Gi" or a number of
// bytes, and at least 1Mi, since the daemon takes whole MiB (NVIDIA's driver refuses less too).
absl::StatusOr<uint64_t> ReadMemoryLimit(const json& value, std::string_view field,
                                         std::string_view where) {
  std::string text = value.is_string()           ? value.get<std::string>()
                     : value.is_number_integer() ? value.dump()
                                                 : std::string();
  absl::StatusOr<int64_t> milli = kube::ParseQuantityMilli(text);
  constexpr int64_t kMebibyteMilli = int64_t{1000} << 20;
  if (!milli.ok() || *milli < kMebibyteMilli) {
    return ConfigError(where, core::StrCat(field, " ", Quoted(value),
                                           " is not a memory quantity of at least 1Mi; write it "
                                           "as \"4Gi\" or \"512Mi\""));
  }
  return static_cast<uint64_t>(*milli / 1000);
}

absl::StatusOr<MpsRequest> ReadMpsConfig(const json& sharing, std::string_view where) {
  if (sharing.contains("timeSlicingConfig")) {
    return ConfigError(where,
                       "sharing.timeSlicingConfig cannot be used with sharing.strategy MPS; "
                       "set the daemon's limits in sharing.mpsConfig");
  }
  const json& config = sharing.contains("mpsConfig") ? sharing["mpsConfig"] : json(json::object());
  if (!config.is_object()) return ConfigError(where, "sharing.mpsConfig is not an object");
  std::vector<std::string> unknown =
      UnknownFields(config, {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                             "defaultPerDevicePinnedMemoryLimit"});
  if (!unknown.empty()) {
    return ConfigError(
        where, core::StrCat("sharing.mpsConfig has no field(s) ", absl::StrJoin(unknown, ", ")));
  }
  MpsRequest mps;
  if (config.contains("defaultActiveThreadPercentage")) {
    const json& percentage = config["defaultActiveThreadPercentage"];
    if (!percentage.is_number_integer() || percentage.get<int64_t>() < 1 ||
        percentage.get<int64_t>() > 100) {
      return ConfigError(where,
                         core::StrCat("sharing.mpsConfig.defaultActiveThreadPercentage ",
                                      Quoted(percentage), " is not a whole number from 1 to 100"));
    }
    mps.active_thread_percentage = percentage.get<int>();
  }
  if (config.contains("defaultPinnedDeviceMemoryLimit")) {
    ASSIGN_OR_RETURN(mps.default_pinned_bytes,
                     ReadMemoryLimit(config["defaultPinnedDeviceMemoryLimit"],
                                     "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit", where));
  }
  if (config.contains("defaultPerDevicePinnedMemoryLimit")) {
    const json& limits = config["defaultPerDevicePinnedMemoryLimit"];
    if (!limits.is_object()) {
      return ConfigError(where,
                         "sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit is not a map of a "
                         "GPU UUID or device index to a quantity");
    }
    for (const auto& [key, value] : limits.items()) {
      std::string field = core::StrCat("sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit[",
                                       core::Printable(key), "]");
      ASSIGN_OR_RETURN(mps.pinned_bytes[key], ReadMemoryLimit(value, field, where));
    }
  }
  return mps;
}

// A GpuConfig or MigDeviceConfig: `sharing` is the only field beside the type's, with NVIDIA's
// two strategies, each with its own settings.
absl::StatusOr<Sharing> ReadOpaqueConfig(const json& parameters, std::string_view where) {
  if (!parameters.is_object()) return ConfigError(where, "parameters is not an object");
  const json& api_version = At(parameters, {"apiVersion"});
  const json& kind = At(parameters, {"kind"});
  if (api_version != kConfigApiVersion) {
    return ConfigError(
        where, core::StrCat("apiVersion is ", Quoted(api_version), ", not ", kConfigApiVersion));
  }
  if (kind != "GpuConfig" && kind != "MigDeviceConfig") {
    return ConfigError(where, core::StrCat("kind ", Quoted(kind),
                                           " is not one gpunode reads; use GpuConfig or "
                                           "MigDeviceConfig"));
  }
  std::vector<std::string> unknown = UnknownFields(parameters, {"apiVersion", "kind", "sharing"});
  if (!unknown.empty()) {
    return ConfigError(where, core::StrCat(kind.get<std::string>(), " has no field(s) ",
                                           absl::StrJoin(unknown, ", ")));
  }
  if (!parameters.contains("sharing")) return Sharing{};
  const json& sharing = At(parameters, {"sharing"});
  if (!sharing.is_object()) return ConfigError(where, "sharing is not an object");
  unknown = UnknownFields(sharing, {"strategy", "timeSlicingConfig", "mpsConfig"});
  if (!unknown.empty()) {
    return ConfigError(where,
                       core::StrCat("sharing has no field(s) ", absl::StrJoin(unknown, ", ")));
  }
  const json& strategy = sharing.contains("strategy") ? sharing["strategy"] : json("TimeSlicing");
  if (strategy == "MPS") {
    ASSIGN_OR_RETURN(MpsRequest mps, ReadMpsConfig(sharing, where));
    return Sharing{.interval = "", .mps = mps};
  }
  if (strategy != "TimeSlicing") {
    return ConfigError(where, core::StrCat("sharing.strategy ", Quoted(strategy),
                                           " is neither TimeSlicing nor MPS"));
  }
  if (sharing.contains("mpsConfig")) {
    return ConfigError(where,
                       "sharing.mpsConfig cannot be used with sharing.strategy TimeSlicing; set "
                       "strategy: MPS or leave mpsConfig out");
  }
  const json& time_slicing =
      sharing.contains("timeSlicingConfig") ? sharing["timeSlicingConfig"] : json(json::object());
  if (!time_slicing.is_object()) {
    return ConfigError(where, "sharing.timeSlicingConfig is not an object");
  }
  unknown = UnknownFields(time_slicing, {"interval"});
  if (!unknown.empty()) {
    return ConfigError(where, core::StrCat("sharing.timeSlicingConfig has no field(s) ",
                                           absl::StrJoin(unknown, ", ")));
  }
  if (!time_slicing.contains("interval")) return Sharing{};
  const json& interval = time_slicing["interval"];
  static const std::set<std::string> kIntervals = {"Default", "Short", "Medium", "Long"};
  if (!interval.is_string() || !kIntervals.contains(interval.get<std::string>())) {
    return ConfigError(where, core::StrCat("sharing.timeSlicingConfig.interval ", Quoted(interval),
                                           " is not one of Default, Short, Medium, Long"));
  }
  return Sharing{.interval = interval.get<std::string>(), .mps = std::nullopt};
}

}  // namespace

absl::StatusOr<std::vector<AllocatedDevice>> ReadAllocation(std::string_view claim_json,
                                                            std::string_view uid,
                                                            std::string_view driver,
                                                            std::string_view pool) {
  json claim = json::parse(claim_json, nullptr, false);
  if (claim.is_discarded() || JsonString(claim, "kind") != "ResourceClaim") {
    return absl::InternalError("the API server's answer is not a ResourceClaim");
  }
  const json& metadata = At(claim, {"metadata"});
  std::string name =
      core::StrCat("ResourceClaim ", core::Printable(JsonString(metadata, "namespace")), "/",
                   core::Printable(JsonString(metadata, "name")));
  if (JsonString(metadata, "uid") != uid) {
    return absl::FailedPreconditionError(
        core::StrCat(name, " has UID ", core::Printable(JsonString(metadata, "uid")), ", not ",
                     core::Printable(uid), ": the claim was deleted and made again"));
  }
  if (!At(claim, {"status", "allocation"}).is_object()) {
    return absl::FailedPreconditionError(core::StrCat(name, " is not allocated"));
  }
  const json& results = At(claim, {"status", "allocation", "devices", "results"});
  if (!results.is_array() && !results.is_null()) {
    return absl::InternalError(
        core::StrCat(name, ": status.allocation.devices.results is not a list"));
  }
  std::vector<AllocatedDevice> out;
  for (const json& result : results) {
    if (JsonString(result, "driver") != driver) continue;
    AllocatedDevice device{JsonString(result, "request"), JsonString(result, "pool"),
                           JsonString(result, "device")};
    if (device.pool != pool) {
      return absl::FailedPreconditionError(core::StrCat(
          name, ": device ", core::Printable(device.device), " was allocated from pool ",
          core::Printable(device.pool), ", not from this node's pool ", pool));
    }
    out.push_back(std::move(device));
  }
  const json& configs = At(claim, {"status", "allocation", "devices", "config"});
  if (configs.is_array()) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const json& opaque = At(configs[i], {"opaque"});
      if (JsonString(opaque, "driver") != driver) continue;
      std::string where =
          core::StrCat(name, ": status.allocation.devices.config[", i, "].opaque.parameters");
      ASSIGN_OR_RETURN(Sharing sharing, ReadOpaqueConfig(At(opaque, {"parameters"}), where));
      if (!sharing.SaysHow()) continue;
      if (sharing.mps) sharing.mps->config_index = i;
      std::set<std::string> requests;
      if (const json& listed = At(configs[i], {"requests"}); listed.is_array()) {
        for (const json& request : listed) {
          if (request.is_string()) requests.insert(request.get<std::string>());
        }
      }
      for (AllocatedDevice& device : out) {
        // "gpu/big" is configured through "gpu" as well as through itself.
        std::string parent = device.request.substr(0, device.request.find('/'));
        if (requests.empty() || requests.contains(device.request) || requests.contains(parent)) {
          device.time_slice = sharing.interval;
          device.mps = sharing.mps;
        }
      }
    }
  }
  return out;
}

}  // namespace gpunode::dra
