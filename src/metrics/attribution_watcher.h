// Keeps the latest Attribution fresh in the background: one PodResources List over the kept
// channel plus one read of the device manager checkpoint per refresh, so a scrape or a sample never
// waits on the kubelet.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "metrics/attribution.h"
#include "metrics/pod_resources_client.h"

namespace gpunode::metrics {

struct AttributionOptions {
  // Host paths, resolved under the Env's host root.
  std::string socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string checkpoint = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint";
  absl::Duration refresh = absl::Seconds(1);
  absl::Duration timeout = absl::Seconds(5);
  // A last good answer older than this is dropped rather than used to call processes zombies.
  absl::Duration stale_after = absl::Seconds(10);
};

class AttributionWatcher {
 public:
  // `env` (the host's files, the clock) must outlive this.
  AttributionWatcher(core::Env& env, AttributionOptions options);
  ~AttributionWatcher();
  AttributionWatcher(const AttributionWatcher&) = delete;
  AttributionWatcher& operator=(const AttributionWatcher&) = delete;

  // One refresh now, on the caller's thread.
  absl::Status Refresh();
  // Refreshes every `refresh` on a background thread until destruction (call Refresh first for
  // an answer right away).
  void Start();

  // The latest answer, or null when the kubelet has not answered within `stale_after`.
  std::shared_ptr<const Attribution> Current() const;
  uint64_t errors() const;

 private:
  void Run();

  core::Env& env_;
  const AttributionOptions options_;
  PodResourcesClient client_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::shared_ptr<const Attribution> current_;
  absl::Time current_at_ = absl::InfinitePast();
  uint64_t errors_ = 0;
  bool logged_failure_ = false;
  std::thread thread_;
};

}  // namespace gpunode::metrics
