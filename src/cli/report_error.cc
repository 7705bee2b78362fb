#include "cli/report_error.h"

#include <iostream>

#include "cli/command.h"
#include "core/text.h"

namespace gpunode::cli {

int ReportError(const absl::Status& status) {
  std::cerr << "gpunode: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailures;
}

absl::Status AppendHint(const absl::Status& status, std::string_view hint) {
  if (status.ok()) return status;
  return absl::Status(status.code(), core::StrCat(core::View(status.message()), "; ", hint));
}

absl::Status AsInputError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(status.message());
}

}  // namespace gpunode::cli
