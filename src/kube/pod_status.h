// What gpunode reads of the status of one pod it runs (verify's smoke and workload pods, read
// back from the API server): its phase, why it waits, and how its first container ended. The
// snapshot's pods are PodViews (pod_view.h), which keep little of the status.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::kube {

struct PodCondition {
  std::string type;  // PodScheduled, Ready, ...
  std::string status;
  std::string message;
};

struct ContainerStatus {
  std::string waiting_reason;  // state.waiting
  std::string waiting_message;
  bool terminated = false;  // state.terminated
  int64_t exit_code = -1;
  std::string terminated_reason;
};

struct PodStatus {
  std::string phase;  // as written; empty when not yet set
  std::vector<PodCondition> conditions;
  std::vector<ContainerStatus> containers;  // status.containerStatuses, in order
};

// Reads a Pod object; `source` names the answer in errors (api_object.h).
absl::StatusOr<PodStatus> ReadPodStatus(std::string_view json, std::string_view source);

}  // namespace gpunode::kube
