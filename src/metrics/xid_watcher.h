// Counts XID errors per GPU from NVML events on a background thread. The counts only grow (a true
// counter, unlike DCGM's last-XID gauge); a GPU that falls off the bus is dropped from the event
// set so the others keep being watched, and re-registered if it answers again.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env.h"
#include "nvml/event_set.h"
#include "nvml/library.h"

namespace gpunode::metrics {

struct XidCounts {
  bool watched = false;  // registered for XID events at least once
  uint64_t last_xid = 0;
  std::map<uint64_t, uint64_t> by_xid;
};

class XidWatcher {
 public:
  // `env` gives the pause between attempts when no GPU can be watched; it must outlive this.
  XidWatcher(const nvml::Library& library, core::Env& env);
  ~XidWatcher();
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  // Registers every GPU that supports XID events. Call once before Start or Poll.
  void Register();
  // Takes the events already queued, without waiting (for a one-off scrape).
  void Poll();
  // Waits for events on a background thread until destruction.
  void Start();

  // By GPU index.
  std::vector<XidCounts> Snapshot() const;

 private:
  void Run();
  // Builds a new event set with every GPU that answers; returns false when none could be added.
  bool Rebuild();
  enum class WaitResult { kEvent, kTimeout, kBroken };
  // One Wait; kBroken when the set must be rebuilt (a GPU fell off the bus).
  WaitResult WaitOnce(std::chrono::milliseconds timeout);

  const nvml::Library& library_;
  core::Env& env_;
  std::unique_ptr<nvml::EventSet> set_;
  std::map<nvmlDevice_t, unsigned> index_of_;
  size_t unregistered_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  mutable std::mutex mu_;
  std::vector<XidCounts> counts_;
};

}  // namespace gpunode::metrics
