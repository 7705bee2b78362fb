// The profiles compiled into the library from sim/profiles/*.yaml.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpunode::sim {

struct BuiltinProfile {
  std::string_view name;  // the file name without .yaml
  std::string_view yaml;
};

// Sorted by name. Defined in the source file the build generates from sim/profiles.
std::span<const BuiltinProfile> builtin_profiles();

std::optional<std::string_view> find_builtin_profile(std::string_view name);

// The names, joined by `separator`.
std::string builtin_profile_names(std::string_view separator);

}  // namespace gpunode::sim
