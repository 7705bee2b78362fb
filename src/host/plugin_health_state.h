// The device plugin's health state file (<kubelet dir>/device-plugins/gpunode-health.json): the
// GPUs and MIG devices it holds Unhealthy, why, and what their recovery waits for. The plugin
// writes it on every change; doctor reads it, because ListAndWatch carries no reasons.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::host {

inline constexpr char kPluginHealthStateFile[] = "gpunode-health.json";

struct UnhealthyDevice {
  unsigned index = 0;                       // the GPU's NVML index
  std::string uuid;                         // the GPU's
  std::optional<unsigned> gpu_instance_id;  // set for a MIG device
  std::optional<unsigned> compute_instance_id;
  std::string reason;               // e.g. "XID 48 (Double Bit ECC Error)"
  std::vector<std::string> faults;  // memory, gpu-lost, nvlink, other
  // Set when it stays Unhealthy until the plugin restarts: why (flapping, a remapper failure).
  std::string held;
  std::string waiting_for;  // the evidence its recovery still needs; empty when not known
  bool recovers = true;     // false when held, or recovery is off (--health-recovery-period 0)
};

struct PluginHealthState {
  std::vector<UnhealthyDevice> unhealthy;
};

std::string FormatPluginHealthState(const PluginHealthState& state);
// An error names what is malformed.
absl::StatusOr<PluginHealthState> ParsePluginHealthState(std::string_view json);

}  // namespace gpunode::host
