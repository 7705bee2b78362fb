// Watches the node's GPUs through NVML's XID events and keeps the HealthBoard current: a
// critical XID marks the GPU (or only the MIG device it names) unhealthy, a GPU that falls off
// the bus marks only that GPU, and a device becomes healthy again once NVML has answered
// normally for the recovery period.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/event_set.h"
#include "nvml/library.h"
#include "plugin/health/health_board.h"
#include "plugin/health/xid.h"
#include "plugin/rm/node.h"

namespace gpunode::plugin {

struct HealthOptions {
  XidPolicy xids;
  // Zero keeps an unhealthy device unhealthy until the plugin restarts, as NVIDIA's plugin does.
  std::chrono::milliseconds recovery_period{std::chrono::seconds(60)};
};

class HealthMonitor {
 public:
  // Starts the monitoring thread. `library`, `node` and `board` must outlive the monitor.
  static std::unique_ptr<HealthMonitor> Start(const nvml::Library& library, const Node& node,
                                              HealthBoard& board, HealthOptions options);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  struct Trouble {
    Clock::time_point last_bad;
    std::string reason;
    // Since when NVML has answered without a break; unset while it does not answer. The quiet
    // period counts from here, so a gap between probes never counts as answering.
    std::optional<Clock::time_point> answering_since;
  };

  HealthMonitor(const nvml::Library& library, const Node& node, HealthBoard& board,
                HealthOptions options);
  void Run();
  void RebuildEventSet();
  void HandleXid(const nvml::Event& event);
  void FindLostGpus();
  void ProbeTroubled();
  bool Answers(size_t gpu, std::string* why) const;
  // `answering`: NVML still answers (an XID event), as opposed to a GPU that does not.
  void MarkGpu(size_t gpu, const std::string& reason, bool answering);
  void MarkMig(const MigKey& mig, const std::string& reason);
  void PauseFor(std::chrono::milliseconds pause);
  std::string GpuName(size_t gpu) const;

  const nvml::Library& library_;
  const Node& node_;
  HealthBoard& board_;
  const HealthOptions options_;
  std::vector<std::optional<nvml::Device>> devices_;  // by position in node_.gpus
  std::unique_ptr<nvml::EventSet> events_;
  std::vector<bool> watched_;  // registered with events_
  std::set<size_t> lost_;      // answered GPU_IS_LOST; left out of events_ until they answer
  bool rebuild_ = false;
  std::map<size_t, Trouble> gpu_trouble_;
  std::map<MigKey, Trouble> mig_trouble_;
  Clock::time_point next_probe_;

  std::atomic<bool> stop_{false};
  std::mutex pause_mutex_;
  std::condition_variable pause_;
  std::thread thread_;
};

}  // namespace gpunode::plugin
