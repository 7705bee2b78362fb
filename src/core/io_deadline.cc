#include "core/io_deadline.h"

#include <algorithm>
#include <cmath>

#include "absl/time/clock.h"

namespace gpunode::core {

IoDeadline IoDeadline::After(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return Never();
  return IoDeadline(absl::Now() + timeout);
}

bool IoDeadline::Passed() const { return absl::Now() >= at_; }

absl::Duration IoDeadline::Left() const {
  return std::max(at_ - absl::Now(), absl::ZeroDuration());
}

int IoDeadline::PollTimeoutMs() const {
  if (at_ == absl::InfiniteFuture()) return -1;
  double ms = std::ceil(absl::ToDoubleMilliseconds(at_ - absl::Now()));
  return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : static_cast<int>(ms);
}

std::chrono::system_clock::time_point IoDeadline::ForGrpc() const {
  if (at_ == absl::InfiniteFuture()) return std::chrono::system_clock::time_point::max();
  return absl::ToChronoTime(at_);
}

void IoPause(absl::Duration wait) { absl::SleepFor(wait); }

}  // namespace gpunode::core
