#include "messages.h"

#include <algorithm>
#include <vector>

#include "core/nearest.h"
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
  std::string nearest;
  size_t best = name.size() / 3 + 1;
  for (std::string_view candidate : known) {
    if (size_t d = core::EditDistance(name, candidate); d < best) {
      best = d;
      nearest = std::string(candidate);
    }
  }
  return nearest;
}

}  // namespace gpunode::sim
