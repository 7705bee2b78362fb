#include "harness/simulated_env.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpunode::testing {

SimulatedEnv::SimulatedEnv(Options options)
    : host_(std::move(options.host_root)), advance_on_sleep_(options.advance_on_sleep) {
  std::unique_lock lock(mu_);
  now_ = options.start;
}

absl::Time SimulatedEnv::Now() {
  std::unique_lock lock(mu_);
  return now_;
}

bool SimulatedEnv::SleepUntil(absl::Time deadline) {
  std::shared_ptr<std::function<void(absl::Time)>> hook;
  absl::Time now;
  {
    std::unique_lock lock(mu_);
    if (stopped_) return false;
    const absl::Time from = now_;
    if (advance_on_sleep_) {
      now_ = std::max(now_, deadline);
    } else {
      changed_.wait(lock, [this, deadline] { return stopped_ || now_ >= deadline; });
      if (stopped_) return false;
    }
    ++sleeps_;
    slept_ += now_ - from;
    hook = on_sleep_;
    now = now_;
  }
  changed_.notify_all();  // the clock moved: for the sleeps of other threads
  if (hook) (*hook)(now);
  return !StopRequested();
}

void SimulatedEnv::Pause(absl::Duration wait) {
  {
    std::lock_guard lock(mu_);
    now_ += wait;
    ++sleeps_;
    slept_ += wait;
  }
  changed_.notify_all();
}

absl::StatusOr<core::SpawnResult> SimulatedEnv::Spawn(const core::SpawnOptions& options) {
  std::shared_ptr<std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)>> hook;
  {
    std::unique_lock lock(mu_);
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
  {
    std::lock_guard lock(mu_);
    now_ += by;
  }
  changed_.notify_all();
}

void SimulatedEnv::OnSleep(std::function<void(absl::Time)> hook) {
  std::unique_lock lock(mu_);
  on_sleep_ = hook ? std::make_shared<std::function<void(absl::Time)>>(std::move(hook)) : nullptr;
}

void SimulatedEnv::OnSpawn(
    std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)> hook) {
  std::unique_lock lock(mu_);
  on_spawn_ =
      hook ? std::make_shared<
                 std::function<absl::StatusOr<core::SpawnResult>(const core::SpawnOptions&)>>(
                 std::move(hook))
           : nullptr;
}

std::vector<std::vector<std::string>> SimulatedEnv::spawned() const {
  std::unique_lock lock(mu_);
  return spawned_;
}

int SimulatedEnv::sleeps() const {
  std::unique_lock lock(mu_);
  return sleeps_;
}

absl::Duration SimulatedEnv::slept() const {
  std::unique_lock lock(mu_);
  return slept_;
}

}  // namespace gpunode::testing
