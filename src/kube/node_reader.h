// Reads a Node object of a snapshot (metadata, spec and status: labels, gpunode's annotations,
// taints, cordon, readiness and NVIDIA capacity) into a NodeView. Part of the snapshot reader.
#pragma once

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

class NodeReader {
 public:
  // Reads the node `obj` (not yet iterated) and appends it to snap.nodes; errors as in
  // json_walk.h, and a node without a name is one.
  absl::Status Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

 private:
  absl::Status ReadMetadata(od::value& metadata, const JsonWalk& walk);
  absl::Status ReadAnnotations(od::value& annotations, const JsonWalk& walk);
  absl::Status ReadSpec(od::value& spec, const JsonWalk& walk);
  absl::Status ReadStatus(od::value& status, const JsonWalk& walk);
  void Commit(ClusterSnapshot& snap) const;

  // Reused across nodes; points into the input until Commit copies it.
  NodeView node_;
};

}  // namespace gpunode::kube
