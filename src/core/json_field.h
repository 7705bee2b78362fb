// Type-checked reads of one member of a JSON object that came from outside (an API server, a
// webhook request, a plugin's output, a file a person may have edited).
//
// nlohmann's `value(key, fallback)` throws type_error when the member exists with another type,
// and our parsers run with exceptions off the error path: a `"status": {}` where a string belongs
// must read as absent, never terminate the process.
#pragma once

#include <initializer_list>
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

// The member at `path` (each element a member of the object before it), or null when any step is
// missing or not an object. Unlike operator[], it neither inserts nor asserts.
inline const nlohmann::json* JsonAt(const nlohmann::json& object,
                                    std::initializer_list<const char*> path) {
  const nlohmann::json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

// The string at `path`, or "" when any step is missing or not an object, or the end is not a
// string: {"status", "phase"}.
inline std::string JsonStringAt(const nlohmann::json& object,
                                std::initializer_list<const char*> path) {
  const nlohmann::json* at = JsonAt(object, path);
  return at != nullptr && at->is_string() ? at->get<std::string>() : "";
}

// The member `key` of `object` when it is a boolean; otherwise `fallback`.
inline bool JsonBool(const nlohmann::json& object, std::string_view key, bool fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// The member `key` of `object` when it is an integer; otherwise `fallback`.
inline long long JsonInteger(const nlohmann::json& object, std::string_view key,
                             long long fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

}  // namespace gpunode::core
