// A client of the kubelet's PodResources API v1 over one kept gRPC channel: the channel connects
// on first use and reconnects by itself when the kubelet restarts, so callers never dial.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "metrics/attribution.h"

namespace gpunode::metrics {

class PodResourcesClient {
 public:
  // `socket_path` is the kubelet's socket as this process sees it (already under --host-root).
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  const std::string& socket_path() const { return socket_path_; }

  // List: every container of every active pod with its device IDs, and each device of
  // gpu.nvidia.com it holds through a ResourceClaim (containers without devices are left out).
  // Fails with the gRPC status text, naming the socket.
  absl::StatusOr<std::vector<ListedDevices>> List(absl::Duration timeout) const;

 private:
  struct Stub;
  std::string socket_path_;
  std::unique_ptr<Stub> stub_;
};

}  // namespace gpunode::metrics
