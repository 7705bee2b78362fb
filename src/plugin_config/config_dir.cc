#include "plugin_config/config_dir.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpunode::plugin_config {

absl::StatusOr<std::vector<std::string>> ConfigNames(const std::string& directory) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename();
    if (absl::StartsWith(name, "..")) continue;
    std::error_code type_ec;
    if (std::filesystem::is_directory(entry.path(), type_ec)) continue;  // follows the symlinks
    names.push_back(name);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("config directory ", directory, ": ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<SelectedConfig> SelectConfig(const std::string& directory,
                                            const ConfigSelection& selection) {
  absl::StatusOr<std::vector<std::string>> names = ConfigNames(directory);
  if (!names.ok()) return names.status();
  auto has = [&](const std::string& name) {
    return std::find(names->begin(), names->end(), name) != names->end();
  };
  auto found = [&](const std::string& name, std::string why) {
    return SelectedConfig{name, absl::StrCat(directory, "/", name), std::move(why)};
  };
  std::string keys = names->empty() ? "none" : absl::StrJoin(*names, ", ");
  if (selection.label && !selection.label->empty()) {
    if (has(*selection.label)) {
      return found(*selection.label,
                   absl::StrCat("node label ", kConfigLabel, "=", *selection.label));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("node label ", kConfigLabel, "=", *selection.label, ": no such config in ",
                     directory, " (configs: ", keys,
                     "); set the label to one of them or add the key to the "
                     "ConfigMap"));
  }
  if (selection.default_config && !selection.default_config->empty()) {
    if (has(*selection.default_config)) {
      return found(*selection.default_config, "the default config");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("default config ", *selection.default_config, ": no such config in ",
                     directory, " (configs: ", keys, "); fix --default-config or CONFIG_DEFAULT"));
  }
  if (has("default")) return found("default", "the config named default");
  if (names->size() == 1) return found(names->front(), "the only config");
  return absl::InvalidArgumentError(
      absl::StrCat("config directory ", directory, " holds ", names->size(), " configs (", keys,
                   ") and none is selected; label the node ", kConfigLabel,
                   "=<config>, set --default-config or CONFIG_DEFAULT, or name one default"));
}

}  // namespace gpunode::plugin_config
