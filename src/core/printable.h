// Input quoted in a message (a parser's description, a key, a value), made safe to print as part
// of one line on a terminal or in a log: control bytes (newlines included) and bytes that are not
// valid UTF-8 become `\xNN`; valid UTF-8 text stays as it is. Header-only, because the simulator,
// which links no gpunode library, quotes its inputs too.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace gpunode::core {

inline std::string Printable(std::string_view text) {
  auto continuation = [&](size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  // Length of the well-formed UTF-8 sequence at `i` (no overlong forms, no surrogates, at most
  // U+10FFFF), or 0.
  auto sequence = [&](size_t i) -> size_t {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    size_t length = lead >= 0xC2 && lead <= 0xDF   ? 2
                    : lead >= 0xE0 && lead <= 0xEF ? 3
                    : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                   : 0;
    for (size_t k = 1; k < length; ++k) {
      if (!continuation(i + k)) return 0;
    }
    unsigned char second = length > 0 ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((lead == 0xC2 && second <= 0x9F) ||  // U+0080..U+009F: C1 control characters
        (lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) ||
        (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second > 0x8F)) {
      return 0;
    }
    return length;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (size_t length = c >= 0x80 ? sequence(i) : 0; length > 0) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
    out += escaped;
    ++i;
  }
  return out;
}

}  // namespace gpunode::core
