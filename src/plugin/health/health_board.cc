#include "plugin/health/health_board.h"

namespace gpunode::plugin {

bool HealthBoard::Healthy(size_t gpu, const std::optional<MigKey>& mig) const {
  std::lock_guard lock(mutex_);
  if (unhealthy_gpus_.contains(gpu)) return false;
  return !mig || !unhealthy_migs_.contains(*mig);
}

bool HealthBoard::SetGpu(size_t gpu, bool healthy) {
  std::lock_guard lock(mutex_);
  bool changed = healthy ? unhealthy_gpus_.erase(gpu) > 0 : unhealthy_gpus_.insert(gpu).second;
  if (changed) {
    ++generation_;
    changed_.notify_all();
  }
  return changed;
}

bool HealthBoard::SetMig(const MigKey& mig, bool healthy) {
  std::lock_guard lock(mutex_);
  bool changed = healthy ? unhealthy_migs_.erase(mig) > 0 : unhealthy_migs_.insert(mig).second;
  if (changed) {
    ++generation_;
    changed_.notify_all();
  }
  return changed;
}

void HealthBoard::MarkChanged() {
  std::lock_guard lock(mutex_);
  ++generation_;
  changed_.notify_all();
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

void HealthBoard::Interrupt() {
  // Taking the lock orders this after a waiter's check of its `stop`, or before it.
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

}  // namespace gpunode::plugin
