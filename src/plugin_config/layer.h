// One source of settings (flags, environment or config file): every setting it leaves unset
// falls through to the next source, in NVIDIA's order flag > environment > file > default.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plugin_config/config.h"

namespace gpunode::plugin_config {

struct ConfigLayer {
  std::optional<MigStrategy> mig_strategy;
  std::optional<bool> fail_on_init_error;
  std::optional<std::string> nvidia_driver_root;
  std::optional<std::string> nvidia_dev_root;
  std::optional<bool> pass_device_specs;
  std::optional<std::vector<DeviceListStrategy>> device_list_strategies;
  std::optional<DeviceIdStrategy> device_id_strategy;
  std::optional<std::string> cdi_annotation_prefix;
  std::optional<SharedAllocationPolicy> shared_allocation_policy;
  std::optional<std::string> mps_root;
  std::optional<std::string> nvidia_cdi_hook_path;
  std::optional<std::string> container_driver_root;
  std::optional<std::string> device_discovery_strategy;
};

// Applies `layers` from the highest precedence to the lowest onto the defaults of Config.
Config Merge(const std::vector<const ConfigLayer*>& layers, const TimeSlicing& time_slicing,
             const TimeSlicing& mps = {});

}  // namespace gpunode::plugin_config
