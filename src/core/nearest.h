// The word a person probably meant: for "did you mean" hints on a command name, a label key or
// value, a toleration key, a simulator profile's field. Header-only, because the simulator, which
// links no gpunode library, suggests names too.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace gpunode::core {

// Levenshtein distance: insertions, deletions and substitutions of bytes.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `word` by edit distance, or "" when none is near enough to be a typo
// (more than half of the word's length plus one edits away); a candidate `word` begins wins a tie.
inline std::string NearestName(std::string_view word, const std::vector<std::string>& candidates) {
  std::string nearest;
  size_t best = word.size() / 2 + 1;  // more edits than that is another word, not a typo
  for (const std::string& candidate : candidates) {
    size_t distance = EditDistance(word, candidate);
    if (distance < best || (distance <= best && candidate.rfind(word, 0) == 0)) {
      best = distance;
      nearest = candidate;
    }
  }
  return nearest;
}

}  // namespace gpunode::core
