#include "core/env.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace gpunode::core {

Env::Env() : stop_event_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void Env::RequestStop(int signal) {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_signal_ = signal;
    const uint64_t one = 1;
    // The counter only ever goes from 0 to 1, so the write cannot block or fail but for a bad fd.
    [[maybe_unused]] ssize_t written = write(stop_event_.get(), &one, sizeof one);
  }
  changed_.notify_all();
}

bool Env::StopRequested() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

int Env::stop_signal() const {
  std::lock_guard lock(mu_);
  return stop_signal_;
}

}  // namespace gpunode::core
