#include "cluster/scheduling.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "core/text.h"

namespace gpunode::cluster {
namespace {

bool MatchesRequirement(const kube::NodeSelectorRequirement& req,
                        std::optional<std::string_view> value) {
  auto in_values = [&] {
    return value && std::find(req.values.begin(), req.values.end(), *value) != req.values.end();
  };
  if (req.op == "In") return in_values();
  if (req.op == "NotIn") return !in_values();
  if (req.op == "Exists") return value.has_value();
  if (req.op == "DoesNotExist") return !value.has_value();
  if (req.op == "Gt" || req.op == "Lt") {
    // Both sides must be integers, and there must be exactly one value.
    int64_t have = 0, want = 0;
    if (!value || req.values.size() != 1 ||
        !absl::SimpleAtoi(absl::string_view(value->data(), value->size()), &have) ||
        !absl::SimpleAtoi(absl::string_view(req.values[0].data(), req.values[0].size()), &want)) {
      return false;
    }
    return req.op == "Gt" ? have > want : have < want;
  }
  return false;
}

}  // namespace

bool Tolerates(const kube::Toleration& toleration, const kube::Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (toleration.key.empty()) {
    // An empty key only makes sense with Exists: it tolerates everything.
    return toleration.op == "Exists";
  }
  if (toleration.key != taint.key) return false;
  if (toleration.op == "Exists") return true;
  if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
  return false;
}

std::vector<kube::Taint> UntoleratedTaints(const std::vector<kube::Toleration>& tolerations,
                                           const kube::NodeView& node) {
  std::vector<kube::Taint> out;
  for (const kube::Taint& taint : node.taints) {
    if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
    bool tolerated = std::any_of(tolerations.begin(), tolerations.end(),
                                 [&](const kube::Toleration& t) { return Tolerates(t, taint); });
    if (!tolerated) out.push_back(taint);
  }
  return out;
}

bool MatchesNodeSelectorAndAffinity(const kube::PodDetails& pod, const kube::NodeView& node) {
  for (const auto& [key, value] : pod.node_selector) {
    auto have = kube::FindLabel(node.labels, key);
    if (!have || *have != value) return false;
  }
  if (!pod.has_required_node_affinity) return true;
  // Terms are ORed; the requirements inside a term are ANDed. An empty term matches nothing.
  for (const kube::NodeSelectorTerm& term : pod.required_node_affinity) {
    if (term.match_expressions.empty() && term.match_fields.empty()) continue;
    bool all = true;
    for (const kube::NodeSelectorRequirement& req : term.match_expressions) {
      all = all && MatchesRequirement(req, kube::FindLabel(node.labels, req.key));
    }
    for (const kube::NodeSelectorRequirement& req : term.match_fields) {
      std::optional<std::string_view> field;
      if (req.key == "metadata.name") field = node.name;
      all = all && MatchesRequirement(req, field);
    }
    if (all) return true;
  }
  return false;
}

std::string TaintText(const kube::Taint& taint) {
  return core::StrCat("{", taint.key, ": ", taint.value, "}");
}

bool ToleratesUnschedulable(const std::vector<kube::Toleration>& tolerations) {
  kube::Taint cordon{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const kube::Toleration& t) { return Tolerates(t, cordon); });
}

}  // namespace gpunode::cluster
