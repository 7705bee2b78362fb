// A file descriptor owned by one object: closed when it goes, moved and never copied, so that no
// path out of a function leaks it. The simulator links nothing of gpunode's (docs/STYLE.md), so it
// has this instead of core::UniqueFd.
#pragma once

#include <unistd.h>

#include <utility>

namespace gpunode::sim {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes it now; false when close(2) failed, which for a file written is a write that failed.
  bool close() {
    if (fd_ < 0) return true;
    return ::close(std::exchange(fd_, -1)) == 0;
  }

 private:
  int fd_;
};

}  // namespace gpunode::sim
