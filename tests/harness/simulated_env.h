// core::Env for tests: a fixture tree for the host's files, simulated time and scripted program
// results, so a role that waits minutes in production runs its test in milliseconds and the test
// decides what every program it starts answers.
//
// Time moves only when the role sleeps or the test calls Advance. In the default mode a sleep moves
// the clock to its deadline at once (a command's single loop: the drain, the upgrade, the MIG
// manager); with `advance_on_sleep` false a sleep waits until the test's Advance passes its
// deadline (a daemon whose threads sleep side by side). The hook given to OnSleep runs after
// every sleep's clock move: it is how a test makes the world change while the role waits.
//
// Thread safety: every method may be called from any thread; the OnSleep and OnSpawn hooks run
// on the role's thread, outside the Env's lock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "core/env.h"

namespace gpunode::testing {

class SimulatedEnv : public core::Env {
 public:
  struct Options {
    // The host's files; "/" leaves them the machine's own.
    std::string host_root = "/";
    absl::Time start = absl::FromCivil(absl::CivilSecond(2026, 1, 1, 0, 0, 0), absl::UTCTimeZone());
    bool advance_on_sleep = true;
  };
  SimulatedEnv() : SimulatedEnv(Options{}) {}
  explicit SimulatedEnv(Options options);

  const core::HostRoot& host() const override { return host_; }
  absl::Time Now() override;
  bool SleepUntil(absl::Time deadline) override;
  // Moves the clock by `wait` (counted with the sleeps), stop or not.
  void Pause(absl::Duration wait) override;
  // What the OnSpawn hook answers; without one, FailedPrecondition naming the program, so a test
  // sees a program it did not expect the role to run.
  absl::StatusOr<core::SpawnResult> Spawn(const core::SpawnOptions& options) override;

  // Moves the clock forward, waking the sleeps whose deadline it reaches.
  void Advance(absl::Duration by);
  // Runs after every sleep has moved the clock (not after Advance), with the new time.
  void OnSleep(std::function<void(absl::Time)> hook);
  void OnSpawn(std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)> hook);

  // The argv of every program started, in order.
  std::vector<std::vector<std::string>> spawned() const;
  // How many sleeps have returned, and the simulated time they waited in all.
  int sleeps() const;
  absl::Duration slept() const;

 private:
  const core::HostRoot host_;
  const bool advance_on_sleep_;
  // The rest is guarded by Env's mu_.
  absl::Time now_;
  int sleeps_ = 0;
  absl::Duration slept_;
  std::vector<std::vector<std::string>> spawned_;
  // Shared, not copied, for each call: a hook keeps its own state from one call to the next.
  std::shared_ptr<std::function<void(absl::Time)>> on_sleep_;
  std::shared_ptr<std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)>>
      on_spawn_;
};

}  // namespace gpunode::testing
