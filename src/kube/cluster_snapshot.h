// Nodes, pods, PodDisruptionBudgets, Jobs, CronJobs and image pull events as gpunode keeps them,
// from a snapshot file or the API.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kube/image_pull_event.h"
#include "kube/job_view.h"
#include "kube/node_view.h"
#include "kube/pdb_view.h"
#include "kube/pod_view.h"
#include "kube/string_arena.h"

namespace gpunode::kube {

struct ClusterSnapshot {
  // Owns every string the views point to; heap-held so moving the snapshot keeps views valid.
  std::unique_ptr<StringArena> strings = std::make_unique<StringArena>();
  std::vector<NodeView> nodes;
  std::vector<PodView> pods;
  std::vector<PdbView> pdbs;
  std::vector<JobView> jobs;  // Jobs and CronJobs
  std::vector<ImagePullEvent> image_pulls;
  // Whether the input carried PodDisruptionBudgets at all: a snapshot without them cannot say
  // that none would block a drain.
  bool has_pdbs = false;

  const NodeView* FindNode(std::string_view name) const {
    for (const NodeView& n : nodes) {
      if (n.name == name) return &n;
    }
    return nullptr;
  }
  const PodView* FindPod(std::string_view ns, std::string_view name) const {
    for (const PodView& p : pods) {
      if (p.name == name && p.ns == ns) return &p;
    }
    return nullptr;
  }
};

}  // namespace gpunode::kube
