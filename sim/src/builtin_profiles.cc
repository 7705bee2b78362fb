#include "builtin_profiles.h"

namespace gpunode::sim {

std::optional<std::string_view> find_builtin_profile(std::string_view name) {
  for (const BuiltinProfile& profile : builtin_profiles()) {
    if (profile.name == name) return profile.yaml;
  }
  return std::nullopt;
}

std::string builtin_profile_names(std::string_view separator) {
  std::string names;
  for (const BuiltinProfile& profile : builtin_profiles()) {
    if (!names.empty()) names += separator;
    names += profile.name;
  }
  return names;
}

}  // namespace gpunode::sim
