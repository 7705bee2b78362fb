// What gpunode reads of the API's Status object, the body of an answer that refuses a request
// (an Eviction blocked by a PodDisruptionBudget, a 422): its words, and how long to wait.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::kube {

struct ApiStatus {
  std::string message;
  std::string reason;                       // TooManyRequests, Conflict, ...
  std::vector<std::string> cause_messages;  // details.causes[].message, those that are set
  int64_t retry_after_seconds = 0;          // details.retryAfterSeconds
};

// Reads a Status body; `source` names the answer in errors (api_object.h).
absl::StatusOr<ApiStatus> ReadApiStatus(std::string_view json, std::string_view source);

}  // namespace gpunode::kube
