#include "text_values.h"

#include <charconv>
#include <limits>

namespace gpunode::sim {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool checked_mul_add(uint64_t& value, uint64_t factor, uint64_t addend) {
  if (value > (std::numeric_limits<uint64_t>::max() - addend) / factor) return false;
  value = value * factor + addend;
  return true;
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<uint64_t> parse_uint(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty() || text.front() == '+' || text.front() == '-') return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_fixed(std::string_view text, int decimals) {
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return std::nullopt;
  if (dot != std::string_view::npos && fraction.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : whole) {
    if (c < '0' || c > '9' || !checked_mul_add(value, 10, static_cast<uint64_t>(c - '0'))) {
      return std::nullopt;
    }
  }
  bool round_up = false;
  for (int i = 0; i < static_cast<int>(fraction.size()); ++i) {
    char c = fraction[i];
    if (c < '0' || c > '9') return std::nullopt;
    if (i < decimals) {
      if (!checked_mul_add(value, 10, static_cast<uint64_t>(c - '0'))) return std::nullopt;
    } else if (i == decimals) {
      round_up = c >= '5';
    }
  }
  for (int i = static_cast<int>(fraction.size()); i < decimals; ++i) {
    if (!checked_mul_add(value, 10, 0)) return std::nullopt;
  }
  if (round_up && !checked_mul_add(value, 1, 1)) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_with_unit(std::string_view text, std::string_view unit,
                                        int decimals) {
  text = trim(text);
  if (text.size() < unit.size() || text.substr(text.size() - unit.size()) != unit) {
    return std::nullopt;
  }
  return parse_fixed(trim(text.substr(0, text.size() - unit.size())), decimals);
}

}  // namespace gpunode::sim
