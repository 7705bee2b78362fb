#include "kube/label_selector.h"

#include <algorithm>

namespace gpunode::kube {

bool Matches(const LabelSelector& selector, const Labels& labels) {
  if (!selector.present) return false;
  for (const auto& [key, value] : selector.match_labels) {
    auto v = FindLabel(labels, key);
    if (!v || *v != value) return false;
  }
  for (const LabelRequirement& req : selector.match_expressions) {
    auto v = FindLabel(labels, req.key);
    bool in_values = v && std::find(req.values.begin(), req.values.end(), *v) != req.values.end();
    if (req.op == "In" && !in_values) return false;
    if (req.op == "NotIn" && in_values) return false;
    if (req.op == "Exists" && !v) return false;
    if (req.op == "DoesNotExist" && v) return false;
    if (req.op != "In" && req.op != "NotIn" && req.op != "Exists" && req.op != "DoesNotExist") {
      return false;  // the API server rejects other operators; never match what we cannot read
    }
  }
  return true;
}

}  // namespace gpunode::kube
