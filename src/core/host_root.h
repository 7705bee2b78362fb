// Every read of the host's /proc, /sys, /dev, /etc, /run and /var/lib/kubelet goes through a
// HostRoot, LevelDB-Env style: production uses "/", tests point it at a fixture tree.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpunode::core {

// A filesystem's size as statvfs(2) gives it, in the terms the kubelet's image GC uses
// (cadvisor: capacity = blocks, available = blocks available to unprivileged users).
struct FilesystemSpace {
  uint64_t capacity_bytes = 0;
  uint64_t available_bytes = 0;
};

class HostRoot {
 public:
  explicit HostRoot(std::string root = "/");

  const std::string& root() const { return root_; }

  // The real path of an absolute host path under this root.
  std::string Resolve(const std::string& host_path) const;

  absl::StatusOr<std::string> ReadFile(const std::string& host_path) const;
  // Up to `length` bytes from `offset` (fewer at the end of the file): a look at a large file's
  // headers without reading it all.
  absl::StatusOr<std::string> ReadFileAt(const std::string& host_path, uint64_t offset,
                                         size_t length) const;
  // The file's contents with surrounding whitespace removed (sysfs attributes end in "\n").
  absl::StatusOr<std::string> ReadAttribute(const std::string& host_path) const;
  bool Exists(const std::string& host_path) const;
  // Entry names, sorted, without "." and "..".
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& host_path) const;
  absl::StatusOr<std::string> ReadLink(const std::string& host_path) const;
  // lstat(2): links are not followed.
  absl::StatusOr<struct stat> Stat(const std::string& host_path) const;
  // statvfs(2) of the filesystem that holds the path.
  absl::StatusOr<FilesystemSpace> Space(const std::string& host_path) const;

 private:
  std::string root_;
};

}  // namespace gpunode::core
