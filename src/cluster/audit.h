// `gpunode cluster audit`: per GPU node, what it has, what pods hold and what is free, and the
// findings an operator acts on (unhealthy or missing GPUs, zombie pods, accounting leaks, CPU work
// on GPU nodes, draining nodes that still receive GPU pods, GPU Jobs that never end or never go
// away, slow image pulls on GPU nodes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "cluster/finding.h"
#include "cluster/gpu_count.h"
#include "cluster/job_hygiene.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

// Finding ids (a contract: scripts match on them; documented in docs/CLUSTER.md).
inline constexpr std::string_view kFindingGpuUnhealthy = "gpu-unhealthy";
inline constexpr std::string_view kFindingGpuCountMismatch = "gpu-count-mismatch";
inline constexpr std::string_view kFindingGpuCountLabels = "gpu-count-labels-disagree";
inline constexpr std::string_view kFindingZombiePod = "zombie-pod";
inline constexpr std::string_view kFindingAccountingLeak = "gpu-accounting-leak";
inline constexpr std::string_view kFindingUntaintedGpuNode = "gpu-node-untainted";
inline constexpr std::string_view kFindingCpuPodsOnGpuNode = "cpu-pods-on-gpu-node";
inline constexpr std::string_view kFindingDrainingNodeNewPods = "draining-node-new-gpu-pods";

// One NVIDIA resource on one node, in milli-units.
struct ResourceUsage {
  std::string resource;
  int64_t capacity = 0;
  int64_t allocatable = 0;
  int64_t requested = 0;  // by active pods bound to the node

  int64_t Free() const { return allocatable - requested; }
};

// Owns its strings, so a report outlives the snapshot it was computed from.
struct NodeSummary {
  std::string name;
  kube::ConditionStatus ready = kube::ConditionStatus::kUnknown;
  bool unschedulable = false;
  std::optional<std::string> gpu_state;  // nvidia.com/gpu.state
  std::optional<int64_t> gpu_count;      // physical GPUs (ExpectedGpus::count)
  // The GPUs gpu.missing names by PCI address ("0000:17:00.0"), and how many more it counts
  // without one (no room in the label, or the PCI bus not read).
  std::vector<std::string> missing_gpus;
  int64_t missing_gpus_unnamed = 0;
  std::vector<ResourceUsage> resources;  // nvidia.com/gpu first, then by name
  int gpu_pods = 0;                      // active pods holding NVIDIA resources

  // nvidia.com/gpu, zero when the node has none.
  ResourceUsage Gpu() const;
};

struct AuditReport {
  std::vector<NodeSummary> nodes;  // GPU nodes only, by name
  std::vector<Finding> findings;   // errors first, then warnings, then by id and object
  size_t node_count = 0;
  size_t pod_count = 0;
  size_t active_gpu_pods = 0;

  int Count(Severity severity) const;
};

struct AuditOptions {
  HygieneOptions hygiene;                        // Jobs, deadlines, long-running and idle pods
  absl::Duration slow_pull = absl::Seconds(60);  // slow-image-pull
  CountLabel count_label;                        // the operator's own GPU count label
};

AuditReport Audit(const kube::ClusterSnapshot& snapshot, const AuditOptions& options = {});

}  // namespace gpunode::cluster
