#include "core/host_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/file_io.h"
#include "core/unique_fd.h"

namespace gpunode::core {
namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  int err = errno;
  std::string message = absl::StrCat(path, ": ", std::string(what), ": ", std::strerror(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

}  // namespace

HostRoot::HostRoot(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string HostRoot::Resolve(const std::string& host_path) const {
  if (root_ == "/") return std::string(host_path);
  std::string path = root_;
  if (host_path.empty() || host_path.front() != '/') path += '/';
  path.append(host_path);
  return path;
}

absl::StatusOr<std::string> HostRoot::ReadFile(const std::string& host_path) const {
  return core::ReadFile(Resolve(host_path));
}

absl::StatusOr<std::string> HostRoot::ReadFileAt(const std::string& host_path, uint64_t offset,
                                                 size_t length) const {
  std::string path = Resolve(host_path);
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno("cannot open", path);
  // A length read from the file itself (a header's size field) is no promise: a regular file is
  // read no further than its end, so a lying header cannot make a large allocation.
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    uint64_t size = static_cast<uint64_t>(st.st_size);
    length = offset >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(length, size - offset));
  }
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    ssize_t n =
        ::pread(fd.get(), out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

absl::StatusOr<std::string> HostRoot::ReadAttribute(const std::string& host_path) const {
  absl::StatusOr<std::string> contents = ReadFile(host_path);
  if (!contents.ok()) return contents.status();
  return std::string(absl::StripAsciiWhitespace(*contents));
}

bool HostRoot::Exists(const std::string& host_path) const {
  struct stat st;
  return ::lstat(Resolve(host_path).c_str(), &st) == 0;
}

absl::StatusOr<std::vector<std::string>> HostRoot::ListDir(const std::string& host_path) const {
  std::string path = Resolve(host_path);
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return Errno("cannot list", path);
  std::vector<std::string> names;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::string> HostRoot::ReadLink(const std::string& host_path) const {
  std::string path = Resolve(host_path);
  char buffer[4096];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  if (n < 0) return Errno("cannot read link", path);
  return std::string(buffer, static_cast<size_t>(n));
}

absl::StatusOr<struct stat> HostRoot::Stat(const std::string& host_path) const {
  std::string path = Resolve(host_path);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return Errno("cannot stat", path);
  return st;
}

absl::StatusOr<FilesystemSpace> HostRoot::Space(const std::string& host_path) const {
  std::string path = Resolve(host_path);
  struct statvfs fs;
  if (::statvfs(path.c_str(), &fs) != 0) return Errno("cannot statvfs", path);
  return FilesystemSpace{.capacity_bytes = uint64_t{fs.f_blocks} * fs.f_frsize,
                         .available_bytes = uint64_t{fs.f_bavail} * fs.f_frsize};
}

}  // namespace gpunode::core
