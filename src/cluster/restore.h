// `gpunode cluster restore NODE`: bring a drained GPU node back, but only when every GPU it
// physically has is back and healthy (the post-maintenance check), and undo only what `gpunode
// cluster drain` did: its label and annotations, and the cordon it set (one a person set stays).
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "cluster/gpu_count.h"
#include "kube/client.h"
#include "kube/node_view.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

struct RestoreOptions {
  std::string node;
  bool dry_run = false;
  bool force = false;  // restore although the GPU check fails (named in the output)
  CountLabel count_label;
  // Runs after the GPU check and before anything is changed (`--verify`); false refuses.
  std::function<absl::StatusOr<bool>(std::ostream&)> verify;
};

struct RestoreCheck {
  bool ok = false;
  std::string message;  // the numbers, either way
};

// Healthy GPUs (nvidia.com/gpu allocatable, and capacity) must equal the physical count (the
// operator's count label, else nvidia.com/gpu.count, times nvidia.com/gpu.replicas under
// time-slicing; on MIG nodes, some capacity and none unhealthy), the two count labels agree, and
// gpu.missing names no GPU (the message names those it does, by PCI address).
RestoreCheck CheckRestore(const kube::NodeView& node, const CountLabel& label = {});

// What restore changes: only what `gpunode cluster drain` left on the node.
struct RestoreUndo {
  bool drained = false;            // drain's label or annotations are on the node
  bool uncordon = false;           // drain cordoned it (kDrainCordonedAnnotation)
  bool cordoned_by_other = false;  // unschedulable, but not by drain: stays so
  nlohmann::json patch;            // the JSON merge patch; null when there is nothing to undo
};
RestoreUndo PlanUndo(const kube::NodeView& node);

// One line describing `undo`, e.g. "remove nvidia.com/gpu.state=draining and uncordon gpu-a".
std::string DescribeUndo(const kube::NodeView& node, const RestoreUndo& undo);

struct RestoreOutcome {
  bool restored = false;  // false: refused (the message says why)
  std::string message;
};

// Checks, runs `verify` when set, then patches the node (live) or says what it would do
// (dry_run). A node's `node` view is what the decision is made on.
absl::StatusOr<RestoreOutcome> Restore(kube::Client* client, const kube::NodeView& node,
                                       const RestoreOptions& options, std::ostream& out);

// Reads the node from the API server, then Restore.
absl::StatusOr<RestoreOutcome> RunRestore(kube::Client& client, const RestoreOptions& options,
                                          std::ostream& out);

}  // namespace gpunode::cluster
