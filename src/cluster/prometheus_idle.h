// Asks Prometheus (its HTTP API, /api/v1/query) how busy each pod's GPUs were over a window:
// the highest DCGM_FI_DEV_GPU_UTIL per pod, from the `namespace` and `pod` labels that gpunode's
// exporter and dcgm-exporter put on the series of GPUs allocated to pods.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/job_hygiene.h"
#include "kube/client.h"

namespace gpunode::cluster {

// max by (namespace, pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[<window>s]))
std::string IdleQuery(absl::Duration window);

// Parses an instant-vector answer of IdleQuery; an error names what is wrong with it.
absl::StatusOr<std::vector<PodUtilization>> ParseUtilizationAnswer(std::string_view body);

// Runs IdleQuery against the Prometheus at `base_url` (http(s)://host:port[/prefix]).
absl::StatusOr<IdleEvidence> QueryIdleGpus(const std::string& base_url, absl::Duration window,
                                           double below_percent, absl::Duration timeout);

}  // namespace gpunode::cluster
