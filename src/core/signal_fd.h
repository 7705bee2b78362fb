// Signals (SIGHUP, SIGTERM, SIGINT and SIGQUIT unless told others) delivered through a file
// descriptor, so a daemon's one control loop handles them with its other events instead of in a
// signal handler.
#pragma once

#include <csignal>
#include <initializer_list>
#include <optional>

#include "absl/status/statusor.h"

namespace gpunode::core {

class SignalFd {
 public:
  // Blocks the signals in the calling thread (and every thread it starts later). Call it before
  // any other thread exists.
  static absl::StatusOr<SignalFd> Open(std::initializer_list<int> signals = {SIGHUP, SIGTERM,
                                                                             SIGINT, SIGQUIT});
  SignalFd(SignalFd&& other) noexcept;
  SignalFd& operator=(SignalFd&&) = delete;
  ~SignalFd();

  int fd() const { return fd_; }
  // The next pending signal, if any (the fd is non-blocking).
  std::optional<int> Read();

 private:
  explicit SignalFd(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpunode::core
