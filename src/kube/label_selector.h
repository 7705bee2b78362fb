// metav1.LabelSelector (matchLabels and matchExpressions) and its matching rules.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
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

// A selector as kubectl's -l takes it, for matching what a snapshot holds where the API server
// would have applied it: key=value (or ==), key!=value, key, !key, key in (a,b), key notin (a,b),
// comma-separated. The result points into `text`, which must outlive it. An empty text selects
// everything. An error quotes the term and says what is accepted.
absl::StatusOr<LabelSelector> ParseLabelSelector(std::string_view text);

}  // namespace gpunode::kube
