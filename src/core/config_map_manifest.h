// A Kubernetes ConfigMap manifest given where a config file is expected. The configs gpunode
// ships under deploy/ are ConfigMaps, and the pod reads each data key as a file of its mounted
// volume; so a check given the manifest reads each key as the config it holds, instead of
// reporting `apiVersion` as an unknown key of the config.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpunode::core {

struct ConfigMapManifest {
  std::string name;  // printable as part of one line
  // Data keys and their text, in file order.
  std::vector<std::pair<std::string, std::string>> data;
};

// The ConfigMap `text` holds (one YAML document with apiVersion v1 and kind ConfigMap), or
// nullopt for anything else: a config file, another kind, text that is not YAML (its own parser
// says what is wrong with it).
std::optional<ConfigMapManifest> AsConfigMap(std::string_view text);

// "its data keys are a, b" or "it has no data keys", for a message.
std::string DescribeDataKeys(const ConfigMapManifest& manifest);

// How errors in a data key's text name it: "FILE[KEY]" (the key made printable), to which a
// parser adds ":LINE", the line within the key's text.
std::string DataKeyLabel(const std::string& file, const std::string& key);

}  // namespace gpunode::core
