// The device plugin's view of the MPS control daemons: a resource shared through MPS is offered
// only once its daemon is ready for this plugin's plan (the node's `.ready` marker is there, the
// resource's `.started` marker names the plan the plugin's config makes, mps_plan_key.h, and the
// daemon's control socket accepts a connection), and its devices are Unhealthy while the daemon
// is down after that. The markers are checked every `period`, the socket when
// they appear and every 10 s after (each try is logged by the daemon); a change bumps the health
// board so that ListAndWatch sends the new list at once.
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

#include "core/io_deadline.h"
#include "health/health_board.h"

namespace gpunode::plugin {

enum class MpsState {
  kNotReady,  // not ready since this plugin generation started: advertise no devices
  kUp,
  kDown,  // was up, is not now: the devices are Unhealthy
};

// Whether the daemon of `resource` (its name without the domain) under `root` serves `plan` (its
// MpsPlanKey): the node's `.ready` marker is there and the first line of the resource's
// `.started` marker is `plan`.
bool MpsMarkersPresent(const std::string& root, const std::string& resource,
                       const std::string& plan);
// The plan the resource's daemon says it runs (the first line of its `.started` marker); empty
// when it is not started.
std::string MpsRunningPlan(const std::string& root, const std::string& resource);
// Whether an MPS control daemon accepts connections on `socket_path` (its pipe's "control").
bool MpsControlAccepts(const std::string& socket_path);

class MpsReadiness {
 public:
  // `root` is the MPS root as this process sees it; `plans` maps each resource's name without
  // the domain to its MpsPlanKey.
  MpsReadiness(std::string root, std::map<std::string, std::string> plans,
               health::HealthBoard& board,
               std::chrono::milliseconds period = std::chrono::milliseconds(250));
  ~MpsReadiness();
  MpsReadiness(const MpsReadiness&) = delete;
  MpsReadiness& operator=(const MpsReadiness&) = delete;

  MpsState state(const std::string& resource) const;

 private:
  void Probe();
  void Loop();

  const std::string root_;
  health::HealthBoard& board_;
  const std::chrono::milliseconds period_;
  mutable std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::map<std::string, MpsState> states_;
  const std::map<std::string, std::string> plans_;
  // Only the probing thread (and the constructor, before it starts) touches these.
  std::map<std::string, core::IoDeadline> socket_recheck_;  // by resource; passed: check
  std::set<std::string> other_plan_said_;  // resources whose daemon runs another plan, logged once
  std::thread thread_;
};

}  // namespace gpunode::plugin
