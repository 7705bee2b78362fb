#include "messages.h"

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

}  // namespace gpunode::sim
