#include "core/yaml_json.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"

namespace gpunode::core {
namespace {

nlohmann::ordered_json PlainScalar(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  int64_t i = 0;
  if (absl::SimpleAtoi(text, &i) && text.find_first_not_of("+-0123456789") == std::string::npos) {
    return i;
  }
  double d = 0;
  if (text.find_first_of("0123456789") != std::string::npos &&
      text.find_first_not_of("+-.0123456789eE") == std::string::npos &&
      absl::SimpleAtod(text, &d)) {
    return d;
  }
  return text;
}

}  // namespace

nlohmann::ordered_json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::ordered_json object = nlohmann::ordered_json::object();
      for (const auto& entry : node)
        object[entry.first.as<std::string>()] = YamlToJson(entry.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::ordered_json array = nlohmann::ordered_json::array();
      for (const auto& item : node) array.push_back(YamlToJson(item));
      return array;
    }
    case YAML::NodeType::Scalar:
      // yaml-cpp tags a quoted scalar "!" and a plain one "?".
      if (node.Tag() == "!") return node.Scalar();
      return PlainScalar(node.Scalar());
    default:
      return nullptr;
  }
}

}  // namespace gpunode::core
