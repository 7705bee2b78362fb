// Reads nodes, pods and PodDisruptionBudgets from the API server into a ClusterSnapshot, one
// list page at a time through the same streaming reader snapshot files use.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"
#include "kube/snapshot_reader.h"

namespace gpunode::kube {

struct ApiQuery {
  bool all_nodes = true;
  std::string node_name;  // when set (and !all_nodes): GET just this node
  bool pods = true;
  std::string pod_field_selector;  // e.g. spec.nodeName=gpu-a
  bool pdbs = false;
  int page_size = 500;
};

absl::StatusOr<ClusterSnapshot> LoadFromApi(Client& client, const ApiQuery& query,
                                            const ReadOptions& options = {});

}  // namespace gpunode::kube
