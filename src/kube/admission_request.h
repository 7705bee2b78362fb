// Reads the request of an admission.k8s.io/v1 AdmissionReview (what the API server sends a
// webhook), and the object it carries through the snapshot reader, so that quantities,
// tolerations and Job fields mean the same there as everywhere.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::kube {

struct AdmissionRequest {
  std::string api_version;  // the review's; admission.k8s.io/v1 when it names none
  std::string uid;
  std::string kind;       // request.kind.kind
  std::string operation;  // CREATE, UPDATE, ...
  std::string sub_resource;
  std::string ns;      // request.namespace
  std::string object;  // request.object's JSON text; empty when there is none

  bool IsCreateOf(std::string_view k) const {
    return kind == k && sub_resource.empty() && operation == "CREATE";
  }
};

// Reads an AdmissionReview; `source` names it in errors (api_object.h). A review without a
// request, or a request without a uid, is an error too.
absl::StatusOr<AdmissionRequest> ReadAdmissionReview(std::string_view json,
                                                     std::string_view source);

// Reads request.object's text as a `kind` (Pod or Job) with every detail kept. At CREATE a
// generateName object has no name yet; it is read as "<generateName><generated>".
absl::StatusOr<ClusterSnapshot> ReadAdmissionObject(std::string_view object, std::string_view kind);

}  // namespace gpunode::kube
