// The word a person probably meant: for "did you mean" hints on a command name, a label key or
// value, a toleration key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpunode::core {

// Levenshtein distance: insertions, deletions and substitutions of bytes.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word` by edit distance, or "" when none is near enough to be a typo
// (more than half of the word's length plus one edits away); a candidate `word` begins wins a tie.
std::string NearestName(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpunode::core
