#include "messages.h"

#include <cstdio>

namespace gpunode::sim {

std::string quote(std::string_view text) {
  // Long enough to recognise a value, short enough that a pasted file does not flood the line.
  constexpr size_t kMaxShown = 48;
  std::string out = "\"";
  size_t shown = 0;
  for (char c : text) {
    if (shown == kMaxShown) {
      out += "...";
      break;
    }
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
      out += escaped;
    } else {
      out += c;
    }
    ++shown;
  }
  out += '"';
  return out;
}

std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace gpunode::sim
