// The labels NVIDIA's GPU feature discovery (GFD) puts on a node, computed the way GFD does from
// the node's GPUs, the device plugin's sharing config and the MIG strategy.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "labels/node_facts.h"
#include "labels/sharing.h"
#include "plugin_config/config.h"

namespace gpunode::labels {

// Label key (with its nvidia.com/ prefix) -> value, sorted for stable output.
using Labels = std::map<std::string, std::string>;

// When the labels were written: the one label that changes on every pass.
inline constexpr char kTimestampLabel[] = "nvidia.com/gfd.timestamp";

struct GfdOptions {
  plugin_config::MigStrategy mig_strategy = plugin_config::MigStrategy::kNone;
  SharingConfig sharing;
  std::string machine_type;          // DMI product name; "" when it could not be read
  std::optional<int64_t> timestamp;  // gfd.timestamp (unix seconds); empty with --no-timestamp
};

// Every value is sanitized to Kubernetes label rules.
Labels GfdLabels(const NodeFacts& facts, const GfdOptions& options);

// GFD's family of a compute capability: "ampere", "hopper", ... ("undefined" when unknown).
std::string GpuFamily(int major, int minor);

}  // namespace gpunode::labels
