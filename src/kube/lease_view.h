// What gpunode reads of a coordination.k8s.io/v1 Lease (lease.h holds one), and the body that
// writes it back: a Lease is read, changed and written whole, with its resourceVersion.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {

struct LeaseView {
  std::string ns;
  std::string name;
  std::string resource_version;  // empty for a lease not yet created
  // Written back as read: an operator's labels or annotations on the Lease stay.
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> annotations;
  // spec
  std::string holder_identity;
  int64_t duration_seconds = 0;
  std::string acquire_time;  // metav1.MicroTime text, as written
  std::string renew_time;
  int64_t transitions = 0;

  // The Lease object to POST or PUT.
  nlohmann::json ToJson() const;
};

// Reads a Lease object; `source` names the answer in errors (api_object.h).
absl::StatusOr<LeaseView> ReadLease(std::string_view json, std::string_view source);

}  // namespace gpunode::kube
