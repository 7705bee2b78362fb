#include "host/dra_plugin_state.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpunode::host {

using json = nlohmann::json;

std::string FormatDraPluginState(const DraPluginState& state) {
  json devices = json::array();
  for (const AnnouncedDevice& device : state.devices) {
    devices.push_back({{"name", device.name}, {"uuid", device.uuid}, {"taints", device.taints}});
  }
  json doc = {{"pool", state.pool}, {"generation", state.generation}, {"devices", devices}};
  if (!state.publish_error.empty()) doc["publish_error"] = state.publish_error;
  // Replace, not throw on, bytes that are not UTF-8: a file for doctor must not stop the plugin.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

absl::StatusOr<DraPluginState> ParseDraPluginState(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("devices") ||
      !doc["devices"].is_array()) {
    return absl::InvalidArgumentError("not a JSON object with a \"devices\" list");
  }
  auto text_of = [](const json& object, const char* key) {
    return object.contains(key) && object[key].is_string() ? object[key].get<std::string>()
                                                           : std::string();
  };
  DraPluginState state;
  state.pool = text_of(doc, "pool");
  state.publish_error = text_of(doc, "publish_error");
  if (doc.contains("generation") && doc["generation"].is_number_integer())
    state.generation = doc["generation"].get<int64_t>();
  for (const json& entry : doc["devices"]) {
    if (!entry.is_object() || text_of(entry, "name").empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", state.devices.size(), " of \"devices\" has no name"));
    }
    AnnouncedDevice device{text_of(entry, "name"), text_of(entry, "uuid"), {}};
    if (entry.contains("taints") && entry["taints"].is_array()) {
      for (const json& taint : entry["taints"]) {
        if (taint.is_string()) device.taints.push_back(taint.get<std::string>());
      }
    }
    state.devices.push_back(std::move(device));
  }
  return state;
}

}  // namespace gpunode::host
