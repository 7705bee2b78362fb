// A Container Device Interface (CDI) spec for the node's GPUs: what a CDI-aware runtime injects
// for the names the cdi-annotations and cdi-cri strategies hand out
// ("k8s.device-plugin.nvidia.com/gpu=<UUID or index>").
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "plugin/rm/node.h"
#include "plugin/server/host_devices.h"

namespace gpunode::plugin {

inline constexpr const char* kCdiVersion = "0.5.0";

struct CdiOptions {
  std::string kind = "k8s.device-plugin.nvidia.com/gpu";
  std::string dev_root = "/";  // prefix of the device nodes' host paths
};

// A device per GPU index and per UUID, one per MIG device ("<i>:<j>" and its MIG UUID) and "all";
// control devices and NVIDIA_VISIBLE_DEVICES=void (so the legacy hook injects nothing more) as
// edits common to every device.
nlohmann::json CdiSpec(const Node& node, const HostDevices& host, const CdiOptions& options);

// The file name CDI registries expect: "<vendor>-<class>.json", e.g.
// "k8s.device-plugin.nvidia.com-gpu.json".
std::string CdiSpecFileName(const std::string& kind);

// Writes the spec atomically into `directory`.
absl::Status WriteCdiSpec(const std::string& directory, const nlohmann::json& spec,
                          const std::string& kind);

}  // namespace gpunode::plugin
