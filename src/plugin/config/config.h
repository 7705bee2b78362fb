// The device plugin's configuration: the settings of NVIDIA's k8s-device-plugin (config file
// version v1, its flags and its environment variables) that gpunode acts on, after precedence.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpunode::plugin {

enum class MigStrategy { kNone, kSingle, kMixed };
enum class DeviceListStrategy { kEnvvar, kVolumeMounts, kCdiAnnotations, kCdiCri };
enum class DeviceIdStrategy { kUuid, kIndex };
enum class SharedAllocationPolicy { kDistributed, kPacked };

struct TimeSlicedResource {
  std::string name;  // always domain-qualified: "nvidia.com/gpu"
  int replicas = 0;
};

struct TimeSlicing {
  bool rename_by_default = false;
  bool fail_requests_greater_than_one = false;
  std::vector<TimeSlicedResource> resources;
};

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

  // The root DeviceSpec host paths start with.
  const std::string& dev_root() const {
    return nvidia_dev_root.empty() ? nvidia_driver_root : nvidia_dev_root;
  }
  bool Uses(DeviceListStrategy strategy) const;
};

// Names as they appear in the config file, flags and environment ("mixed", "volume-mounts", ...).
absl::StatusOr<MigStrategy> ParseMigStrategy(absl::string_view text);
absl::StatusOr<DeviceListStrategy> ParseDeviceListStrategy(absl::string_view text);
absl::StatusOr<DeviceIdStrategy> ParseDeviceIdStrategy(absl::string_view text);
absl::StatusOr<SharedAllocationPolicy> ParseSharedAllocationPolicy(absl::string_view text);
std::string Name(MigStrategy value);
std::string Name(DeviceListStrategy value);
std::string Name(DeviceIdStrategy value);
std::string Name(SharedAllocationPolicy value);

// Go's strconv.ParseBool, which NVIDIA's flags and environment variables use: 1 t T TRUE true
// True 0 f F FALSE false False.
absl::StatusOr<bool> ParseGoBool(absl::string_view text);

// The config after precedence, as one line of JSON (logged at every start, like NVIDIA's
// "Running with config:").
std::string ConfigJson(const Config& config);

}  // namespace gpunode::plugin
