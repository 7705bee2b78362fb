#include "messages.h"

#include <algorithm>
#include <vector>

#include "core/printable.h"

namespace gpunode::sim {

std::string quote(std::string_view text) {
  // Long enough to recognise a value, short enough that a pasted file does not flood the line.
  constexpr size_t kMaxShown = 48;
  std::string shown;
  for (char c : text.substr(0, kMaxShown)) {
    if (c == '"' || c == '\\') shown += '\\';
    shown += c;
  }
  return str_cat('"', core::Printable(shown), text.size() > kMaxShown ? "..." : "", '"');
}

std::string one_line(std::string_view text) { return core::Printable(text); }

std::string nearest_name(std::string_view name, std::span<const std::string_view> known) {
  auto distance = [](std::string_view a, std::string_view b) {
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
  };
  std::string nearest;
  size_t best = name.size() / 3 + 1;
  for (std::string_view candidate : known) {
    if (size_t d = distance(name, candidate); d < best) {
      best = d;
      nearest = std::string(candidate);
    }
  }
  return nearest;
}

}  // namespace gpunode::sim
