// The scheduler's node filters that decide where a GPU pod can go, written the way
// kube-scheduler evaluates them (TaintToleration, NodeAffinity, NodeUnschedulable), so that
// why-pending and the webhook agree with the real scheduler.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/node_view.h"
#include "kube/pod_view.h"

namespace gpunode::cluster {

// Whether `toleration` tolerates `taint` (key, operator Exists/Equal, value, effect).
bool Tolerates(const kube::Toleration& toleration, const kube::Taint& taint);

// Taints with effect NoSchedule or NoExecute that none of `tolerations` tolerates, in the node's
// order: the scheduler reports the first.
std::vector<kube::Taint> UntoleratedTaints(const std::vector<kube::Toleration>& tolerations,
                                           const kube::NodeView& node);

// spec.nodeSelector and the required node affinity terms; false when either excludes the node.
bool MatchesNodeSelectorAndAffinity(const kube::PodDetails& pod, const kube::NodeView& node);

// "{key: value}", the scheduler's rendering of a taint in its messages.
std::string TaintText(const kube::Taint& taint);

// Whether the pod's tolerations let it onto a cordoned node.
bool ToleratesUnschedulable(const std::vector<kube::Toleration>& tolerations);

}  // namespace gpunode::cluster
