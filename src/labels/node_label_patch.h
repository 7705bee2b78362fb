// The labels `gpunode labels --write node` puts on its own Node through the API server: which
// of the Node's labels are the labeller's (the annotation that lists them), and the merge patch
// that brings the Node to the labels wanted, removing the ones it wrote before and no longer
// writes and leaving every other label alone.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "labels/gfd_labels.h"
#include "nlohmann/json.hpp"

namespace gpunode::labels {

// The Node annotation listing the label keys the labeller wrote, comma-separated and sorted: what
// it may remove. A label not listed there is never touched.
inline constexpr char kOwnedLabelsAnnotation[] = "gpunode.io/labels";

// What the labeller reads of its Node.
struct NodeLabelState {
  Labels labels;                     // metadata.labels
  std::optional<std::string> owned;  // the annotation's value; nullopt when absent
};

// The labels and the annotation of a Node object (the API server's JSON). A body that is no
// Node object is an error naming `node`.
absl::StatusOr<NodeLabelState> ReadNodeLabelState(std::string_view body, std::string_view node);

// The keys the annotation lists (empty entries dropped).
std::set<std::string> OwnedKeys(const NodeLabelState& node);

struct NodeLabelPatch {
  nlohmann::json patch;  // an application/merge-patch+json body
  int set = 0;           // labels added or changed
  int removed = 0;       // labels the labeller wrote before and no longer writes
};

// The merge patch that gives the Node `want` and removes the owned labels `want` no longer has,
// with the annotation listing the keys of `want` (removed when `want` is empty); nullopt when the
// Node already has all of it. A key of `want` the Node has with another value is taken over.
// A key in `refresh_only_with_change` (the timestamp) does not make a change by its value alone:
// it is written, at its new value, only when something else changes or the Node lacks it.
std::optional<NodeLabelPatch> MakeNodeLabelPatch(
    const NodeLabelState& node, const Labels& want,
    const std::set<std::string>& refresh_only_with_change = {});

}  // namespace gpunode::labels
