// How a failed command ends: one line on stderr and the exit code of command.h. Every command
// reports through here, so the same failure gives the same exit code in every command.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace gpunode::cli {

// Prints "gpunode: <message>" and returns the exit code the status stands for:
// kInvalidArgument is a usage or input error (kExitUsage); any other code means the command ran
// and the node, the driver or the cluster failed it (kExitFailures).
int ReportError(const absl::Status& status);

// The same message as a usage or input error, whatever the reason underneath: for a failure to
// get what the user named on the command line (a file given with -f, a node by name).
absl::Status AsInputError(const absl::Status& status);

// The same status with "; <hint>" after its message: what this command's own flags can do about
// a failure reported by a layer that knows no flags (no kubeconfig found).
absl::Status AppendHint(const absl::Status& status, std::string_view hint);

}  // namespace gpunode::cli
