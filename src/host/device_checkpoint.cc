#include "host/device_checkpoint.h"

#include <set>

#include "core/json_field.h"
#include "nlohmann/json.hpp"

namespace gpunode::host {
namespace {

using json = nlohmann::json;

void CollectIds(const json& ids, std::set<std::string>& out) {
  if (!ids.is_array()) return;
  for (const json& id : ids) {
    if (id.is_string()) out.insert(id.get<std::string>());
  }
}

}  // namespace

absl::StatusOr<DeviceCheckpoint> ParseDeviceCheckpoint(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  auto data = doc.find("Data");
  if (data == doc.end() || !data->is_object()) {
    return absl::InvalidArgumentError("no \"Data\" object");
  }
  DeviceCheckpoint checkpoint;
  if (auto registered = data->find("RegisteredDevices");
      registered != data->end() && registered->is_object()) {
    for (const auto& [resource, ids] : registered->items()) {
      std::set<std::string> unique;
      CollectIds(ids, unique);
      checkpoint.registered[resource].assign(unique.begin(), unique.end());
    }
  }
  if (auto pods = data->find("PodDeviceEntries"); pods != data->end() && pods->is_array()) {
    for (const json& pod : *pods) {
      if (!pod.is_object()) continue;
      std::set<std::string> unique;
      if (auto ids = pod.find("DeviceIDs"); ids != pod.end()) {
        if (ids->is_object()) {
          for (const auto& [numa, list] : ids->items()) CollectIds(list, unique);
        } else {
          CollectIds(*ids, unique);
        }
      }
      if (unique.empty()) continue;
      checkpoint.allocations.push_back({core::JsonString(pod, "PodUID"),
                                        core::JsonString(pod, "ContainerName"),
                                        core::JsonString(pod, "ResourceName"),
                                        {unique.begin(), unique.end()}});
    }
  }
  return checkpoint;
}

}  // namespace gpunode::host
