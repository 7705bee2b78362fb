#include "core/system_env.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/signal_fd.h"
#include "core/status_macros.h"

namespace gpunode::core {

SystemEnv::SystemEnv(std::string host_root)
    : host_(std::move(host_root)), quit_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SystemEnv::~SystemEnv() {
  if (!signal_thread_.joinable()) return;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t written = write(quit_.get(), &one, sizeof one);
  signal_thread_.join();
}

absl::Time SystemEnv::Now() { return absl::Now(); }

bool SystemEnv::SleepUntil(absl::Time deadline) {
  std::unique_lock lock(mu_);
  auto stopped = [this] { return stopped_; };
  if (deadline == absl::InfiniteFuture()) {
    changed_.wait(lock, stopped);
    return false;
  }
  return !changed_.wait_until(lock, absl::ToChronoTime(deadline), stopped);
}

void SystemEnv::Pause(absl::Duration wait) { absl::SleepFor(wait); }

absl::StatusOr<SpawnResult> SystemEnv::Spawn(const SpawnOptions& options) {
  return core::Spawn(options);
}

absl::Status SystemEnv::StopOnSignals(std::initializer_list<int> signals) {
  if (signal_thread_.joinable()) {
    return absl::FailedPreconditionError("stop signals are already taken");
  }
  ASSIGN_OR_RETURN(SignalFd signal_fd, SignalFd::Open(signals));
  signal_thread_ = std::thread([this, signal_fd = std::move(signal_fd)]() mutable {
    pollfd fds[2] = {{signal_fd.fd(), POLLIN, 0}, {quit_.get(), POLLIN, 0}};
    while (true) {
      if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0) return;
      while (std::optional<int> signal = signal_fd.Read()) RequestStop(*signal);
    }
  });
  return absl::OkStatus();
}

}  // namespace gpunode::core
