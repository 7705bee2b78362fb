// The node as the device plugin needs it: each GPU that answers (UUID, index, minor number,
// NUMA node, MIG devices) and the link score of every pair, read once at start so that no
// request waits on NVML.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"
#include "gpu/node_snapshot.h"
#include "health/health_monitor.h"
#include "nvml/library.h"
#include "plugin/allocation/link_score.h"

namespace gpunode::plugin {

struct MigSlice {
  std::string uuid;
  std::string profile;  // "1g.10gb", "1c.3g.40gb"
  unsigned gi = 0;
  unsigned ci = 0;
  unsigned position = 0;  // order among the GPU's MIG devices: the <j> of index "<i>:<j>"
};

struct NodeGpu {
  unsigned index = 0;  // NVML index
  std::string uuid;
  unsigned minor = 0;  // /dev/nvidia<minor>
  std::optional<int> numa_node;
  bool mig_enabled = false;
  std::vector<MigSlice> migs;
};

struct Node {
  // GPUs that answered at start, in NVML index order; a GPU that had fallen off the bus is left
  // out (it has no UUID to advertise).
  std::vector<NodeGpu> gpus;
  // scores[a][b] for positions a, b in `gpus`.
  ScoreMatrix scores;
};

// Builds the Node from a snapshot; `pcie_level(a, b)` gives the PCIe common ancestor of two
// NVLink-connected GPUs (positions in the snapshot), whose label hides it.
absl::StatusOr<Node> NodeFromSnapshot(
    const gpu::NodeSnapshot& snapshot, const std::vector<std::optional<unsigned>>& minors,
    const std::function<std::optional<nvmlGpuTopologyLevel_t>(size_t, size_t)>& pcie_level);

absl::StatusOr<Node> ReadNode(const nvml::Library& library, const core::HostRoot& host);

// The GPUs and MIG devices the health monitor watches for the plugin, in `node.gpus` order (so
// that board positions are positions in `node.gpus`).
std::vector<health::MonitoredGpu> MonitoredGpus(const Node& node);

}  // namespace gpunode::plugin
