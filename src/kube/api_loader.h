// Reads nodes, pods, PodDisruptionBudgets, Jobs, CronJobs and pod events from the API server into a
// ClusterSnapshot, one list page at a time through the same streaming reader snapshot files use.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"
#include "kube/snapshot_reader.h"

namespace gpunode::kube {

struct ApiQuery {
  bool all_nodes = true;
  std::string node_name;            // when set (and !all_nodes): GET just this node
  std::string node_label_selector;  // with all_nodes: only the nodes it selects
  bool pods = true;
  std::string pod_field_selector;  // e.g. spec.nodeName=gpu-a
  std::string pod_label_selector;  // e.g. app=train
  bool pdbs = false;
  // batch/v1 Jobs and CronJobs, and the kubelet's image pull events (core/v1 Events of pods). A
  // 403 on these leaves them out and is reported in `skipped`: audit still runs.
  bool jobs = false;
  bool events = false;
  int page_size = 500;
};

// What a load could not read for lack of permission, one line each ("jobs: ...").
struct LoadNotes {
  std::vector<std::string> skipped;
};

absl::StatusOr<ClusterSnapshot> LoadFromApi(Client& client, const ApiQuery& query,
                                            const ReadOptions& options = {},
                                            LoadNotes* notes = nullptr);

}  // namespace gpunode::kube
