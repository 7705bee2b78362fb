// The extended resources the node offers under a config: which devices (whole GPUs, MIG devices,
// time-sliced replicas) each resource name advertises, with NVIDIA's names and device IDs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/rm/node.h"
#include "plugin_config/config.h"

namespace gpunode::plugin {

struct PluginDevice {
  std::string id;     // as advertised: the UUID, or "<UUID>::<n>" for replica n
  std::string uuid;   // GPU-... or MIG-...
  std::string index;  // "3", or "3:1" for a MIG device
  size_t gpu = 0;     // position of the (parent) GPU in Node::gpus
  std::optional<MigSlice> mig;
  std::optional<int> replica;
  std::optional<int> numa_node;
};

struct Resource {
  std::string name;         // "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"
  std::string socket_name;  // "nvidia-gpu.sock", as NVIDIA's plugin names it
  int replicas = 1;         // > 1: shared by time-slicing or MPS
  bool fail_requests_greater_than_one = false;
  bool mps = false;                   // shared through an MPS control daemon
  std::vector<PluginDevice> devices;  // by GPU index, MIG position, replica

  bool shared() const { return replicas > 1; }
};

// The resource name of a MIG profile under the mixed strategy: "nvidia.com/mig-1g.10gb"; NVIDIA
// writes a "+" of profile attributes as "." ("1g.10gb+me" -> "mig-1g.10gb.me").
std::string MigResourceName(const std::string& profile);

// Errors (the single strategy on a node whose MIG layout it cannot express, MPS on MIG devices)
// name the GPUs and the fix. `warnings` collects what is allowed but probably not meant.
absl::StatusOr<std::vector<Resource>> BuildResources(const Node& node,
                                                     const plugin_config::Config& config,
                                                     std::vector<std::string>* warnings);

}  // namespace gpunode::plugin
