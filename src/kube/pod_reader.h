// Reads a Pod object of a snapshot into a PodView (what audit needs of every pod) and, for the
// pods ReadOptions::keep_pod_details picks, its PodDetails (labels, scheduling constraints,
// containers, the scheduler's verdict). Part of the snapshot reader.
#pragma once

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"
#include "kube/snapshot_reader.h"

namespace gpunode::kube {

class PodReader {
 public:
  explicit PodReader(const ReadOptions& options) : options_(&options) {}

  // Reads the pod `obj` (not yet iterated) and appends it to snap.pods; errors as in
  // json_walk.h, and a pod without a name (a pod template) is one.
  absl::Status Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

 private:
  absl::Status ReadMetadata(od::value& metadata, const JsonWalk& walk);
  absl::Status ReadSpec(od::value& spec, const JsonWalk& walk);
  absl::Status ReadVolumes(od::value& volumes, const JsonWalk& walk);
  absl::Status ReadStatus(od::value& status, const JsonWalk& walk);
  absl::Status ReadConditions(od::value& conditions, const JsonWalk& walk);
  void Commit(ClusterSnapshot& snap) const;

  const ReadOptions* options_;
  bool details_wanted_ = false;  // options_ asks for details: read the fields only they need
  // Reused across pods; points into the input until Commit copies it. The containers are read
  // for every pod, to compute its GPU requests.
  PodView pod_;
  PodDetails details_;
};

}  // namespace gpunode::kube
