// The AdmissionReview v1 envelope the webhook endpoints share: reading a request, building the
// response, and reading the object through the snapshot reader so that quantities, tolerations
// and Job fields mean the same everywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cluster/webhook.h"
#include "kube/cluster_snapshot.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

struct Review {
  std::string api_version;
  std::string uid;
  std::string kind;       // request.kind.kind
  std::string operation;  // CREATE, UPDATE, ...
  std::string sub_resource;
  std::string ns;  // request.namespace
  nlohmann::json object;

  bool IsCreateOf(std::string_view k) const {
    return kind == k && sub_resource.empty() && operation == "CREATE";
  }
};

// Parses the envelope; nullopt (with `error`) when the body is not an AdmissionReview v1.
std::optional<Review> ParseReview(std::string_view body, std::string& error);

// {"apiVersion", "kind": "AdmissionReview", "response": {"uid", "allowed"}}
nlohmann::json Response(const Review& review, bool allowed);

AdmissionReply Reply(const nlohmann::json& response);

// Reads request.object as a `kind` (Pod or Job) with every detail kept. At CREATE a generateName
// object has no name yet; it is read as "<generateName><generated>".
absl::StatusOr<kube::ClusterSnapshot> ReadObject(nlohmann::json object, std::string_view kind);

}  // namespace gpunode::cluster
