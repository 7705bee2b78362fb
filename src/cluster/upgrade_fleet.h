// What `gpunode cluster upgrade` reads back from the cluster at each step: the GPU nodes of the
// rollout, grouped into its pools in order, with the state their labels and annotations hold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/upgrade.h"
#include "cluster/upgrade_state.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

struct FleetNode {
  const kube::NodeView* view = nullptr;  // into Fleet::snapshot
  std::string name;
  std::string pool;
  std::optional<UpgradeState> state;  // none: the label is absent
  std::string driver;                 // nvidia.com/cuda.driver-version.full
  std::string target;                 // kUpgradeTargetAnnotation
  absl::Time since = absl::InfinitePast();
  absl::Time maintenance_started = absl::InfinitePast();
  absl::Time soak_started = absl::InfinitePast();
  absl::Time soak_passed = absl::InfinitePast();
  std::string failure;

  bool Is(UpgradeState s) const { return state == s; }
  // Out of service as the GPU Operator counts it: cordoned, or not Ready.
  bool Unavailable() const;
  // Its labels do not yet describe this rollout: no state, or a state for another target.
  bool NeedsReset(const std::string& driver_version) const;
};

struct FleetPool {
  std::string name;
  std::string target;  // the rollout's driver version
  std::vector<FleetNode*> nodes;

  bool Done() const;    // every node upgrade-done, for this target
  bool Soaked() const;  // and the soak passed
  bool Failed() const;  // some node upgrade-failed
};

struct Fleet {
  kube::ClusterSnapshot snapshot;
  std::vector<FleetNode> nodes;
  std::vector<FleetPool> pools;      // in rollout order
  std::vector<std::string> outside;  // GPU nodes the rollout leaves alone, and why
};

// Reads the rollout's nodes. InvalidArgument, naming the node and the fix, for labels the
// rollout cannot act on: an unknown state, a node mid-upgrade to another driver, a --pools entry
// with no nodes.
absl::StatusOr<Fleet> ReadFleet(kube::Client& client, const UpgradeOptions& options);

// The same from nodes already read (and limited to --selector): a snapshot file's.
absl::StatusOr<Fleet> FleetFrom(kube::ClusterSnapshot snapshot, const UpgradeOptions& options);

}  // namespace gpunode::cluster
