#include "cluster/scheduling.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/strings/numbers.h"
#include "core/nearest.h"
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

std::string Quoted(std::string_view text) { return core::StrCat("\"", text, "\""); }

std::string ValuesText(const std::vector<std::string_view>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += core::StrCat(i ? ", " : "", values[i]);
  return text + "]";
}

// A likely typo of `wanted` among `candidates`: one at most max(2, a fifth of its length) edits
// away but never half of it (`a` is no typo of `b`), else one that holds the other (a10 and
// nvidia-a10; nvidia and nvidia.com/gpu). Labels are long and alike (NVIDIA-A100-... and
// NVIDIA-H100-...), so the bar is lower than for commands.
std::string NearMiss(std::string_view wanted, const std::vector<std::string>& candidates) {
  std::string nearest;
  size_t best = std::min(std::max<size_t>(2, wanted.size() / 5), wanted.size() / 2) + 1;
  for (const std::string& candidate : candidates) {
    if (size_t distance = core::EditDistance(wanted, candidate); distance < best) {
      best = distance;
      nearest = candidate;
    }
  }
  if (!nearest.empty() || wanted.size() < 2) return nearest;
  for (const std::string& candidate : candidates) {
    if (candidate.find(wanted) != std::string::npos ||
        (candidate.size() >= 2 && wanted.find(candidate) != std::string_view::npos)) {
      return candidate;
    }
  }
  return "";
}

// For a value of `key` no node has: "; did you mean X, on N node(s)?" when X is a likely typo of
// it, ", likely the value meant" when X is `shown` (the node's own, which the message names), or
// "".
std::string ValueHint(std::string_view key, std::string_view wanted, std::string_view shown,
                      const std::vector<kube::NodeView>& nodes) {
  std::vector<std::string> values;
  std::map<std::string, int, std::less<>> count;
  for (const kube::NodeView& n : nodes) {
    if (std::optional<std::string_view> v = kube::FindLabel(n.labels, key)) {
      if (count[std::string(*v)]++ == 0) values.emplace_back(*v);
    }
  }
  if (count.contains(wanted)) return "";
  std::string near = NearMiss(wanted, values);
  if (near.empty()) return "";
  if (near == shown) return ", likely the value meant";
  return core::StrCat("; did you mean ", near, ", on ", count[near], " node(s)?");
}

// "; did you mean KEY?" for a label key the node lacks but has one close to, or "".
std::string KeyHint(std::string_view wanted, const kube::NodeView& node) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : node.labels) keys.emplace_back(key);
  std::string near = NearMiss(wanted, keys);
  return near.empty() ? "" : core::StrCat("; did you mean the node's ", near, "?");
}

// One part of a pod's node selection that a node fails.
struct Miss {
  enum Kind { kSelector, kRequirement, kEmptyTerm, kNoTerms } kind;
  size_t term = 0;                                     // 1-based, for kRequirement and kEmptyTerm
  const kube::NodeSelectorRequirement* req = nullptr;  // kRequirement
  std::string_view key = {};                           // kSelector and kRequirement
  std::string_view value = {};                         // kSelector
  std::optional<std::string_view> have = {};           // the node's value of `key`
};

