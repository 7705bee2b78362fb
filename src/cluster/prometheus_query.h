// Instant queries against Prometheus's HTTP API (/api/v1/query): the one reader of its answers,
// shared by the checks that ask Prometheus (idle GPU pods, XID errors during an upgrade's soak).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gpunode::cluster {

struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses an instant-vector answer; an error names what is wrong with it.
absl::StatusOr<std::vector<PromSample>> ParseInstantVector(std::string_view body);

// Runs `query` against the Prometheus at `base_url` (http(s)://host:port[/prefix]). Errors start
// with "--prometheus URL: ": Unavailable when it cannot be asked now (no connection, a timeout,
// a 5xx), InvalidArgument when what answers is not Prometheus's query API.
absl::StatusOr<std::vector<PromSample>> QueryPrometheus(const std::string& base_url,
                                                        const std::string& query,
                                                        absl::Duration timeout);

}  // namespace gpunode::cluster
