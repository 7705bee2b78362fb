// The kubelet's device manager checkpoint (<kubelet dir>/device-plugins/
// kubelet_internal_checkpoint): the devices each plugin registered, and which pod UID and
// container hold which device IDs. PodResources names pods but gives no UID; this file is where
// the kubelet keeps the UID of each allocation.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::host {

struct CheckpointAllocation {
  std::string pod_uid;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;  // sorted, each once
};

struct DeviceCheckpoint {
  std::vector<CheckpointAllocation> allocations;  // entries that hold at least one device
  std::map<std::string, std::vector<std::string>> registered;  // resource -> device IDs, sorted
};

// Parses the checkpoint JSON. DeviceIDs may be the NUMA-keyed object of Kubernetes 1.20+ (a
// device reachable from several NUMA nodes is listed under each) or the plain list of older
// kubelets. The checksum is not verified: it is a hash of a Go structure dump.
absl::StatusOr<DeviceCheckpoint> ParseDeviceCheckpoint(std::string_view json);

}  // namespace gpunode::host
