#include "metrics/device_plugin_checkpoint.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpunode::metrics {
namespace {

using json = nlohmann::json;

void AppendIds(const json& ids, std::vector<std::string>* out) {
  if (!ids.is_array()) return;
  for (const json& id : ids) {
    if (id.is_string()) out->push_back(id.get<std::string>());
  }
}

}  // namespace

absl::StatusOr<std::vector<CheckpointEntry>> ParseDevicePluginCheckpoint(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return absl::InvalidArgumentError("device plugin checkpoint: not a JSON object");
  std::vector<CheckpointEntry> entries;
  auto data = doc.find("Data");
  if (data == doc.end() || !data->is_object()) return entries;
  auto pods = data->find("PodDeviceEntries");
  if (pods == data->end() || !pods->is_array()) return entries;
  for (const json& pod : *pods) {
    if (!pod.is_object()) continue;
    CheckpointEntry entry;
    if (auto it = pod.find("PodUID"); it != pod.end() && it->is_string()) entry.pod_uid = *it;
    if (auto it = pod.find("ContainerName"); it != pod.end() && it->is_string())
      entry.container = *it;
    if (auto it = pod.find("ResourceName"); it != pod.end() && it->is_string())
      entry.resource = *it;
    if (auto it = pod.find("DeviceIDs"); it != pod.end()) {
      if (it->is_object()) {
        // A device reachable from several NUMA nodes is listed under each.
        for (const auto& [numa, ids] : it->items()) AppendIds(ids, &entry.device_ids);
        std::sort(entry.device_ids.begin(), entry.device_ids.end());
        entry.device_ids.erase(std::unique(entry.device_ids.begin(), entry.device_ids.end()),
                               entry.device_ids.end());
      } else {
        AppendIds(*it, &entry.device_ids);
      }
    }
    if (entry.pod_uid.empty() || entry.device_ids.empty()) continue;
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace gpunode::metrics
