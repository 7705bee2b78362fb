// The health of every GPU and MIG device, shared by the health monitor (which writes it) and the
// ListAndWatch streams (which wait for it to change).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace gpunode::plugin {

// A MIG device by its parent's position in Node::gpus and its GPU and compute instance ids.
struct MigKey {
  size_t gpu = 0;
  unsigned gi = 0;
  unsigned ci = 0;
  auto operator<=>(const MigKey&) const = default;
};

// Thread-safety: every method may be called from any thread; one mutex guards the state, and
// WaitForChange releases it while it waits.
class HealthBoard {
 public:
  // A device is healthy when its GPU is, and for a MIG device, when the MIG device is too.
  bool Healthy(size_t gpu, const std::optional<MigKey>& mig) const;

  // Each returns true (and wakes the waiters) when the state changed.
  bool SetGpu(size_t gpu, bool healthy);
  bool SetMig(const MigKey& mig, bool healthy);

  // Something else a device's advertised state depends on changed (an MPS daemon went up or
  // down): bumps the generation so that every stream sends its list again.
  void MarkChanged();

  uint64_t generation() const;

  // Blocks until the generation differs from `seen` or `stop()` is true, and returns the
  // generation then. `stop` is checked under the board's lock each time a waiter wakes: whoever
  // makes it true must call Interrupt() afterwards, so that no wake-up is lost.
  uint64_t WaitForChange(uint64_t seen, const std::function<bool()>& stop) const;

  // Wakes every waiter to check its `stop`.
  void Interrupt();

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::set<size_t> unhealthy_gpus_;
  std::set<MigKey> unhealthy_migs_;
  uint64_t generation_ = 1;
};

}  // namespace gpunode::plugin
