// metav1.LabelSelector (matchLabels and matchExpressions) and its matching rules.
#pragma once

#include <string_view>
#include <vector>

#include "kube/node_view.h"

namespace gpunode::kube {

struct LabelRequirement {
  std::string_view key;
  std::string_view op;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string_view> values;
};

struct LabelSelector {
  bool present = false;  // a nil selector matches nothing; an empty one matches everything
  Labels match_labels;
  std::vector<LabelRequirement> match_expressions;
};

bool Matches(const LabelSelector& selector, const Labels& labels);

}  // namespace gpunode::kube
