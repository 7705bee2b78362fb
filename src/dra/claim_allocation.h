// What the scheduler allocated to one ResourceClaim, read from the claim as the API server serves
// it (resource.k8s.io/v1): the devices of this driver and node, and the opaque configuration
// NVIDIA's driver reads (resource.nvidia.com/v1beta1 GpuConfig and MigDeviceConfig).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::dra {

// What a GpuConfig with `sharing.strategy: MPS` asks for (its mpsConfig): the devices one config
// applies to share one MPS control daemon.
struct MpsRequest {
  size_t config_index = 0;           // the config's place in status.allocation.devices.config
  int active_thread_percentage = 0;  // 1-100; 0 when the config leaves it to the daemon
  std::optional<uint64_t> default_pinned_bytes = {};  // defaultPinnedDeviceMemoryLimit
  // defaultPerDevicePinnedMemoryLimit, by a GPU UUID or by the index of a device among the
  // config's devices, as the claim wrote the key.
  std::map<std::string, uint64_t> pinned_bytes = {};
  friend bool operator==(const MpsRequest&, const MpsRequest&) = default;
};

struct AllocatedDevice {
  std::string request;  // the claim's request ("gpu", or "gpu/big" for a subrequest)
  std::string pool;
  std::string device;
  // The time-slice interval a GpuConfig asks for the device ("Default", "Short", "Medium",
  // "Long"); empty when no config names one.
  std::string time_slice = {};
  // Set when the config that applies to the device shares it through MPS.
  std::optional<MpsRequest> mps = {};
};

// The claim's devices for `driver` in `pool`. Errors (one line, naming the claim and the field,
// returned to the kubelet as the claim's error):
//  - the body is not a ResourceClaim, or its metadata.uid is not `uid` (deleted and made again);
//  - the claim is not allocated;
//  - a device of this driver is in another pool (allocated for another node);
//  - an opaque config of this driver is not a GpuConfig or MigDeviceConfig of
//    resource.nvidia.com/v1beta1, has fields these kinds do not have, an interval that is not one
//    of NVIDIA's, the other strategy's settings (timeSlicingConfig with MPS, mpsConfig with
//    TimeSlicing), a thread percentage outside 1-100 or a memory limit that is not a quantity of
//    at least 1Mi.
// A config applies to the results of the requests it lists (all when it lists none); of several,
// the last that says how to share wins, as the API orders them (the class's, then the claim's).
absl::StatusOr<std::vector<AllocatedDevice>> ReadAllocation(std::string_view claim_json,
                                                            std::string_view uid,
                                                            std::string_view driver,
                                                            std::string_view pool);

}  // namespace gpunode::dra
