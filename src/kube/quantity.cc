#include "kube/quantity.h"

#include <limits>

#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

using Int128 = __int128;

constexpr Int128 kMaxMilli = std::numeric_limits<int64_t>::max();

// 10^n for n in [0, 38]; larger powers do not fit and are handled by the caller.
Int128 Pow10(int n) {
  Int128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      StrCat("\"", text, "\" is not a Kubernetes quantity (", why,
             "); use a number with an optional suffix, such as \"1\", \"500m\" or \"2Ki\""));
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantityMilli(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return Invalid(text, "empty");
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  // Mantissa: digits, optionally with one decimal point. More than 30 significant digits cannot
  // describe a countable resource and would overflow the exact arithmetic below.
  Int128 mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (seen_point) return Invalid(text, "two decimal points");
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (mantissa != 0 || c != '0') ++digits;
    if (digits > 30) return Invalid(text, "too many digits");
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  bool any_digit = false;
  for (size_t j = 0; j < i; ++j) any_digit |= s[j] != '.';
  if (!any_digit) return Invalid(text, "no digits");
  std::string_view suffix = s.substr(i);

  int exponent10 = 0;    // power of ten the suffix multiplies by
  int binary_shift = 0;  // power of two (binary SI) the suffix multiplies by
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    size_t pos = kBinary.find(suffix[0]);
    if (pos == std::string_view::npos) return Invalid(text, "unknown suffix");
    binary_shift = 10 * static_cast<int>(pos + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view exp = suffix.substr(1);
    bool exp_negative = false;
    if (!exp.empty() && (exp.front() == '+' || exp.front() == '-')) {
      exp_negative = exp.front() == '-';
      exp.remove_prefix(1);
    }
    if (exp.empty() || exp.size() > 3) return Invalid(text, "bad exponent");
    for (char c : exp) {
      if (c < '0' || c > '9') return Invalid(text, "bad exponent");
      exponent10 = exponent10 * 10 + (c - '0');
    }
    if (exp_negative) exponent10 = -exponent10;
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n':
        exponent10 = -9;
        break;
      case 'u':
        exponent10 = -6;
        break;
      case 'm':
        exponent10 = -3;
        break;
      case 'k':
        exponent10 = 3;
        break;
      case 'M':
        exponent10 = 6;
        break;
      case 'G':
        exponent10 = 9;
        break;
      case 'T':
        exponent10 = 12;
        break;
      case 'P':
        exponent10 = 15;
        break;
      case 'E':
        exponent10 = 18;
        break;
      default:
        return Invalid(text, "unknown suffix");
    }
  } else {
    return Invalid(text, "unknown suffix");
  }

  if (mantissa == 0) return 0;
  // milli = mantissa * 2^binary_shift * 10^(exponent10 + 3 - fraction_digits), rounded up.
  int scale = exponent10 + 3 - fraction_digits;
  Int128 value = mantissa;
  if (binary_shift > 0) {
    // mantissa < 10^30 < 2^100, and anything above 2^63 is out of range anyway.
    for (int b = 0; b < binary_shift; ++b) {
      value <<= 1;
      if (value > kMaxMilli) return Invalid(text, "too large");
    }
  }
  if (scale >= 0) {
    for (int k = 0; k < scale; ++k) {
      value *= 10;
      if (value > kMaxMilli) return Invalid(text, "too large");
    }
  } else if (-scale > 38) {
    value = 1;  // a positive amount far below one milli-unit rounds up to one
  } else {
    Int128 divisor = Pow10(-scale);
    value = (value + divisor - 1) / divisor;
  }
  if (value > kMaxMilli) return Invalid(text, "too large");
  int64_t milli = static_cast<int64_t>(value);
  return negative ? -milli : milli;
}

std::string FormatMilli(int64_t milli) {
  if (IsWholeMilli(milli)) return StrCat(milli / 1000);
  return StrCat(milli, "m");
}

}  // namespace gpunode::kube
