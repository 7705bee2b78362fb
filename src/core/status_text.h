// Rewordings of a Status that a layer below the command can make: a hint appended to its message,
// or the same message as an input error (kInvalidArgument, which a command reports as a usage or
// input error).
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "core/text.h"

namespace gpunode::core {

// The same status with "; <hint>" after its message: what the caller's own settings can do about
// a failure reported by a layer that knows no settings (no kubeconfig found).
inline absl::Status AppendHint(const absl::Status& status, std::string_view hint) {
  if (status.ok()) return status;
  return absl::Status(status.code(), StrCat(View(status.message()), "; ", hint));
}

// The same message as an input error, whatever the reason underneath: for a failure to get what
// the user named (a file given with -f, a node by name).
inline absl::Status AsInputError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(status.message());
}

}  // namespace gpunode::core
