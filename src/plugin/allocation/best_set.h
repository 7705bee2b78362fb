// The best set of whole GPUs for a container: the `size` GPUs, including the required ones, with
// the highest total pairwise link score, searched exactly within a budget of work.
#pragma once

#include <cstddef>
#include <vector>

#include "plugin/allocation/link_score.h"

namespace gpunode::plugin {

// Sum of scores over every pair of `set`.
long SetScore(const ScoreMatrix& scores, const std::vector<size_t>& set);

// How much search BestSet may do: nodes of the search tree it visits. A request reaches the search
// on the device plugin's one gRPC thread, so its cost must be bounded whatever the input: C(32,16)
// subsets would hold every connection for minutes. The default is a few tens of milliseconds,
// far more than any real node's topology needs for the exact answer (16 GPUs: a few thousand).
inline constexpr long kDefaultSearchBudget = 100'000;

struct BestSetResult {
  std::vector<size_t> set;  // positions into `scores`, sorted
  bool exact = true;        // false: the budget ran out and `set` is the best found by then
};

// The `size` GPUs with the highest total pairwise score that include `required`. `required` must be
// a subset of `available`, and |required| <= size <= |available|. Depth-first search over the
// candidates in index order with a branch-and-bound cut, so within the budget the answer is the
// true optimum; among equal scores the lexicographically smallest set wins, which makes ties
// deterministic. The first set the search reaches is complete after `size` steps, so a search cut
// short still returns a full set: the best of those it had seen.
BestSetResult BestSetWithin(const ScoreMatrix& scores, const std::vector<size_t>& available,
                            const std::vector<size_t>& required, size_t size,
                            long budget = kDefaultSearchBudget);

// BestSetWithin's set, with the default budget.
std::vector<size_t> BestSet(const ScoreMatrix& scores, const std::vector<size_t>& available,
                            const std::vector<size_t>& required, size_t size);

}  // namespace gpunode::plugin
