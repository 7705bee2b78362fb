// The AdmissionReview v1 envelope the webhook endpoints share: reading a request and its object
// (through kube/admission_request.h), and building the response.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cluster/webhook.h"
#include "kube/admission_request.h"
#include "kube/cluster_snapshot.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

using Review = kube::AdmissionRequest;

// Reads the envelope; nullopt (with `error`, one line naming what is wrong) when the body is not
// an AdmissionReview v1.
std::optional<Review> ParseReview(std::string_view body, std::string& error);

// {"apiVersion", "kind": "AdmissionReview", "response": {"uid", "allowed"}}
nlohmann::json Response(const Review& review, bool allowed);

AdmissionReply Reply(const nlohmann::json& response);

// Reads request.object as a `kind` (Pod or Job) with every detail kept (kube::ReadAdmissionObject).
absl::StatusOr<kube::ClusterSnapshot> ReadObject(const Review& review, std::string_view kind);

}  // namespace gpunode::cluster
