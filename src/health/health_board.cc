#include "health/health_board.h"

namespace gpunode::health {
namespace {

// Records `healthy`/`why` for `key` in `unhealthy`; returns {state flipped, anything changed}.
template <typename Key>
std::pair<bool, bool> Record(std::map<Key, Fault>& unhealthy, const Key& key, bool healthy,
                             Fault why) {
  if (healthy) {
    bool flipped = unhealthy.erase(key) > 0;
    return {flipped, flipped};
  }
  auto [it, inserted] = unhealthy.try_emplace(key, why);
  if (inserted) return {true, true};
  if (it->second.reason == why.reason) return {false, false};
  it->second = std::move(why);
  return {false, true};
}

}  // namespace

bool HealthBoard::Healthy(size_t gpu, const std::optional<MigKey>& mig) const {
  std::lock_guard lock(mutex_);
  if (unhealthy_gpus_.contains(gpu)) return false;
  return !mig || !unhealthy_migs_.contains(*mig);
}

void HealthBoard::BumpLocked() {
  ++generation_;
  changed_.notify_all();
}

bool HealthBoard::SetGpu(size_t gpu, bool healthy, Fault why) {
  std::lock_guard lock(mutex_);
  auto [flipped, changed] = Record(unhealthy_gpus_, gpu, healthy, std::move(why));
  if (changed) BumpLocked();
  return flipped;
}

bool HealthBoard::SetMig(const MigKey& mig, bool healthy, Fault why) {
  std::lock_guard lock(mutex_);
  auto [flipped, changed] = Record(unhealthy_migs_, mig, healthy, std::move(why));
  if (changed) BumpLocked();
  return flipped;
}

std::optional<Fault> HealthBoard::FaultOf(size_t gpu, const std::optional<MigKey>& mig) const {
  std::lock_guard lock(mutex_);
  if (auto it = unhealthy_gpus_.find(gpu); it != unhealthy_gpus_.end()) return it->second;
  if (mig) {
    if (auto it = unhealthy_migs_.find(*mig); it != unhealthy_migs_.end()) return it->second;
  }
  return std::nullopt;
}

void HealthBoard::SetUnmonitored(size_t gpu, std::string why) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = unmonitored_.try_emplace(gpu, why);
  if (!inserted && it->second == why) return;
  it->second = std::move(why);
  BumpLocked();
}

std::optional<std::string> HealthBoard::Unmonitored(size_t gpu) const {
  std::lock_guard lock(mutex_);
  if (auto it = unmonitored_.find(gpu); it != unmonitored_.end()) return it->second;
  return std::nullopt;
}

void HealthBoard::Reset() {
  std::lock_guard lock(mutex_);
  unhealthy_gpus_.clear();
  unhealthy_migs_.clear();
  unmonitored_.clear();
  BumpLocked();
}

void HealthBoard::MarkChanged() {
  std::lock_guard lock(mutex_);
  BumpLocked();
}

uint64_t HealthBoard::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

uint64_t HealthBoard::WaitForChange(uint64_t seen, const std::function<bool()>& stop) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return generation_ != seen || stop(); });
  return generation_;
}

uint64_t HealthBoard::WaitForChangeFor(uint64_t seen, std::chrono::milliseconds timeout,
                                       const std::function<bool()>& stop) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen || stop(); });
  return generation_;
}

void HealthBoard::Interrupt() {
  // Taking the lock orders this after a waiter's check of its `stop`, or before it.
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

}  // namespace gpunode::health
