// Tells the owners of the GPU pods on a node taken out of service, so that their tooling can
// checkpoint and exit before anything is evicted: a Warning Event (reason NodeDraining) on each
// pod and on each controller up its ownership chain (a pod's Job and the JobSet that made it, a
// ReplicaSet and its Deployment, ...), and on each pod the annotations gpunode.io/node-draining
// (the node) and, when the operator set one, gpunode.io/eviction-deadline.
//
// A pod is told once: one whose annotations already say this node and this deadline is skipped,
// so a drain that is run again, or an upgrade that looks at the node on every pass, does not
// repeat itself. Telling is best effort: a refused request (RBAC without events, an owner kind
// it may not read) is reported once and the drain goes on.
//
// Not thread-safe: one DrainNotifier per drain or rollout, used from its one thread.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "kube/client.h"
#include "kube/pod_view.h"

namespace gpunode::cluster {

struct DrainNotice {
  std::string node;
  std::string why;        // "for maintenance", "for its driver upgrade to 550.90.07"
  std::string component;  // the reporter: gpunode-cluster-drain, gpunode-cluster-upgrade
  std::optional<absl::Time> deadline;  // when pods still running are evicted; none: never
};

// "node gpu-a is draining for maintenance (...)": the words of the Events, for a pod or, with
// `owner_kind`, for its owner ("a pod of this Job runs on node gpu-a, which is draining ...").
std::string NoticeMessage(const DrainNotice& notice, std::string_view owner_kind);

class DrainNotifier {
 public:
  // Tells the pods in `pods` (with details: the snapshot read with keep_pod_details) that were
  // not told before, and their owners. Returns the problems seen for the first time, one line
  // each, for the caller to print.
  std::vector<std::string> Tell(kube::Client& client, const std::vector<const kube::PodView*>& pods,
                                const DrainNotice& notice, absl::Time now);

  int pods_told() const { return pods_told_; }
  int owners_told() const { return static_cast<int>(owners_told_.size()); }

 private:
  void TellOwners(kube::Client& client, const kube::PodView& pod, const DrainNotice& notice,
                  absl::Time now);
  void Problem(std::string what);

  int pods_told_ = 0;
  // node + pod + uid: a pod whose annotation could not be written is still told only once.
  std::set<std::string> told_;
  std::set<std::string> owners_told_;  // node + owner, so an owner is told once per node
  std::set<std::string> problems_said_;
  std::vector<std::string> new_problems_;
};

}  // namespace gpunode::cluster
