// The node's GPUs and MIG devices as NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu,
// cmd/gpu-kubelet-plugin/deviceinfo.go) announces them in a ResourceSlice, so that DeviceClasses
// and CEL selectors written for that driver select the same devices here: a GPU without MIG is
// "gpu-<minor>", each MIG device of a GPU with MIG on is
// "gpu-<minor>-mig-<profile>-<profileID>-<placementStart>" (with "-ci<id>" added where a GPU
// instance holds several compute instances, which NVIDIA's names cannot tell apart), with the
// same attribute and capacity names and value types.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"
#include "nlohmann/json.hpp"
#include "nvml/library.h"

namespace gpunode::gpu {

// The driver name of NVIDIA's DRA driver for GPUs: ResourceSlices, DeviceClasses, claims' results
// and the kubelet's registration all carry it.
inline constexpr char kDriverName[] = "gpu.nvidia.com";

// A device taint (KEP-5055) as a ResourceSlice's device holds it; the API server adds timeAdded.
struct DeviceTaint {
  std::string key;     // "gpu.nvidia.com/xid"
  std::string value;   // "62"; empty: none
  std::string effect;  // "NoSchedule" or "None"
  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

struct DraDevice {
  std::string name;  // "gpu-0", "gpu-0-mig-1g10gb-19-0"
  std::string uuid;  // the GPU's or the MIG device's
  // The GPU the device is, or the MIG device's parent.
  unsigned gpu_index = 0;
  unsigned gpu_minor = 0;  // /dev/nvidia<minor>
  std::string gpu_uuid;
  // Set for a MIG device: its GPU and compute instance ids, and its position among the GPU's MIG
  // devices (the <j> of NVML's "<i>:<j>").
  std::optional<unsigned> gi;
  std::optional<unsigned> ci;
  unsigned mig_position = 0;
  // As the ResourceSlice holds them: {"type": {"string": "gpu"}, "driverVersion": {"version":
  // "550.54.15"}, ...} and {"memory": {"value": "81559Mi"}}.
  nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
  nlohmann::ordered_json capacity = nlohmann::ordered_json::object();
  // What the health monitor found wrong with the device (device_health.h).
  std::vector<DeviceTaint> taints;

  bool is_mig() const { return gi.has_value(); }
};

struct DraNode {
  std::string driver_version;
  // In NVML index order, each GPU without MIG followed by nothing, each GPU with MIG on replaced
  // by its MIG devices (a GPU whose MIG devices are announced is not itself allocatable).
  std::vector<DraDevice> devices;
  // GPUs that could not be read (fallen off the bus), by NVML index: announced as nothing, said
  // in the log and by doctor.
  std::vector<unsigned> lost;
};

// Reads the devices from NVML; the PCIe root of each GPU from sysfs under `host`. Fails only when
// NVML cannot enumerate GPUs or reports no driver version.
absl::StatusOr<DraNode> ReadDraNode(const nvml::Library& library, const core::HostRoot& host);

// The name of each device ReadDraNode announces, by its UUID (GPU or MIG device), for those who
// meet a DRA device by its name alone (the exporter, in the kubelet's PodResources answer).
absl::StatusOr<std::map<std::string, std::string>> DraDeviceNames(const nvml::Library& library);

// A version as Kubernetes' version attributes require it (semantic versioning 2.0, which
// NVIDIA's driver gets from semver.MustParse): "12.4" -> "12.4.0", "580.65.06" -> "580.65.6".
// nullopt for text with no leading number.
std::optional<std::string> SemanticVersion(std::string_view text);

// The name NVIDIA's driver gives a MIG device: the profile without its dots and lower-cased to a
// DNS label ("1g.10gb+me" -> "1g10gb-me").
std::string MigDeviceName(unsigned gpu_minor, std::string_view profile, unsigned profile_id,
                          unsigned placement_start);

// go-nvlib's name of an nvmlDeviceArchitecture_t value (GetArchitectureAsString: "Hopper", "Ada
// Lovelace", "Orin"), "Unknown" for a value it does not know.
std::string ArchitectureName(unsigned architecture);

// A count of bytes (or of anything) as resource.Quantity prints a BinarySI value: the largest
// binary suffix that divides it exactly ("80Gi", "81559Mi"), else the plain number.
std::string BinaryQuantity(uint64_t value);

}  // namespace gpunode::gpu
