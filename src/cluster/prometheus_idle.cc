#include "cluster/prometheus_idle.h"

#include "cluster/prometheus_query.h"
#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

// The series of GPUs allocated to pods; the others (no pod labels) say nothing about a pod.
std::vector<PodUtilization> PodsOf(std::vector<PromSample> samples) {
  std::vector<PodUtilization> out;
  for (PromSample& sample : samples) {
    PodUtilization u;
    u.ns = std::move(sample.labels["namespace"]);
    u.pod = std::move(sample.labels["pod"]);
    if (u.ns.empty() || u.pod.empty()) continue;
    u.max_percent = sample.value;
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace

std::string IdleQuery(absl::Duration window) {
  return StrCat("max by (namespace, pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}[",
                absl::ToInt64Seconds(window), "s]))");
}

absl::StatusOr<std::vector<PodUtilization>> ParseUtilizationAnswer(std::string_view body) {
  ASSIGN_OR_RETURN(std::vector<PromSample> samples, ParseInstantVector(body));
  return PodsOf(std::move(samples));
}

absl::StatusOr<IdleEvidence> QueryIdleGpus(const std::string& base_url, absl::Duration window,
                                           double below_percent, absl::Duration timeout) {
  IdleEvidence evidence;
  evidence.window = window;
  evidence.below_percent = below_percent;
  evidence.query = IdleQuery(window);
  ASSIGN_OR_RETURN(std::vector<PromSample> samples,
                   QueryPrometheus(base_url, evidence.query, timeout));
  evidence.pods = PodsOf(std::move(samples));
  return evidence;
}

}  // namespace gpunode::cluster
