// How a failed command ends: one line on stderr and the exit code of command.h. Every command
// reports through here, so the same failure gives the same exit code in every command.
#pragma once

#include "absl/status/status.h"
#include "core/status_text.h"

namespace gpunode::cli {

// Prints "gpunode: <message>" and returns the exit code the status stands for:
// kInvalidArgument is a usage or input error (kExitUsage); any other code means the command ran
// and the node, the driver or the cluster failed it (kExitFailures).
int ReportError(const absl::Status& status);

// kExitOk for OK, else ReportError's exit code: for a role whose Run returns a Status.
int Report(const absl::Status& status);

// Every command words its errors with these as well.
using core::AppendHint;
using core::AsInputError;

}  // namespace gpunode::cli
