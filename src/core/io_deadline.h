// Deadlines of I/O, in real time: the kernel's poll, gRPC's calls and the files that others
// rotate (a token, a certificate) count real time, whatever clock a test gives a role. The roles'
// own waits, schedules and timestamps go through core::Env instead; this is the one other clock,
// and the transports and servers are its only users (tests/integration/tree_rules_test.sh).
#pragma once

#include <chrono>

#include "absl/time/time.h"

namespace gpunode::core {

class IoDeadline {
 public:
  // Already passed: what a check that never ran is due at.
  IoDeadline() = default;
  static IoDeadline After(absl::Duration timeout);  // InfiniteDuration: never
  static IoDeadline At(absl::Time at) { return IoDeadline(at); }
  static IoDeadline Never() { return IoDeadline(absl::InfiniteFuture()); }

  absl::Time at() const { return at_; }
  bool Passed() const;
  // What is left of it, zero once passed.
  absl::Duration Left() const;
  // poll(2)'s timeout: the milliseconds left rounded up, 0 once passed, -1 for never.
  int PollTimeoutMs() const;
  // grpc::ClientContext::set_deadline's form.
  std::chrono::system_clock::time_point ForGrpc() const;

  friend IoDeadline Sooner(IoDeadline a, IoDeadline b) { return a.at_ < b.at_ ? a : b; }

 private:
  explicit IoDeadline(absl::Time at) : at_(at) {}
  absl::Time at_ = absl::InfinitePast();
};

// Waits `wait` of real time, for a transport that polls a library offering nothing to wait on
// (cpp-httplib's accept loop starting).
void IoPause(absl::Duration wait);

}  // namespace gpunode::core
