// The one reader of duration flags and environment variables, so that every command accepts the
// same text: Go's duration syntax as kubectl and NVIDIA's tools take it ("500ms", "30s", "5m",
// "1h30m") or a bare number of seconds ("60"). Negative durations are refused.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gpunode::core {

struct DurationRange {
  absl::Duration min = absl::ZeroDuration();
  absl::Duration max = absl::InfiniteDuration();
};

// `text` as given to `source` (a flag "--interval" or a variable "GFD_SLEEP_INTERVAL"). An error
// is one line naming the source, the text, and what to give instead, with the range in the
// flag's own units: `--interval 5ms: out of range; give a duration from 100ms to 1h`.
absl::StatusOr<absl::Duration> ParseDuration(absl::string_view source, absl::string_view text,
                                             DurationRange range = {});

}  // namespace gpunode::core
