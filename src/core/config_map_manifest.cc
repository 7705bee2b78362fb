#include "core/config_map_manifest.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/printable.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::core {

std::optional<ConfigMapManifest> AsConfigMap(std::string_view text) {
  // Every config read comes here (the plugin's reloads too): a text that cannot be a ConfigMap is
  // not parsed twice.
  if (text.find("ConfigMap") == std::string_view::npos) return std::nullopt;
  try {
    // Not const: yaml-cpp's const lookup of a missing key gives a node that throws when asked
    // its type; this one answers "undefined".
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap() || !root["kind"].IsScalar() || root["kind"].Scalar() != "ConfigMap" ||
        !root["apiVersion"].IsScalar() || root["apiVersion"].Scalar() != "v1") {
      return std::nullopt;
    }
    ConfigMapManifest manifest;
    if (YAML::Node metadata = root["metadata"]; metadata.IsMap()) {
      if (YAML::Node name = metadata["name"]; name.IsScalar()) {
        manifest.name = Printable(name.Scalar());
      }
    }
    if (YAML::Node data = root["data"]; data.IsMap()) {
      for (const auto& entry : data) {
        // The API server takes only strings here; anything else is no config to read.
        if (!entry.first.IsScalar() || !entry.second.IsScalar()) continue;
        manifest.data.emplace_back(entry.first.Scalar(), entry.second.Scalar());
      }
    }
    return manifest;
  } catch (const YAML::Exception&) {
    return std::nullopt;  // not YAML: the config's own parser says what is wrong
  }
}

std::string DescribeDataKeys(const ConfigMapManifest& manifest) {
  if (manifest.data.empty()) return "it has no data keys";
  std::vector<std::string> keys;
  for (const auto& [key, text] : manifest.data) keys.push_back(Printable(key));
  return absl::StrCat("its data keys are ", absl::StrJoin(keys, ", "));
}

std::string DataKeyLabel(const std::string& file, const std::string& key) {
  return absl::StrCat(file, "[", Printable(key), "]");
}

}  // namespace gpunode::core
