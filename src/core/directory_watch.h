// inotify on a directory (the kubelet's device-plugins directory, a config's): which entries
// appeared and which went away — a file written in place gives an event with neither flag — and
// when the watch itself can no longer be trusted (the directory went, the queue overflowed).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::core {

struct DirectoryEvent {
  std::string name;  // file name in the directory; empty for events about the directory itself
  bool created = false;
  bool deleted = false;
  bool directory_gone = false;  // the directory was removed or moved: watch it again
  // The kernel's queue overflowed (IN_Q_OVERFLOW): events were lost; look at the directory again.
  bool overflow = false;
};

class DirectoryWatch {
 public:
  static absl::StatusOr<DirectoryWatch> Open(const std::string& directory);
  DirectoryWatch(DirectoryWatch&& other) noexcept;
  DirectoryWatch& operator=(DirectoryWatch&& other) noexcept;
  ~DirectoryWatch();

  int fd() const { return fd_; }
  // Reads the events that are ready (the fd is non-blocking).
  std::vector<DirectoryEvent> Read();

 private:
  explicit DirectoryWatch(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpunode::core
