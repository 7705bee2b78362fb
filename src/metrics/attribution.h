// Which pods the kubelet gave each GPU device to, and the rule that decides whether a GPU process
// belongs to an active pod (docs/METRICS.md, "Zombie GPU processes").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "host/device_checkpoint.h"
#include "metrics/cgroup.h"

namespace gpunode::metrics {

// A device a container holds through a ResourceClaim (PodResources' dynamic_resources): the claim
// and the device as the DRA driver's pool names it.
struct DraClaimDevice {
  std::string claim_name;
  std::string claim_namespace;
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;    // the node's name, for gpunode's and NVIDIA's DRA drivers
  std::string device;  // "gpu-0", "gpu-0-mig-1g10gb-19-0"
  friend bool operator==(const DraClaimDevice&, const DraClaimDevice&) = default;
};

// One ContainerDevices entry of a PodResources List answer. The resource name does not matter:
// whatever resource an ID comes under (nvidia.com/gpu, .shared, mig-*, renamed), it names a device.
struct ListedDevices {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::vector<std::string> device_ids;
  // Set for a device from a ResourceClaim; then device_ids is empty.
  std::optional<DraClaimDevice> dra = {};
};

// One device ID handed to one container of an active pod.
struct DeviceAllocation {
  std::string namespace_name;
  std::string pod;
  std::string container;
  // "2" for the NVIDIA plugin's shared-GPU replica ID "GPU-…::2"; empty for a whole device.
  std::string replica;
  // UIDs the device manager checkpoint records for this (device ID, container); empty when the
  // checkpoint could not be read or does not have the allocation yet.
  std::vector<std::string> pod_uids;
  // Set when the device came through a ResourceClaim.
  std::optional<DraClaimDevice> dra;
};

class Attribution {
 public:
  Attribution() = default;
  Attribution(const std::vector<ListedDevices>& listed,
              const std::vector<host::CheckpointAllocation>& checkpoint);

  // The allocations of a GPU or MIG device, found by UUID ("GPU-…", "MIG-…") or, for a full GPU,
  // by the index IDs of the plugin's deviceIDStrategy=index. Empty when no active pod holds it.
  std::vector<const DeviceAllocation*> Of(std::string_view uuid,
                                          std::optional<unsigned> index) const;

  // The allocations of a DRA device of gpu.nvidia.com by its name in the pool ("gpu-0").
  std::vector<const DeviceAllocation*> OfDraDevice(std::string_view name) const;
  // Whether any active pod holds a device through a claim of gpu.nvidia.com.
  bool has_dra() const { return !by_dra_device_.empty(); }

 private:
  // Keyed by the device ID without its "::replica" suffix.
  absl::flat_hash_map<std::string, std::vector<DeviceAllocation>> by_device_;
  // Keyed by the DRA device's name.
  absl::flat_hash_map<std::string, std::vector<DeviceAllocation>> by_dra_device_;
};

enum class Ownership {
  kPod,      // runs in a container of an active pod that holds the device
  kOrphan,   // belongs to no active pod that holds the device: a zombie
  kUnknown,  // cannot be decided (no /proc entry, or a shared GPU without the checkpoint)
};

struct ProcessVerdict {
  Ownership ownership = Ownership::kUnknown;
  const DeviceAllocation* allocation = nullptr;  // the holder, for kPod
  std::string_view reason;                       // for kOrphan: not_in_pod, gpu_not_allocated,
                                                 // gpu_allocated_to_other_pod
};

// `cgroup` is the process's /proc/PID/cgroup identity (nullopt when /proc has no such process);
// `holders` the device's allocations from Attribution::Of.
ProcessVerdict ClassifyProcess(const std::optional<CgroupIdentity>& cgroup,
                               const std::vector<const DeviceAllocation*>& holders);

}  // namespace gpunode::metrics
