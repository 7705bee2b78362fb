// A file descriptor owned by one object: closed when it goes, moved and never copied, so that no
// path through a function (an early return, an error) leaks a descriptor or closes one twice.
#pragma once

#include <unistd.h>

#include <utility>

namespace gpunode::core {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes the descriptor held (if any) and holds `fd` instead.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A pipe whose two ends close themselves; both are close-on-exec, so only the child a spawn
// hands an end to (by dup2) keeps it.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

}  // namespace gpunode::core
