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
#include <string>
#include <utility>

#include "health/xid.h"

namespace gpunode::health {

// A MIG device by its parent's position in Node::gpus and its GPU and compute instance ids.
struct MigKey {
  size_t gpu = 0;
  unsigned gi = 0;
  unsigned ci = 0;
  auto operator<=>(const MigKey&) const = default;
};

// Why a device is Unhealthy, for those who show it: the DRA plugin's health stream and device
// taints.
struct Fault {
  std::string reason;  // "XID 62 (Internal micro-controller halt)", "the GPU is lost (...)"
  FaultClass kind = FaultClass::kResponds;
  std::optional<uint64_t> xid;  // the XID that caused it, when one did
};

// Thread-safety: every method may be called from any thread; one mutex guards the state, and
// WaitForChange releases it while it waits.
class HealthBoard {
 public:
  // A device is healthy when its GPU is, and for a MIG device, when the MIG device is too.
  bool Healthy(size_t gpu, const std::optional<MigKey>& mig) const;

  // Each returns true (and wakes the waiters) when the device went from Healthy to Unhealthy or
  // back. A new `why` for a device that stays Unhealthy wakes the waiters too, but returns false.
  bool SetGpu(size_t gpu, bool healthy, Fault why = {});
  bool SetMig(const MigKey& mig, bool healthy, Fault why = {});

  // Why the device is Unhealthy (its GPU's fault first, then its MIG device's); nullopt when it
  // is Healthy.
  std::optional<Fault> FaultOf(size_t gpu, const std::optional<MigKey>& mig) const;

  // A GPU whose XID events NVML cannot deliver (too old a GPU or driver): it stays Healthy, but
  // nothing would tell if it failed. `why` is NVML's answer.
  void SetUnmonitored(size_t gpu, std::string why);
  std::optional<std::string> Unmonitored(size_t gpu) const;

  // Every device Healthy and monitored again (the devices were read anew).
  void Reset();

  // Something else a device's advertised state depends on changed (an MPS daemon went up or
  // down): bumps the generation so that every stream sends its list again.
  void MarkChanged();

  uint64_t generation() const;

  // Blocks until the generation differs from `seen` or `stop()` is true, and returns the
  // generation then. `stop` is checked under the board's lock each time a waiter wakes: whoever
  // makes it true must call Interrupt() afterwards, so that no wake-up is lost.
  uint64_t WaitForChange(uint64_t seen, const std::function<bool()>& stop) const;
  // The same, returning at the latest after `timeout`.
  uint64_t WaitForChangeFor(uint64_t seen, std::chrono::milliseconds timeout,
                            const std::function<bool()>& stop) const;

  // Wakes every waiter to check its `stop`.
  void Interrupt();

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  void BumpLocked();

  std::map<size_t, Fault> unhealthy_gpus_;
  std::map<MigKey, Fault> unhealthy_migs_;
  std::map<size_t, std::string> unmonitored_;
  uint64_t generation_ = 1;
};

}  // namespace gpunode::health
