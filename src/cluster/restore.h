// `gpunode cluster restore NODE`: bring a drained GPU node back, but only when it has all its
// GPUs again (the post-maintenance check): uncordon it and drop the draining label.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/node_view.h"

namespace gpunode::cluster {

struct RestoreOptions {
  std::string node;
  bool dry_run = false;
};

struct RestoreCheck {
  bool ok = false;
  std::string message;  // the numbers, either way
};

// Compares the node's nvidia.com/gpu capacity with its physical GPU count (nvidia.com/gpu.count,
// times nvidia.com/gpu.replicas under time-slicing).
RestoreCheck CheckRestore(const kube::NodeView& node);

struct RestoreOutcome {
  bool restored = false;
  std::string message;
};

absl::StatusOr<RestoreOutcome> RunRestore(kube::Client& client, const RestoreOptions& options,
                                          std::ostream& out);

}  // namespace gpunode::cluster
