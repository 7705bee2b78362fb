// Type-checked reads of one member of a JSON object that came from outside (an API server, a
// webhook request, a plugin's output, a file a person may have edited).
//
// nlohmann's `value(key, fallback)` throws type_error when the member exists with another type,
// and our parsers run with exceptions off the error path: a `"status": {}` where a string belongs
// must read as absent, never terminate the process.
#pragma once

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace gpunode::core {

// The member `key` of `object` when `object` is an object and the member is a string; otherwise
// `fallback`.
inline std::string JsonString(const nlohmann::json& object, std::string_view key,
                              std::string_view fallback = "") {
  if (!object.is_object()) return std::string(fallback);
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

// The member `key` of `object` when it is an integer; otherwise `fallback`.
inline long long JsonInteger(const nlohmann::json& object, std::string_view key,
                             long long fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

}  // namespace gpunode::core
