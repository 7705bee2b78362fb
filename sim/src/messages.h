// Building the one-line messages the simulator reports for bad input.
#pragma once

#include <span>
#include <sstream>
#include <string>
#include <string_view>

namespace gpunode::sim {

// Concatenates anything an ostream can print; the loaders build many small messages.
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// `text` in double quotes, shortened, with control characters and bytes that are not UTF-8
// escaped (core/printable.h), so that user input quoted in a message can never break it across
// lines or garble a terminal.
std::string quote(std::string_view text);

// Escapes line breaks, other control characters and bytes that are not UTF-8 as \xNN: every error
// is one printable line.
std::string one_line(std::string_view text);

// The name in `known` a typo of `name` most likely meant (fewest single-character edits, at most
// about a third of the name), or "" when none is that near.
std::string nearest_name(std::string_view name, std::span<const std::string_view> known);

// "a, b, c" from any range of string-like values.
template <typename Range>
std::string join(const Range& items, std::string_view separator = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace gpunode::sim
