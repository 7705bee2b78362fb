// `gpunode cluster why-pending POD`: for a Pending pod, the reason each node cannot take it, in
// the scheduler's own words where it has them, and a one-line verdict on whether waiting helps.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

// Stable reason codes (documented in docs/CLUSTER.md).
inline constexpr std::string_view kReasonInsufficient = "insufficient";
inline constexpr std::string_view kReasonExceedsCapacity = "exceeds-node-capacity";
inline constexpr std::string_view kReasonTaint = "untolerated-taint";
inline constexpr std::string_view kReasonAffinity = "node-affinity";
inline constexpr std::string_view kReasonUnschedulable = "unschedulable";

struct NodeReason {
  std::string code;
  std::string message;
  bool temporary = false;  // may clear by itself (pods finishing)
};

struct NodeFit {
  std::string node;
  std::vector<NodeReason> reasons;  // empty: the pod fits now
  std::string scheduler_reason;     // the first failing filter's message, as the scheduler says it
};

// Problems with the pod itself, whatever the nodes: validation rules for extended resources.
struct PodProblem {
  std::string code;  // requests-not-equal-limits, limit-missing, not-integer
  std::string message;
};

// Verdict codes: fits-now, wait, never, invalid, bound, not-pending.
struct Verdict {
  std::string code;
  std::string message;
};

struct PendingReport {
  std::string ns;
  std::string name;
  std::string phase;
  std::string node_name;
  // Effective NVIDIA requests: resource name and milli-units. The report owns all its strings,
  // so it outlives the snapshot it was computed from.
  std::vector<std::pair<std::string, int64_t>> requests;
  std::vector<PodProblem> problems;
  std::vector<NodeFit> nodes;     // by name
  std::string scheduler_message;  // "0/3 nodes are available: ..." as kube-scheduler words it
  std::string recorded_message;   // the PodScheduled condition's message, if the pod has one
  bool pod_affinity_ignored = false;
  Verdict verdict;

  // Exit status contract: 1 when the pod can never schedule as written (never, invalid).
  bool Failed() const { return verdict.code == "never" || verdict.code == "invalid"; }
};

// `snapshot` must carry PodDetails for the pod (ReadOptions::keep_pod_details). NotFound when the
// pod is not in it.
absl::StatusOr<PendingReport> WhyPending(const kube::ClusterSnapshot& snapshot, std::string_view ns,
                                         std::string_view name);

}  // namespace gpunode::cluster
