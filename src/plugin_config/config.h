// The device plugin's configuration: the settings of NVIDIA's k8s-device-plugin (config file
// version v1, its flags and its environment variables) that gpunode acts on, after precedence.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpunode::plugin_config {

enum class MigStrategy { kNone, kSingle, kMixed };
enum class DeviceListStrategy { kEnvvar, kVolumeMounts, kCdiAnnotations, kCdiCri };
enum class DeviceIdStrategy { kUuid, kIndex };
enum class SharedAllocationPolicy { kDistributed, kPacked };

struct TimeSlicedResource {
  std::string name;  // always domain-qualified: "nvidia.com/gpu"
  int replicas = 0;
};

// sharing.timeSlicing or sharing.mps: both sections hold the same keys.
struct TimeSlicing {
  bool rename_by_default = false;
  // Unset in the file: false for timeSlicing, true for mps (NVIDIA's defaults).
  bool fail_requests_greater_than_one = false;
  std::vector<TimeSlicedResource> resources;
};

// How the replicas of a shared resource reach the GPU: by turns (time-slicing) or side by side
// through NVIDIA's Multi-Process Service, whose control daemon runs per resource.
enum class SharingStrategy { kNone, kTimeSlicing, kMps };

struct Config {
  MigStrategy mig_strategy = MigStrategy::kNone;
  bool fail_on_init_error = true;
  std::string nvidia_driver_root = "/";
  // Prefix of every DeviceSpec host path; empty means the driver root, as in NVIDIA's plugin.
  std::string nvidia_dev_root;
  bool pass_device_specs = false;
  std::vector<DeviceListStrategy> device_list_strategies = {DeviceListStrategy::kEnvvar};
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::kUuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  SharedAllocationPolicy shared_allocation_policy = SharedAllocationPolicy::kDistributed;
  TimeSlicing time_slicing;
  // sharing.mps; when it has resources it wins over time_slicing, as in NVIDIA's plugin.
  TimeSlicing mps;
  // Where the MPS control daemons keep their pipe and log directories (flags.mpsRoot); the host
  // path, required with sharing.mps.
  std::string mps_root;
  // nvidia-cdi-hook as the runtime runs it, named by the CDI spec's hooks
  // (flags.plugin.nvidiaCTKPath, --nvidia-cdi-hook-path).
  std::string nvidia_cdi_hook_path = "/usr/bin/nvidia-cdi-hook";
  // Where the driver root is mounted inside the plugin's container
  // (flags.plugin.containerDriverRoot); empty: the driver is found under nvidiaDriverRoot.
  std::string container_driver_root;
  std::string device_discovery_strategy = "auto";  // auto or nvml

  // The root DeviceSpec host paths start with. DeviceSpec host paths start with.
  const std::string& dev_root() const {
    return nvidia_dev_root.empty() ? nvidia_driver_root : nvidia_dev_root;
  }
  bool Uses(DeviceListStrategy strategy) const;
  SharingStrategy sharing_strategy() const;
  // The section of the sharing strategy in force; null without sharing.
  const TimeSlicing* shared() const;
};

// "none", "time-slicing" or "mps", as GFD's nvidia.com/gpu.sharing-strategy label writes it.
std::string Name(SharingStrategy value);

// Names as they appear in the config file, flags and environment ("mixed", "volume-mounts", ...).
absl::StatusOr<MigStrategy> ParseMigStrategy(absl::string_view text);
absl::StatusOr<DeviceListStrategy> ParseDeviceListStrategy(absl::string_view text);
absl::StatusOr<DeviceIdStrategy> ParseDeviceIdStrategy(absl::string_view text);
absl::StatusOr<SharedAllocationPolicy> ParseSharedAllocationPolicy(absl::string_view text);
std::string Name(MigStrategy value);
std::string Name(DeviceListStrategy value);
std::string Name(DeviceIdStrategy value);
std::string Name(SharedAllocationPolicy value);

// "auto" and "nvml" are accepted; NVIDIA's "tegra" (and GFD's "vfio") are refused as features
// gpunode does not have.
absl::Status CheckDeviceDiscoveryStrategy(absl::string_view text);

// The refusal of a setting of NVIDIA's that turns on a feature gpunode does not have
// ("gdsEnabled", "mofedEnabled", "gdrcopyEnabled", "imexChannelIDs", "imexRequired"):
// "not supported by gpunode: GPUDirect Storage (gdsEnabled)".
std::string UnsupportedFeature(absl::string_view setting);

// Go's strconv.ParseBool, which NVIDIA's flags and environment variables use: 1 t T TRUE true
// True 0 f F FALSE false False.
absl::StatusOr<bool> ParseGoBool(absl::string_view text);

// The config after precedence, as one line of JSON (logged at every start, like NVIDIA's
// "Running with config:").
std::string ConfigJson(const Config& config);

}  // namespace gpunode::plugin_config
