// `gpunode cluster drain NODE`: take a GPU node out of service for maintenance. Label it
// draining (and optionally cordon it), tell the GPU pods' owners (drain_notice.h), and wait for
// the GPU pods to finish on their own: a training run checkpoints and exits in its own time. Only
// a deadline the operator names (--evict-after) evicts GPU pods, through the Eviction API so
// PodDisruptionBudgets are respected.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

struct DrainOptions {
  std::string node;
  bool cordon = false;
  bool dry_run = false;
  bool delete_emptydir_data = false;  // evict pods whose emptyDir data would be lost
  bool force = false;                 // evict pods no controller will recreate
  bool all_pods = false;              // evict pods that hold no GPU too, like kubectl drain
  // How long GPU pods get to finish on their own before they are evicted. None (the default):
  // they are waited for until they end, and nothing holding a GPU is evicted.
  std::optional<absl::Duration> evict_after;
  // With all_pods and no evict_after: how long pods that hold no GPU get before eviction.
  absl::Duration other_pods_timeout = absl::Minutes(10);
  absl::Duration eviction_timeout = absl::Minutes(5);
  absl::Duration poll_interval = absl::Seconds(5);
  absl::Duration eviction_retry_interval = absl::Seconds(5);  // kubectl drain's pace
  absl::Duration progress_every = absl::Minutes(1);           // and whenever the pods change
  // The notice to the GPU pods' owners: whether to give it, why the node drains, who says so.
  bool tell_owners = true;
  std::string why = "for maintenance";
  std::string component = "gpunode-cluster-drain";
};

enum class PodAction {
  kDrain,            // wait for it, then evict it
  kSkipDaemonSet,    // the DaemonSet controller ignores cordons; evicting is pointless
  kSkipMirror,       // static pod: only the kubelet's manifest removes it
  kStays,            // holds no GPU (without --all-pods)
  kRefuseEmptyDir,   // needs --delete-emptydir-data
  kRefuseUnmanaged,  // needs --force
};

struct PlannedPod {
  const kube::PodView* pod = nullptr;  // into the snapshot the plan was made from
  PodAction action = PodAction::kDrain;
  // Every reason the drain refuses the pod, in the order `action` (the first of them) was chosen,
  // so that one dry run names all a user must decide, as `kubectl drain` does.
  std::vector<PodAction> refusals;
  std::string blocking_budget;  // a PodDisruptionBudget that allows no disruption right now
};

struct DrainPlan {
  std::string node;
  bool already_draining = false;
  std::vector<PlannedPod> pods;  // active pods on the node, by namespace/name
  bool budgets_known = false;    // whether PodDisruptionBudgets were read

  bool Refused() const;
};

// Decides what happens to each pod on the node. `snapshot` holds the node's pods with details.
DrainPlan PlanDrain(const kube::ClusterSnapshot& snapshot, const kube::NodeView& node,
                    const DrainOptions& options);

// The node's side of a drain as a JSON merge patch: nvidia.com/gpu.state=draining, when it began
// (kept from a drain already under way), and with `cordon` the cordon, recorded as the drain's
// only when the node was schedulable (so restore leaves a person's cordon in place).
nlohmann::json DrainNodePatch(const kube::NodeView& node, bool cordon, absl::Time now);

// Prints what a drain would do, without doing it.
void PrintPlan(const DrainPlan& plan, const DrainOptions& options, std::ostream& out);

struct DrainOutcome {
  enum class End {
    kDrained,     // every pod that had to go is gone
    kRefused,     // pods it may not evict without a flag: nothing was changed
    kPodsRemain,  // evictions blocked, failed or unfinished by the eviction timeout
  } end = End::kPodsRemain;
  std::string summary;
  bool complete() const { return end == End::kDrained; }
};

// Runs the drain against the API server, printing progress to `out`. An error Status means the
// drain could not run (unknown node, API errors); an incomplete outcome means it ran and pods
// remain (refused, or blocked by a budget until the eviction timeout).
absl::StatusOr<DrainOutcome> RunDrain(kube::Client& client, const DrainOptions& options,
                                      core::Env& env, std::ostream& out);

}  // namespace gpunode::cluster
