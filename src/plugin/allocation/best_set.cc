#include "plugin/allocation/best_set.h"

#include <algorithm>
#include <functional>

namespace gpunode::plugin {
namespace {

// Depth-first search state. gains_[d][i] is what candidate i would add to the set chosen at
// depth d: its scores to the required GPUs and to every candidate chosen so far.
class Search {
 public:
  Search(const ScoreMatrix& scores, std::vector<size_t> candidates, long base_score,
         std::vector<long> base_gains, size_t picks, long budget)
      : scores_(scores),
        candidates_(std::move(candidates)),
        picks_(picks),
        gains_(picks + 1, std::vector<long>(candidates_.size())),
        chosen_(picks),
        best_score_(-1),
        base_score_(base_score),
        budget_(std::max(budget, static_cast<long>(picks) + 1)) {
    gains_[0] = std::move(base_gains);
    size_t n = candidates_.size();
    // suffix_max_pair_[i]: the best score between two candidates at positions >= i; bounds what
    // the picks still to come can add among themselves.
    suffix_max_pair_.assign(n + 1, 0);
    for (size_t i = n; i-- > 0;) {
      long best = suffix_max_pair_[i + 1];
      for (size_t j = i + 1; j < n; ++j)
        best = std::max<long>(best, scores_[candidates_[i]][candidates_[j]]);
      suffix_max_pair_[i] = best;
    }
  }

  std::vector<size_t> Run() {
    Visit(0, 0, base_score_);
    return best_;
  }
  bool cut_short() const { return cut_short_; }

 private:
  void Visit(size_t start, size_t depth, long score) {
    if (budget_ == 0) {
      cut_short_ = true;
      return;
    }
    --budget_;
    if (depth == picks_) {
      if (score > best_score_) {
        best_score_ = score;
        best_.assign(chosen_.begin(), chosen_.end());
      }
      return;
    }
    size_t remaining = picks_ - depth;
    size_t n = candidates_.size();
    const std::vector<long>& gains = gains_[depth];
    for (size_t i = start; i + remaining <= n; ++i) {
      if (budget_ == 0) {
        cut_short_ = true;
        return;
      }
      if (best_score_ >= 0 && Bound(i, remaining, score, gains) <= best_score_) {
        // Later starting points see a subset of these candidates; none can do better either.
        return;
      }
      chosen_[depth] = candidates_[i];
      if (depth + 1 < picks_) {
        std::vector<long>& next = gains_[depth + 1];
        for (size_t j = i + 1; j < n; ++j)
          next[j] = gains[j] + scores_[candidates_[i]][candidates_[j]];
      }
      Visit(i + 1, depth + 1, score + gains[i]);
    }
  }

  // An upper bound on the best total reachable by picking `remaining` of candidates[from..]:
  // the largest gains each could bring alone, plus the best pair score for every new pair.
  long Bound(size_t from, size_t remaining, long score, const std::vector<long>& gains) {
    top_.assign(gains.begin() + from, gains.end());
    std::partial_sort(top_.begin(), top_.begin() + remaining, top_.end(), std::greater<long>());
    long bound = score;
    for (size_t k = 0; k < remaining; ++k) bound += top_[k];
    bound += static_cast<long>(remaining * (remaining - 1) / 2) * suffix_max_pair_[from];
    return bound;
  }

  const ScoreMatrix& scores_;
  std::vector<size_t> candidates_;
  size_t picks_;
  std::vector<std::vector<long>> gains_;
  std::vector<size_t> chosen_;
  std::vector<long> suffix_max_pair_;
  std::vector<long> top_;
  std::vector<size_t> best_;
  long best_score_;
  long base_score_;
  long budget_;  // visits left; never below picks + 1, so that the first full set is reached
  bool cut_short_ = false;
};

}  // namespace

long SetScore(const ScoreMatrix& scores, const std::vector<size_t>& set) {
  long total = 0;
  for (size_t a = 0; a < set.size(); ++a)
    for (size_t b = a + 1; b < set.size(); ++b) total += scores[set[a]][set[b]];
  return total;
}

BestSetResult BestSetWithin(const ScoreMatrix& scores, const std::vector<size_t>& available,
                            const std::vector<size_t>& required, size_t size, long budget) {
  std::vector<size_t> sorted_required = required;
  std::sort(sorted_required.begin(), sorted_required.end());
  std::vector<size_t> candidates;
  for (size_t gpu : available) {
    if (!std::binary_search(sorted_required.begin(), sorted_required.end(), gpu))
      candidates.push_back(gpu);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  size_t picks = size > sorted_required.size() ? size - sorted_required.size() : 0;
  picks = std::min(picks, candidates.size());

  std::vector<long> gains(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i)
    for (size_t r : sorted_required) gains[i] += scores[candidates[i]][r];

  BestSetResult result;
  result.set = sorted_required;
  if (picks > 0) {
    Search search(scores, candidates, SetScore(scores, sorted_required), gains, picks, budget);
    std::vector<size_t> chosen = search.Run();
    result.exact = !search.cut_short();
    result.set.insert(result.set.end(), chosen.begin(), chosen.end());
  }
  std::sort(result.set.begin(), result.set.end());
  return result;
}

std::vector<size_t> BestSet(const ScoreMatrix& scores, const std::vector<size_t>& available,
                            const std::vector<size_t>& required, size_t size) {
  return BestSetWithin(scores, available, required, size).set;
}

}  // namespace gpunode::plugin
