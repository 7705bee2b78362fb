#include "host/plugin_health_state.h"

#include <cstdint>
#include <limits>

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
  // Replace, not throw on, bytes that are not UTF-8: a file for doctor must not stop the plugin.
  return json{{"unhealthy", devices}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

absl::StatusOr<PluginHealthState> ParsePluginHealthState(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("unhealthy") ||
      !doc["unhealthy"].is_array()) {
    return absl::InvalidArgumentError("not a JSON object with an \"unhealthy\" list");
  }
  PluginHealthState state;
  for (const json& e : doc["unhealthy"]) {
    // An index or instance id is an unsigned int: a larger number would be read as another GPU.
    auto unsigned_of = [&](const char* key) -> std::optional<unsigned> {
      if (!e.contains(key) || !e[key].is_number_unsigned() ||
          e[key].get<uint64_t>() > std::numeric_limits<unsigned>::max()) {
        return std::nullopt;
      }
      return e[key].get<unsigned>();
    };
    std::optional<unsigned> index = unsigned_of("index");
    if (!index || !e.contains("uuid") || !e["uuid"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", state.unhealthy.size(),
                       " of \"unhealthy\" has no index (an unsigned int) and uuid"));
    }
    UnhealthyDevice d;
    d.index = *index;
    d.uuid = e["uuid"].get<std::string>();
    auto text_of = [&](const char* key) {
      return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
    };
    d.reason = text_of("reason");
    d.held = text_of("held");
    d.waiting_for = text_of("waiting_for");
    d.gpu_instance_id = unsigned_of("gpu_instance_id");
    d.compute_instance_id = unsigned_of("compute_instance_id");
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
