// The DRA plugin's state file (<kubelet>/plugins/gpu.nvidia.com/gpunode-state.json): the devices
// it last announced in the node's ResourceSlice (with their taints), the pool's generation, and
// whether the API server took the last publication. The plugin writes it after every attempt;
// doctor reads it to compare the announced devices with what NVML sees, without API access.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::host {

inline constexpr char kDraPluginStateFile[] = "gpunode-state.json";

struct AnnouncedDevice {
  std::string name;  // "gpu-0"
  std::string uuid;
  std::vector<std::string> taints;  // "gpu.nvidia.com/xid=62:NoSchedule"
  friend bool operator==(const AnnouncedDevice&, const AnnouncedDevice&) = default;
};

struct DraPluginState {
  std::string pool;  // the node's name
  int64_t generation = 0;
  // Empty when the API server holds exactly `devices`; else why the last publication failed.
  std::string publish_error;
  std::vector<AnnouncedDevice> devices;
  friend bool operator==(const DraPluginState&, const DraPluginState&) = default;
};

std::string FormatDraPluginState(const DraPluginState& state);
// An error names what is malformed.
absl::StatusOr<DraPluginState> ParseDraPluginState(std::string_view json);

}  // namespace gpunode::host