// What of spec.nodeSelector and the required node affinity `node` fails, as kube-scheduler
// evaluates them: empty when the node passes; else the first nodeSelector entry it fails, or
// (the terms are ORed, the requirements of one ANDed) every term's first failing requirement.
std::vector<Miss> Misses(const kube::PodDetails& pod, const kube::NodeView& node) {
  for (const auto& [key, value] : pod.node_selector) {
    std::optional<std::string_view> have = kube::FindLabel(node.labels, key);
    if (!have || *have != value) {
      return {{.kind = Miss::kSelector, .key = key, .value = value, .have = have}};
    }
  }
  if (!pod.has_required_node_affinity) return {};
  if (pod.required_node_affinity.empty()) return {{.kind = Miss::kNoTerms}};
  std::vector<Miss> misses;
  for (size_t i = 0; i < pod.required_node_affinity.size(); ++i) {
    const kube::NodeSelectorTerm& term = pod.required_node_affinity[i];
    if (term.match_expressions.empty() && term.match_fields.empty()) {
      misses.push_back({.kind = Miss::kEmptyTerm, .term = i + 1});
      continue;
    }
    std::optional<Miss> first;
    for (const kube::NodeSelectorRequirement& req : term.match_expressions) {
      std::optional<std::string_view> have = kube::FindLabel(node.labels, req.key);
      if (MatchesRequirement(req, have)) continue;
      first = Miss{
          .kind = Miss::kRequirement, .term = i + 1, .req = &req, .key = req.key, .have = have};
      break;
    }
    for (const kube::NodeSelectorRequirement& req : term.match_fields) {
      if (first) break;
      std::optional<std::string_view> field;
      if (req.key == "metadata.name") field = node.name;
      if (MatchesRequirement(req, field)) continue;
      first = Miss{
          .kind = Miss::kRequirement, .term = i + 1, .req = &req, .key = req.key, .have = field};
    }
    if (!first) return {};  // this term matches: the node passes
    misses.push_back(*first);
  }
  return misses;
}

// A miss in words, with a hint where the wanted key or value looks like a typo.
std::string Describe(const Miss& miss, const kube::NodeView& node,
                     const std::vector<kube::NodeView>& nodes) {
  switch (miss.kind) {
    case Miss::kNoTerms:
      return "the required node affinity has no term, which matches no node";
    case Miss::kEmptyTerm:
      return core::StrCat("affinity term ", miss.term, ": an empty term matches no node");
    case Miss::kSelector: {
      std::string what = core::StrCat("nodeSelector ", miss.key, "=", miss.value, ": ");
      if (!miss.have)
        return core::StrCat(what, "the node has no ", miss.key, KeyHint(miss.key, node));
      return core::StrCat(what, "the node has ", Quoted(*miss.have),
                          ValueHint(miss.key, miss.value, *miss.have, nodes));
    }
    case Miss::kRequirement:
      break;
  }
  const kube::NodeSelectorRequirement& req = *miss.req;
  std::string what = core::StrCat("affinity term ", miss.term, ": ", req.key, " ", req.op,
                                  req.values.empty() ? "" : " " + ValuesText(req.values), ": ");
  if (!miss.have) return core::StrCat(what, "the node has no ", req.key, KeyHint(req.key, node));
  std::string got = core::StrCat(what, "the node has ", Quoted(*miss.have));
  if (req.op == "In" && req.values.size() == 1) {
    return core::StrCat(got, ValueHint(req.key, req.values[0], *miss.have, nodes));
  }
  return got;
}

}  // namespace

std::string NodeSelectionMismatch(const kube::PodDetails& pod, const kube::NodeView& node,
                                  const std::vector<kube::NodeView>& nodes) {
  std::string text;
  for (const Miss& miss : Misses(pod, node)) {
    core::StrAppend(&text, text.empty() ? "" : "; ", Describe(miss, node, nodes));
  }
  return text;
}

std::string TolerationNearMiss(const std::vector<kube::Toleration>& tolerations,
                               const kube::Taint& taint) {
  std::vector<std::string> keys;
  for (const kube::Toleration& t : tolerations) {
    if (t.key == taint.key) {
      if (!t.effect.empty() && t.effect != taint.effect) {
        return core::StrCat("the pod's toleration for ", taint.key, " has effect ", t.effect,
                            ", the taint's is ", taint.effect);
      }
      if ((t.op.empty() || t.op == "Equal") && t.value != taint.value) {
        return core::StrCat("the pod tolerates ", taint.key, "=", Quoted(t.value),
                            ", the taint's value is ", Quoted(taint.value),
                            "; use operator Exists for any value");
      }
    } else if (!t.key.empty()) {
      keys.emplace_back(t.key);
    }
  }
  std::string near = NearMiss(taint.key, keys);
  if (near.empty()) return "";
  return core::StrCat("the pod tolerates key ", near, ", not ", taint.key);
}

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
  return Misses(pod, node).empty();
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
