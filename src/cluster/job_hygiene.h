// Audit findings about GPU work that never ends or never goes away: Jobs, CronJobs and bare pods
// without deadlines or TTLs, Jobs whose retries node drains use up, and GPU pods that run too
// long or sit idle.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "cluster/finding.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

inline constexpr std::string_view kFindingPodNoDeadline = "gpu-pod-no-deadline";
inline constexpr std::string_view kFindingJobNoTtl = "gpu-job-no-ttl";
inline constexpr std::string_view kFindingJobRetriesOnDisruption = "gpu-job-retries-on-disruption";
inline constexpr std::string_view kFindingPodLongRunning = "gpu-pod-long-running";
inline constexpr std::string_view kFindingPodIdle = "gpu-pod-idle";

// The highest GPU utilization (percent) of one pod's GPUs over the idle window.
struct PodUtilization {
  std::string ns;
  std::string pod;
  double max_percent = 0;
};

// What Prometheus said about GPU utilization, for gpu-pod-idle.
struct IdleEvidence {
  absl::Duration window = absl::Minutes(30);  // --idle-for
  double below_percent = 5;                   // --idle-util
  std::string query;                          // the PromQL, quoted in findings
  std::vector<PodUtilization> pods;
};

struct HygieneOptions {
  absl::Time now;  // the audit's time: ages and deadlines are measured to it
  std::optional<absl::Duration> max_gpu_pod_age;  // gpu-pod-long-running; off when unset
  std::vector<std::string> age_namespaces;        // where it applies; empty: everywhere
  std::optional<IdleEvidence> idle;               // gpu-pod-idle; off when unset
};

void AddJobHygieneFindings(const kube::ClusterSnapshot& snapshot, const HygieneOptions& options,
                           std::vector<Finding>& findings);

}  // namespace gpunode::cluster
