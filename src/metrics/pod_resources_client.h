// A client of the kubelet's PodResources API v1 on the project's own HTTP/2 unary client
// (h2grpc), not gRPC C++: each call opens its own connection to the local socket, so a restarted
// kubelet is reached at the next call with no reconnect backoff, and the exporter runs no gRPC
// threads and maps no gRPC core.
#pragma once

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

  const std::string& socket_path() const { return socket_path_; }

  // List: every container of every active pod with its device IDs, and each device of
  // gpu.nvidia.com it holds through a ResourceClaim (containers without devices are left out).
  // Fails UNAVAILABLE with the call's status text (no socket, timeout, UNIMPLEMENTED from a
  // kubelet without the API), naming the socket.
  absl::StatusOr<std::vector<ListedDevices>> List(absl::Duration timeout) const;

 private:
  std::string socket_path_;
};

}  // namespace gpunode::metrics
