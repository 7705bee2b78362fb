// Reads a PodDisruptionBudget object of a snapshot (its selector and status counts) into a
// PdbView. Part of the snapshot reader.
#pragma once

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

// Reads the budget `obj` (not yet iterated), appends it to snap.pdbs and sets snap.has_pdbs;
// errors as in json_walk.h, and a budget without a name is one.
absl::Status ReadPdb(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

}  // namespace gpunode::kube
