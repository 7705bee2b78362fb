#include "cli/report_error.h"

#include <iostream>

#include "cli/command.h"

namespace gpunode::cli {

int ReportError(const absl::Status& status) {
  std::cerr << "gpunode: " << status.message() << "\n";
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailures;
}

int Report(const absl::Status& status) { return status.ok() ? kExitOk : ReportError(status); }

}  // namespace gpunode::cli
