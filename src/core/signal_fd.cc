#include "core/signal_fd.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gpunode::core {

absl::StatusOr<SignalFd> SignalFd::Open(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : signals) sigaddset(&set, signal);
  if (int err = pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0)
    return absl::InternalError(absl::StrCat("pthread_sigmask: ", std::strerror(err)));
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("signalfd: ", std::strerror(errno)));
  return SignalFd(fd);
}

SignalFd::SignalFd(SignalFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

SignalFd::~SignalFd() {
  if (fd_ >= 0) close(fd_);
}

std::optional<int> SignalFd::Read() {
  struct signalfd_siginfo info {};
  if (read(fd_, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

}  // namespace gpunode::core
