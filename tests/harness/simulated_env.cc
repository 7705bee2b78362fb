#include "harness/simulated_env.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpunode::testing {

SimulatedEnv::SimulatedEnv(Options options)
    : host_(std::move(options.host_root)), advance_on_sleep_(options.advance_on_sleep) {
  absl::MutexLock lock(&mu_);
  now_ = options.start;
}

absl::Time SimulatedEnv::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool SimulatedEnv::SleepUntil(absl::Time deadline) {
  std::shared_ptr<std::function<void(absl::Time)>> hook;
  absl::Time now;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return false;
    const absl::Time from = now_;
    if (advance_on_sleep_) {
      now_ = std::max(now_, deadline);
    } else {
      auto reached = [this, deadline]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || now_ >= deadline;
      };
      mu_.Await(absl::Condition(&reached));
      if (stopped_) return false;
    }
    ++sleeps_;
    slept_ += now_ - from;
    hook = on_sleep_;
    now = now_;
  }
  if (hook) (*hook)(now);
  return !StopRequested();
}

void SimulatedEnv::Pause(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  now_ += wait;
  ++sleeps_;
  slept_ += wait;
}

absl::StatusOr<core::SpawnResult> SimulatedEnv::Spawn(const core::SpawnOptions& options) {
  std::shared_ptr<std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)>> hook;
  {
    absl::MutexLock lock(&mu_);
    spawned_.push_back(options.argv);
    hook = on_spawn_;
  }
  if (!hook) {
    return absl::FailedPreconditionError(
        absl::StrCat("the simulated environment runs no program: ",
                     options.argv.empty() ? std::string("(no argv)") : options.argv.front()));
  }
  return (*hook)(options);
}

void SimulatedEnv::Advance(absl::Duration by) {
  absl::MutexLock lock(&mu_);
  now_ += by;
}

void SimulatedEnv::OnSleep(std::function<void(absl::Time)> hook) {
  absl::MutexLock lock(&mu_);
  on_sleep_ = hook ? std::make_shared<std::function<void(absl::Time)>>(std::move(hook)) : nullptr;
}

void SimulatedEnv::OnSpawn(
    std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)> hook) {
  absl::MutexLock lock(&mu_);
  on_spawn_ =
      hook ? std::make_shared<
                 std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)>>(
                 std::move(hook))
           : nullptr;
}

std::vector<std::vector<std::string>> SimulatedEnv::spawned() const {
  absl::MutexLock lock(&mu_);
  return spawned_;
}

int SimulatedEnv::sleeps() const {
  absl::MutexLock lock(&mu_);
  return sleeps_;
}

absl::Duration SimulatedEnv::slept() const {
  absl::MutexLock lock(&mu_);
  return slept_;
}

}  // namespace gpunode::testing
