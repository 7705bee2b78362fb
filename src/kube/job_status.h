// What gpunode reads of one Job it runs (the upgrade's maintenance Job, read back from the API
// server): its annotations and how far it got. The snapshot's Jobs are JobViews (job_view.h),
// which keep the spec and not the status.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::kube {

struct JobCondition {
  std::string type;  // Complete, Failed, SuccessCriteriaMet, ...
  std::string status;
  std::string reason;
  std::string message;
};

struct JobStatus {
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<JobCondition> conditions;
  int64_t succeeded = 0;

  // The annotation's value; empty when absent.
  std::string_view Annotation(std::string_view key) const;
  // The condition of `type` when its status is True; null otherwise.
  const JobCondition* TrueCondition(std::string_view type) const;
};

// Reads a Job object; `source` names the answer in errors (api_object.h).
absl::StatusOr<JobStatus> ReadJobStatus(std::string_view json, std::string_view source);

}  // namespace gpunode::kube
