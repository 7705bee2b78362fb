// Whole-file reads and crash-safe writes for the files gpunode reads and writes on a node.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpunode::core {

// Reads a whole file. Errors name the path and the OS reason.
absl::StatusOr<std::string> ReadFile(const std::string& path);

struct AtomicWriteOptions {
  mode_t mode = 0644;
  // Copy an existing file to "<path>.bak" before replacing it, so an operator can always go back.
  bool backup_existing = true;
};

// Writes `contents` to a temporary file in the same directory, fsyncs it and renames it over
// `path`, so readers see either the old or the new file, never a torn one. A replaced file keeps
// its owner and group (an error when they cannot be kept, rather than a silent change).
absl::Status WriteFileAtomic(const std::string& path, std::string_view contents,
                             const AtomicWriteOptions& options = {});

}  // namespace gpunode::core
