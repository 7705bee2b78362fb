#include "cluster/admission_review.h"

#include "core/text.h"

namespace gpunode::cluster {

using json = nlohmann::json;

std::optional<Review> ParseReview(std::string_view body, std::string& error) {
  absl::StatusOr<Review> review = kube::ReadAdmissionReview(body, "AdmissionReview");
  if (!review.ok()) {
    error = std::string(core::View(review.status().message()));
    return std::nullopt;
  }
  return *std::move(review);
}

json Response(const Review& r, bool allowed) {
  return {{"apiVersion", r.api_version},
          {"kind", "AdmissionReview"},
          {"response", {{"uid", r.uid}, {"allowed", allowed}}}};
}

AdmissionReply Reply(const json& j) { return {200, j.dump()}; }

absl::StatusOr<kube::ClusterSnapshot> ReadObject(const Review& review, std::string_view kind) {
  return kube::ReadAdmissionObject(review.object, kind);
}

}  // namespace gpunode::cluster
