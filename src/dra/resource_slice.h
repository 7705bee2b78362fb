// The node's pool of DRA devices as resource.k8s.io/v1 ResourceSlices, and the one writer that
// keeps the API server's copy equal to it.
//
// Thread-safety: SlicePublisher is not thread-safe; the plugin's control loop owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gpu/dra_devices.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace gpunode::dra {

// The API's limit of devices in one ResourceSlice (resource.k8s.io/v1 ResourceSliceMaxDevices).
inline constexpr size_t kMaxDevicesPerSlice = 128;

struct PoolOwner {
  std::string node_name;  // also the pool's name, as NVIDIA's driver names it
  std::string node_uid;   // the owner reference: the slices go when the Node goes
};

// The slices of the pool at `generation`: one per kMaxDevicesPerSlice devices (always at least
// one, so that an empty pool is published as empty rather than absent), each named by
// generateName "<node>-gpu.nvidia.com-".
std::vector<nlohmann::ordered_json> BuildResourceSlices(const PoolOwner& owner,
                                                        const std::vector<gpu::DraDevice>& devices,
                                                        int64_t generation);

// What `kubectl get resourceslice -o yaml` shows for the slices (a List), for --dry-run.
std::string RenderSlicesYaml(const std::vector<nlohmann::ordered_json>& slices);

class SlicePublisher {
 public:
  SlicePublisher(kube::Client& client, std::string node_name)
      : client_(client), node_name_(std::move(node_name)) {}

  // Makes the API server hold exactly `devices` in the node's pool: nothing is sent when it
  // already does; otherwise the pool's generation goes up by one, the existing slices are
  // replaced in place, new ones created and those left over deleted. Slices of the pool made by
  // an earlier run are found by node and driver, so a restart adopts them.
  absl::Status Publish(const std::vector<gpu::DraDevice>& devices);

  // How many times Publish wrote to the API (for the log and the tests).
  int writes() const { return writes_; }
  // The pool's generation the API server holds after the last successful Publish; 0 before.
  int64_t generation() const { return generation_; }

 private:
  absl::Status ReadNodeUid();

  kube::Client& client_;
  std::string node_name_;
  std::string node_uid_;
  int writes_ = 0;
  int64_t generation_ = 0;
};

}  // namespace gpunode::dra
