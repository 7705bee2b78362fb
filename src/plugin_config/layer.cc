#include "plugin_config/layer.h"

namespace gpunode::plugin_config {
namespace {

template <typename T>
void Take(T& out, const std::vector<const ConfigLayer*>& layers,
          std::optional<T> ConfigLayer::*field) {
  for (const ConfigLayer* layer : layers) {
    if (layer->*field) {
      out = *(layer->*field);
      return;
    }
  }
}

}  // namespace

Config Merge(const std::vector<const ConfigLayer*>& layers, const TimeSlicing& time_slicing,
             const TimeSlicing& mps) {
  Config config;
  Take(config.mig_strategy, layers, &ConfigLayer::mig_strategy);
  Take(config.fail_on_init_error, layers, &ConfigLayer::fail_on_init_error);
  Take(config.nvidia_driver_root, layers, &ConfigLayer::nvidia_driver_root);
  Take(config.nvidia_dev_root, layers, &ConfigLayer::nvidia_dev_root);
  Take(config.pass_device_specs, layers, &ConfigLayer::pass_device_specs);
  Take(config.device_list_strategies, layers, &ConfigLayer::device_list_strategies);
  Take(config.device_id_strategy, layers, &ConfigLayer::device_id_strategy);
  Take(config.cdi_annotation_prefix, layers, &ConfigLayer::cdi_annotation_prefix);
  Take(config.shared_allocation_policy, layers, &ConfigLayer::shared_allocation_policy);
  Take(config.mps_root, layers, &ConfigLayer::mps_root);
  Take(config.nvidia_cdi_hook_path, layers, &ConfigLayer::nvidia_cdi_hook_path);
  Take(config.container_driver_root, layers, &ConfigLayer::container_driver_root);
  Take(config.device_discovery_strategy, layers, &ConfigLayer::device_discovery_strategy);
  config.time_slicing = time_slicing;
  config.mps = mps;
  return config;
}

}  // namespace gpunode::plugin_config
