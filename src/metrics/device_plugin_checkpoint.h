// The kubelet's device manager checkpoint (/var/lib/kubelet/device-plugins/
// kubelet_internal_checkpoint): which pod UID and container hold which device IDs. PodResources
// names pods but gives no UID; this file is where the kubelet keeps the UID of each allocation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::metrics {

struct CheckpointEntry {
  std::string pod_uid;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;
};

// Parses the checkpoint JSON (DeviceIDs as the NUMA-keyed object of Kubernetes 1.20+ or the plain
// array of older kubelets). The checksum is not verified: it is a hash of a Go structure dump.
absl::StatusOr<std::vector<CheckpointEntry>> ParseDevicePluginCheckpoint(std::string_view json);

}  // namespace gpunode::metrics
