// The gRPC services gpunode's DRA plugin serves the kubelet, on src/h2grpc like the device plugin:
// on the registration socket (<kubelet>/plugins_registry/gpu.nvidia.com-reg.sock) the plugin
// watcher's Registration (GetInfo, NotifyRegistrationStatus); on the service socket
// (<kubelet>/plugins/gpu.nvidia.com/dra.sock) DRAPlugin v1 and v1beta1 (NodePrepareResources,
// NodeUnprepareResources) and DRAResourceHealth v1alpha1 (NodeWatchResources, the stream the
// kubelet turns into the pods' allocatedResourcesStatus).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/env.h"
#include "dra/claim_preparer.h"
#include "h2grpc/service.h"

namespace gpunode::dra {

struct DeviceHealth {
  std::string device;  // the device's name in the pool
  bool healthy = true;
  std::string message = {};  // why not, at most 1024 characters
  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// The health of every device of the pool, as the last check left it, for the streams of any
// number of kubelet connections.
//
// Thread-safety: all methods may be called from any thread.
class HealthFeed {
 public:
  // `env` gives the time each health report is stamped with.
  HealthFeed(std::string pool, core::Env& env) : pool_(std::move(pool)), env_(env) {}

  // Replaces the list; the streams send it when it differs from the last.
  void Set(std::vector<DeviceHealth> devices);
  // Waits until the version passes `seen`, `timeout` passes or `over` holds (checked on every
  // wake); returns the list and its version.
  std::pair<std::vector<DeviceHealth>, uint64_t> WaitNewer(uint64_t seen,
                                                           std::chrono::milliseconds timeout,
                                                           const std::function<bool()>& over);
  // Wakes every waiting stream to check its `over` (its call was cancelled, or the server is
  // stopping).
  void Wake();
  const std::string& pool() const { return pool_; }
  absl::Time Now() const { return env_.Now(); }

 private:
  const std::string pool_;
  core::Env& env_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<DeviceHealth> devices_;
  uint64_t version_ = 0;
};

// How long the kubelet may go without hearing about a device before it shows its health as
// Unknown; the stream repeats the list well within it.
inline constexpr int64_t kHealthCheckTimeoutSeconds = 60;
inline constexpr std::chrono::seconds kHealthResend{20};

h2grpc::Service DraService(ClaimPreparer& preparer, HealthFeed& health);

struct RegistrationInfo {
  std::string endpoint;  // the service socket's path as the kubelet opens it
  // Called with the kubelet's verdict on the registration.
  std::function<void(bool registered, const std::string& error)> on_status;
};
h2grpc::Service RegistrationService(RegistrationInfo info);

// The services the kubelet may choose from, newest first, as GetInfo lists them.
inline constexpr const char* kSupportedServices[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};

}  // namespace gpunode::dra
