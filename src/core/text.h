// String building that accepts std::string_view. Debian's abseil has its own absl::string_view,
// so absl::StrCat rejects the std::string_views that simdjson and the API client hand around.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace gpunode::core {
namespace text_internal {

inline void Append(std::string& out, std::string_view s) { out.append(s); }
inline void Append(std::string& out, const char* s) { out.append(s); }
inline void Append(std::string& out, const std::string& s) { out.append(s); }
inline void Append(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void Append(std::string& out, T v) {
  out += std::to_string(v);
}

}  // namespace text_internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (text_internal::Append(out, args), ...);
  return out;
}

template <typename... Args>
void StrAppend(std::string* out, const Args&... args) {
  (text_internal::Append(*out, args), ...);
}

inline std::string_view TrimSpace(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// absl::Status messages are absl::string_view here.
inline std::string_view View(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace gpunode::core
