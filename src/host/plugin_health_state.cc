#include "host/plugin_health_state.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpunode::host {

using json = nlohmann::json;

std::string FormatPluginHealthState(const PluginHealthState& state) {
  json devices = json::array();
  for (const UnhealthyDevice& d : state.unhealthy) {
    json e = {{"index", d.index},
              {"uuid", d.uuid},
              {"reason", d.reason},
              {"faults", d.faults},
              {"recovers", d.recovers}};
    if (d.gpu_instance_id) e["gpu_instance_id"] = *d.gpu_instance_id;
    if (d.compute_instance_id) e["compute_instance_id"] = *d.compute_instance_id;
    if (!d.held.empty()) e["held"] = d.held;
    if (!d.waiting_for.empty()) e["waiting_for"] = d.waiting_for;
    devices.push_back(std::move(e));
  }
  return json{{"unhealthy", devices}}.dump(2) + "\n";
}

absl::StatusOr<PluginHealthState> ParsePluginHealthState(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("unhealthy") ||
      !doc["unhealthy"].is_array()) {
    return absl::InvalidArgumentError("not a JSON object with an \"unhealthy\" list");
  }
  PluginHealthState state;
  for (const json& e : doc["unhealthy"]) {
    if (!e.is_object() || !e.contains("index") || !e["index"].is_number_unsigned() ||
        !e.contains("uuid") || !e["uuid"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("entry ", state.unhealthy.size(),
                                                     " of \"unhealthy\" has no index and uuid"));
    }
    UnhealthyDevice d;
    d.index = e["index"].get<unsigned>();
    d.uuid = e["uuid"].get<std::string>();
    auto text_of = [&](const char* key) {
      return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
    };
    d.reason = text_of("reason");
    d.held = text_of("held");
    d.waiting_for = text_of("waiting_for");
    if (e.contains("gpu_instance_id") && e["gpu_instance_id"].is_number_unsigned())
      d.gpu_instance_id = e["gpu_instance_id"].get<unsigned>();
    if (e.contains("compute_instance_id") && e["compute_instance_id"].is_number_unsigned())
      d.compute_instance_id = e["compute_instance_id"].get<unsigned>();
    if (e.contains("faults") && e["faults"].is_array()) {
      for (const json& f : e["faults"]) {
        if (f.is_string()) d.faults.push_back(f.get<std::string>());
      }
    }
    if (e.contains("recovers") && e["recovers"].is_boolean())
      d.recovers = e["recovers"].get<bool>();
    state.unhealthy.push_back(std::move(d));
  }
  return state;
}

}  // namespace gpunode::host
