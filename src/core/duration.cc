#include "core/duration.h"

#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gpunode::core {

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view source, absl::string_view text,
                                             DurationRange range) {
  absl::Duration d;
  int64_t seconds = 0;
  bool parsed = false;
  if (absl::SimpleAtoi(text, &seconds)) {
    d = absl::Seconds(seconds);
    parsed = true;
  } else {
    parsed = absl::ParseDuration(std::string(text), &d);
  }
  if (!parsed || d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " \"", std::string(text),
        "\": not a duration; give e.g. 500ms, 30s, 5m or 1h30m (a bare number is seconds)"));
  }
  if (d < range.min || d > range.max) {
    std::string wanted =
        range.max == absl::InfiniteDuration()
            ? absl::StrCat("a duration of ", absl::FormatDuration(range.min), " or more")
            : absl::StrCat("a duration from ", absl::FormatDuration(range.min), " to ",
                           absl::FormatDuration(range.max));
    return absl::InvalidArgumentError(
        absl::StrCat(source, " ", std::string(text), ": out of range; give ", wanted));
  }
  return d;
}

}  // namespace gpunode::core
