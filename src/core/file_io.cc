#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace gpunode::core {
namespace {

// The code says whose the fix is: a path that is not there or not a directory where one is
// needed (NotFound), or one that may not be written (PermissionDenied) is the caller's to fix;
// anything else (a full disk, an I/O error) is Internal.
absl::StatusCode CodeOf(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case EISDIR:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status OsError(std::string_view what, const std::string& path, int err) {
  return absl::Status(CodeOf(err),
                      absl::StrCat(path, ": ", std::string(what), ": ", std::strerror(err),
                                   err == EACCES || err == EPERM ? "; run as root?" : ""));
}

absl::Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return OsError("cannot write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// How an error names what is at a path instead of a file.
const char* FileKind(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::fifo:
      return "a pipe";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a file";
  }
}

// Puts the file at `tmp` in place of the one at `path` for a write that need not outlive the
// boot; false when the filesystem cannot, and the caller renames. A rename over a file makes
// ext4 start writing the new one out within the call (its auto_da_alloc, for writers that never
// fsync) and free the old one's blocks there too, a discard on a filesystem mounted with
// `discard` (the DRA bench's Unprepare, one such write: 0.46 ms at the median before, 0.24
// after; docs/PERFORMANCE.md). Exchanging the two names (RENAME_EXCHANGE) is
// as atomic for readers and does neither; the old file, now at `tmp`, is then unlinked, which
// costs nothing while it was never written out (a file the next write replaces within
// seconds). A crash between the two leaves that old file at the temporary name, as a crash
// before the rename leaves the new one.
bool ExchangeAndDropOld(const std::string& tmp, const std::string& path) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
    return false;
  }
  ::unlink(tmp.c_str());
  return true;
}

}  // namespace

bool IsMountPoint(const std::string& path) {
  struct stat here {
  }, parent{};
  return stat(path.c_str(), &here) == 0 && S_ISDIR(here.st_mode) &&
         stat((path + "/..").c_str(), &parent) == 0 && here.st_dev != parent.st_dev;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OsError("cannot open", path, errno);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return OsError("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status CheckReplaceable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A rename over a device, a pipe or a socket would replace it with a file: `--output
  // /dev/null` would take /dev/null from every program on the machine.
  if (fs::file_status target = fs::status(path, ec);
      fs::exists(target) && !fs::is_regular_file(target)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file (", FileKind(target.type()),
                     "), and writing it would replace it; give the path of a file"));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path, std::string_view contents, mode_t mode,
                             Backup backup, Durability durability) {
  namespace fs = std::filesystem;
  std::error_code ec;
  RETURN_IF_ERROR(CheckReplaceable(path));
  if (backup == Backup::kCopyToBak && fs::exists(path, ec)) {
    fs::copy_file(path, path + ".bak", fs::copy_options::overwrite_existing, ec);
    if (ec)
      return absl::InternalError(
          absl::StrCat(path, ": cannot back up to ", path, ".bak: ", ec.message()));
  }
  struct stat existing {};
  const bool replacing = ::stat(path.c_str(), &existing) == 0;
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return OsError("cannot write", path, errno);
  absl::Status st = WriteAll(fd, contents, path);
  // The new file is the caller's; the one it replaces may belong to someone else (a config owned
  // by a service account, a group-readable file).
  struct stat created {};
  if (st.ok() && replacing && ::fstat(fd, &created) == 0 &&
      (created.st_uid != existing.st_uid || created.st_gid != existing.st_gid) &&
      ::fchown(fd, existing.st_uid, existing.st_gid) != 0) {
    st = absl::PermissionDeniedError(absl::StrCat(path, ": cannot keep its owner ", existing.st_uid,
                                                  ":", existing.st_gid, ": ", std::strerror(errno),
                                                  "; run as root or as the file's owner"));
  }
  // The umask must not decide the mode of a file an operator asked for explicitly.
  if (st.ok() && ::fchmod(fd, mode) != 0) st = OsError("cannot set the mode of", path, errno);
  if (st.ok() && durability == Durability::kPowerLoss && ::fsync(fd) != 0)
    st = OsError("cannot write", path, errno);
  ::close(fd);
  if (st.ok() && durability == Durability::kThisBoot && replacing &&
      ExchangeAndDropOld(tmp, path)) {
    return absl::OkStatus();
  }
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = OsError("cannot rename into place", path, errno);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (durability == Durability::kThisBoot) return absl::OkStatus();
  // Persist the rename itself.
  std::string dir = fs::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

}  // namespace gpunode::core
