#include "cli/report_error.h"

#include <iostream>

#include "cli/command.h"

namespace gpunode::cli {

int ReportError(const absl::Status& status) {
  std::cerr << "gpunode: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailures;
}

absl::Status AsInputError(const absl::Status& status) {
  if (status.ok() || status.code() == absl::StatusCode::kInvalidArgument) return status;
  return absl::InvalidArgumentError(status.message());
}

}  // namespace gpunode::cli
