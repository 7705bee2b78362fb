// Watches the node's GPUs through NVML's XID events and keeps the HealthBoard current: a
// critical XID marks the GPU (or only the MIG device it names) unhealthy, a GPU that falls off
// the bus marks only that GPU, and a device becomes healthy again only on evidence that its fault
// is gone (recovery_evidence.h), held through the recovery period without a new XID. A GPU that
// falls more often than the flap limit stays unhealthy until the plugin restarts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "health/health_board.h"
#include "health/recovery_evidence.h"
#include "health/xid.h"
#include "nvml/event_set.h"
#include "nvml/library.h"

namespace gpunode::health {

// A GPU to watch, as the plugin that offers it knows it: by NVML index, with the MIG devices it
// offers. Board positions are positions in the list handed to Start().
struct MonitoredMig {
  unsigned gi = 0;
  unsigned ci = 0;
  friend bool operator==(const MonitoredMig&, const MonitoredMig&) = default;
};
struct MonitoredGpu {
  unsigned index = 0;  // NVML index
  std::string uuid;
  std::vector<MonitoredMig> migs;
  friend bool operator==(const MonitoredGpu&, const MonitoredGpu&) = default;
};

struct HealthOptions {
  XidPolicy xids;
  // Zero keeps an unhealthy device unhealthy until the plugin restarts, as NVIDIA's plugin does.
  std::chrono::milliseconds recovery_period{std::chrono::seconds(60)};
  // A GPU that becomes unhealthy more than this many times within `flap_window` stays unhealthy
  // until the plugin restarts; 0: no limit.
  unsigned flap_limit = 3;
  std::chrono::milliseconds flap_window{std::chrono::hours(1)};
  // Where the unhealthy devices and why are written (host/plugin_health_state.h); empty: nowhere.
  std::string state_file = {};
};

class HealthMonitor {
 public:
  // Starts the monitoring thread. `library` and `board` must outlive the monitor.
  static std::unique_ptr<HealthMonitor> Start(const nvml::Library& library,
                                              std::vector<MonitoredGpu> gpus, HealthBoard& board,
                                              HealthOptions options);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Writes the state file again (a kubelet restart empties its directory).
  void Republish();

 private:
  using Clock = std::chrono::steady_clock;
  struct Trouble {
    Clock::time_point last_bad;
    std::string reason;
    std::set<FaultClass> faults;  // what recovery needs evidence for
    // Since when the evidence has held without a break; the quiet period counts from here.
    std::optional<Clock::time_point> evidence_since;
    std::string waiting_for;  // the evidence missing at the last probe
    std::string held;         // why it stays unhealthy until the plugin restarts; empty: not held
  };

  HealthMonitor(const nvml::Library& library, std::vector<MonitoredGpu> gpus, HealthBoard& board,
                HealthOptions options);
  void Run();
  void RebuildEventSet();
  void HandleXid(const nvml::Event& event);
  void FindLostGpus();
  void ProbeTroubled();
  // Returns true when the unit's quiet period is over.
  bool Recovered(Trouble& trouble, size_t gpu, const std::string& unit, Clock::time_point now);
  bool Answers(size_t gpu, std::string* why) const;
  void MarkGpu(size_t gpu, const std::string& reason, FaultClass fault,
               std::optional<uint64_t> xid = std::nullopt);
  void MarkMig(const MigKey& mig, const std::string& reason, FaultClass fault,
               std::optional<uint64_t> xid);
  // Records a new fall of `trouble` on a Healthy→Unhealthy transition of the GPU's devices and
  // holds it past the flap limit.
  void CountFall(size_t gpu, Trouble& trouble, const std::string& unit);
  Trouble& Note(Trouble& trouble, const std::string& reason, FaultClass fault);
  void Publish();
  void PauseFor(std::chrono::milliseconds pause);
  std::string GpuName(size_t gpu) const;
  std::string MigName(const MigKey& mig) const;
  std::string RecoveryRule() const;

  const nvml::Library& library_;
  const std::vector<MonitoredGpu> gpus_;
  HealthBoard& board_;
  const HealthOptions options_;
  std::vector<std::optional<nvml::Device>> devices_;  // by position in gpus_
  std::vector<GpuBaseline> baselines_;                // by position in gpus_
  std::unique_ptr<nvml::EventSet> events_;
  std::vector<bool> watched_;  // registered with events_
  std::set<size_t> lost_;      // answered GPU_IS_LOST; left out of events_ until they answer
  bool rebuild_ = false;
  std::map<size_t, Trouble> gpu_trouble_;
  std::map<MigKey, Trouble> mig_trouble_;
  std::map<size_t, std::deque<Clock::time_point>> falls_;  // by GPU, within the flap window
  Clock::time_point next_probe_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> republish_{false};
  std::mutex pause_mutex_;
  std::condition_variable pause_;
  std::thread thread_;
};

}  // namespace gpunode::health
