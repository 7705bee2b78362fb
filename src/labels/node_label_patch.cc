#include "labels/node_label_patch.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/json_field.h"

namespace gpunode::labels {

using json = nlohmann::json;

absl::StatusOr<NodeLabelState> ReadNodeLabelState(std::string_view body, std::string_view node) {
  json object = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object() || core::JsonString(object, "kind") != "Node") {
    return absl::InternalError(
        absl::StrCat("node ", std::string(node), ": the API server's answer is not a Node"));
  }
  NodeLabelState state;
  if (const json* labels = core::JsonAt(object, {"metadata", "labels"});
      labels != nullptr && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) state.labels[key] = value.get<std::string>();
    }
  }
  if (const json* annotations = core::JsonAt(object, {"metadata", "annotations"});
      annotations != nullptr && annotations->is_object()) {
    if (auto it = annotations->find(kOwnedLabelsAnnotation);
        it != annotations->end() && it->is_string()) {
      state.owned = it->get<std::string>();
    }
  }
  return state;
}

std::set<std::string> OwnedKeys(const NodeLabelState& node) {
  std::set<std::string> keys;
  if (!node.owned) return keys;
  for (absl::string_view key : absl::StrSplit(*node.owned, ',', absl::SkipWhitespace())) {
    keys.insert(std::string(key));
  }
  return keys;
}

std::optional<NodeLabelPatch> MakeNodeLabelPatch(
    const NodeLabelState& node, const Labels& want,
    const std::set<std::string>& refresh_only_with_change) {
  NodeLabelPatch out;
  json labels = json::object();
  json refreshed = json::object();
  for (const auto& [key, value] : want) {
    auto it = node.labels.find(key);
    if (it != node.labels.end() && it->second == value) continue;
    if (it != node.labels.end() && refresh_only_with_change.contains(key)) {
      refreshed[key] = value;
      continue;
    }
    labels[key] = value;
    ++out.set;
  }
  for (const std::string& key : OwnedKeys(node)) {
    if (want.contains(key) || !node.labels.contains(key)) continue;
    labels[key] = nullptr;
    ++out.removed;
  }
  std::vector<std::string> keys;
  for (const auto& [key, value] : want) keys.push_back(key);
  std::string listed = absl::StrJoin(keys, ",");
  json annotations = json::object();
  if (keys.empty()) {
    if (node.owned) annotations[kOwnedLabelsAnnotation] = nullptr;
  } else if (node.owned != listed) {
    annotations[kOwnedLabelsAnnotation] = listed;
  }
  if (labels.empty() && annotations.empty()) return std::nullopt;
  labels.update(refreshed);
  json metadata = json::object();
  if (!labels.empty()) metadata["labels"] = std::move(labels);
  if (!annotations.empty()) metadata["annotations"] = std::move(annotations);
  out.patch = {{"metadata", std::move(metadata)}};
  return out;
}

}  // namespace gpunode::labels
