// Everything a role touches outside its own memory, behind one interface (LevelDB's Env for this
// project): the host's files under a root, the clock, a stop request that ends every wait, and
// programs run with a deadline. The binary hands its roles a SystemEnv (the host and real time,
// system_env.h); tests hand them tests/harness's SimulatedEnv (a fixture tree, simulated time,
// scripted program results), so a role's waits cost a test no real time.
//
// Thread safety: every method may be called from any thread. A role keeps a reference; the Env
// outlives it.
#pragma once

#include <condition_variable>
#include <mutex>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/host_root.h"
#include "core/spawn.h"
#include "core/unique_fd.h"

namespace gpunode::core {

class Env {
 public:
  Env();
  virtual ~Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  // The host's files: "/" in production, a fixture tree in tests.
  virtual const HostRoot& host() const = 0;

  virtual absl::Time Now() = 0;
  // Returns true at `deadline`, or false as soon as a stop is requested, whichever comes first
  // (at once when one was requested before).
  virtual bool SleepUntil(absl::Time deadline) = 0;
  bool SleepFor(absl::Duration wait) { return SleepUntil(Now() + wait); }
  // Waits `wait` whether or not a stop was requested: the short polls of a cleanup that runs
  // because of the stop (a daemon told to quit, children to reap), which SleepFor would turn into
  // a busy loop.
  virtual void Pause(absl::Duration wait) = 0;

  // Runs a program to its end within the options' timeout (core::Spawn in production).
  virtual absl::StatusOr<SpawnResult> Spawn(const SpawnOptions& options) = 0;

  // Ends every SleepUntil, now and later, and makes stop_fd() readable. `signal` is the signal
  // that asked for it (the exit status is then 128 + signal), 0 for a stop from within.
  virtual void RequestStop(int signal = 0);
  virtual bool StopRequested() const;
  // The signal RequestStop was given; 0 when none was, or no stop was requested.
  virtual int stop_signal() const;
  // Readable (an eventfd that is never read) once a stop is requested: for a loop that polls
  // descriptors of its own and must also wake for a stop.
  virtual int stop_fd() const { return stop_event_.get(); }

 protected:
  // Derived classes wait on `changed_` with conditions of their own that include `stopped_`
  // (under `mu_`), and notify it when what those conditions read changes. std::mutex rather than
  // absl::Mutex: Debian's abseil is built without ThreadSanitizer, which then cannot see its
  // locking.
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool stopped_ = false;  // guarded by mu_

 private:
  int stop_signal_ = 0;  // guarded by mu_
  UniqueFd stop_event_;
};

// An Env that passes every call to another, stop included; a subclass overrides what it changes
// (LevelDB's EnvWrapper): the upgrade's steps sleep through one that renews its Lease.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& target) : target_(target) {}

  const HostRoot& host() const override { return target_.host(); }
  absl::Time Now() override { return target_.Now(); }
  bool SleepUntil(absl::Time deadline) override { return target_.SleepUntil(deadline); }
  void Pause(absl::Duration wait) override { target_.Pause(wait); }
  absl::StatusOr<SpawnResult> Spawn(const SpawnOptions& options) override {
    return target_.Spawn(options);
  }
  void RequestStop(int signal = 0) override { target_.RequestStop(signal); }
  bool StopRequested() const override { return target_.StopRequested(); }
  int stop_signal() const override { return target_.stop_signal(); }
  int stop_fd() const override { return target_.stop_fd(); }

 protected:
  Env& target() { return target_; }

 private:
  Env& target_;
};

}  // namespace gpunode::core
