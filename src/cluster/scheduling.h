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

// Why `node` fails spec.nodeSelector or the required node affinity, naming the key, the value
// wanted and the node's, e.g. `nodeSelector nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB: the
// node has NVIDIA-H100-80GB-HBM3`, each affinity term's first failing requirement (`affinity
// term 1: accelerator In [a10]: the node has nvidia-a10`), and where the wanted key or value is
// likely a typo, the nearest one that exists on `nodes` (`; did you mean nvidia-a10, on 3
// node(s)?`). Empty when the node matches.
std::string NodeSelectionMismatch(const kube::PodDetails& pod, const kube::NodeView& node,
                                  const std::vector<kube::NodeView>& nodes);

// A toleration of the pod that nearly tolerates `taint` and why it does not: the same key with
// another effect or value, or a key close to the taint's (`nvidia` for `nvidia.com/gpu`). Empty
// when no toleration comes near.
std::string TolerationNearMiss(const std::vector<kube::Toleration>& tolerations,
                               const kube::Taint& taint);

// "{key: value}", the scheduler's rendering of a taint in its messages.
std::string TaintText(const kube::Taint& taint);

// Whether the pod's tolerations let it onto a cordoned node.
bool ToleratesUnschedulable(const std::vector<kube::Toleration>& tolerations);

}  // namespace gpunode::cluster
