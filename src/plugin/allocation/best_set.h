// The exact best set of whole GPUs for a container: the `size` GPUs, including the required ones,
// with the highest total pairwise link score.
#pragma once

#include <cstddef>
#include <vector>

#include "plugin/allocation/link_score.h"

namespace gpunode::plugin {

// Sum of scores over every pair of `set`.
long SetScore(const ScoreMatrix& scores, const std::vector<size_t>& set);

// Positions (into `scores`) of the best set, sorted. `required` must be a subset of `available`,
// and |required| <= size <= |available|. Exhaustive depth-first search over the candidates in
// index order with a branch-and-bound cut, so the answer is the true optimum; among equal scores
// the lexicographically smallest set wins, which makes ties deterministic. Candidate counts above
// kExactCandidateLimit (more GPUs than any node has today) stop after a fixed amount of work
// and return the best set found by then.
std::vector<size_t> BestSet(const ScoreMatrix& scores, const std::vector<size_t>& available,
                            const std::vector<size_t>& required, size_t size);

inline constexpr size_t kExactCandidateLimit = 32;

}  // namespace gpunode::plugin
