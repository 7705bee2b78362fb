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

// True when `path` is a mount point: a directory whose device differs from its parent's. False
// for a path that is not there, and for "/", whose parent is itself.
bool IsMountPoint(const std::string& path);

// What happens to the file a write replaces.
enum class Backup {
  kNone,       // the caller keeps its own record of the old contents, or there is nothing to keep
  kCopyToBak,  // copied to "<path>.bak" first, so an operator can always go back
};

// What a write must outlive.
enum class Durability {
  // A crash of the machine: the file is fsynced before the rename and the directory after it.
  kPowerLoss,
  // A crash of the writer, while the machine runs: no fsync, and the new file takes the old
  // one's name by an exchange of names (no write-out within the call; file_io.cc), as the page
  // cache outlives the process. After a power loss the file may be the old one, the new one or
  // torn, so only a caller that knows which boot wrote it may ask for this
  // (host/dra_checkpoint.h).
  kThisBoot,
};

// OK when nothing is at `path` or a regular file is (through symlinks); otherwise InvalidArgument
// naming what is there ("PATH: not a regular file (a character device), ..."): a write that
// renames a new file over it would replace it. For writers that rename files of their own.
absl::Status CheckReplaceable(const std::string& path);

// Writes `contents` to a temporary file in the same directory and renames it over `path`, so
// readers see either the old or the new file, never a torn one. The file gets `mode`,
// whatever the umask, also when it replaces one with another mode: a caller that must keep the
// old mode reads it first. A replaced file keeps its owner and group (an error when they cannot
// be kept, rather than a silent change). Errors name `path`, never the temporary file. A `path`
// that is there and is not a regular file (a device such as /dev/null, a pipe, a directory) is
// refused, InvalidArgument, and left as it is: a rename would replace it.
absl::Status WriteFileAtomic(const std::string& path, std::string_view contents, mode_t mode,
                             Backup backup, Durability durability = Durability::kPowerLoss);

}  // namespace gpunode::core
