// What gpunode keeps of a Node: its name, labels, taints, readiness and NVIDIA resources.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/resource_list.h"

namespace gpunode::kube {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

inline std::optional<std::string_view> FindLabel(const Labels& labels, std::string_view key) {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return std::nullopt;
}

struct Taint {
  std::string_view key;
  std::string_view value;
  std::string_view effect;  // NoSchedule, PreferNoSchedule or NoExecute
};

enum class ConditionStatus : uint8_t { kTrue, kFalse, kUnknown };

struct NodeView {
  std::string_view name;
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;  // cordoned
  // The Ready condition; a node that reports none is treated as Unknown, as the node
  // lifecycle controller does.
  ConditionStatus ready = ConditionStatus::kUnknown;
  ResourceList capacity;              // NVIDIA resources only
  ResourceList allocatable;           // NVIDIA resources only
  std::string_view drain_started_at;  // kDrainStartedAnnotation, empty when absent
  Labels gpunode_annotations;         // the other gpunode.io/ annotations, the state gpunode keeps
};

}  // namespace gpunode::kube
