// YAML read as JSON, the way kubectl reads a manifest: YAML 1.2's core types for plain scalars
// (`backoffLimit: 0` is a number, `privileged: true` a boolean, `~` null), a quoted scalar stays
// a string, and mappings keep their order. One reader for every YAML-or-JSON input file.
#pragma once

#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace gpunode::core {

nlohmann::ordered_json YamlToJson(const YAML::Node& node);

}  // namespace gpunode::core
