// The Env of the binary: the host's files under --host-root (or "/"), real time, real programs,
// and the stop signals (SIGINT and SIGTERM unless told others) turned into a stop request.
#pragma once

#include <csignal>
#include <initializer_list>
#include <string>
#include <thread>

#include "core/env.h"

namespace gpunode::core {

class SystemEnv : public Env {
 public:
  explicit SystemEnv(std::string host_root = "/");
  ~SystemEnv() override;

  const HostRoot& host() const override { return host_; }
  absl::Time Now() override;
  bool SleepUntil(absl::Time deadline) override;
  void Pause(absl::Duration wait) override;
  absl::StatusOr<SpawnResult> Spawn(const SpawnOptions& options) override;

  // From now on the first of these signals requests a stop (RequestStop(signal)); later ones are
  // read and dropped, so a second Ctrl-C does not kill a command that is cleaning up. Blocks the
  // signals in the calling thread, so call it before any other thread starts (they inherit the
  // mask and leave the signals to the thread this starts). Once per SystemEnv.
  absl::Status StopOnSignals(std::initializer_list<int> signals = {SIGINT, SIGTERM});

 private:
  HostRoot host_;
  // Woken (an eventfd) when the SystemEnv goes, to end the signal thread.
  UniqueFd quit_;
  std::thread signal_thread_;
};

}  // namespace gpunode::core
