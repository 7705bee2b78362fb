// The admission logic of `gpunode webhook`, as pure functions from an AdmissionReview v1 request
// body to the response body, so tests can drive it without a server.
//   mutate:   a pod that requests nvidia.com/* gets the toleration
//             {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
//   validate: NVIDIA requests need equal integer limits and must fit on the largest node;
//             tolerations aimed at the GPU taint must be able to match it
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpunode::cluster {

// What validation knows about the cluster's GPU nodes.
struct ClusterLimits {
  // Largest node capacity per NVIDIA resource, in whole units; a resource absent here is not
  // checked (unknown).
  std::map<std::string, int64_t, std::less<>> largest;
  // Values of the nvidia.com/gpu NoSchedule taints the nodes carry; empty: unknown.
  std::vector<std::string> gpu_taint_values;
};

struct AdmissionReply {
  int http_status = 200;  // 400 when the body is not an AdmissionReview
  std::string body;       // AdmissionReview JSON, or a plain message for 400
};

AdmissionReply Mutate(std::string_view request_body);
AdmissionReply Validate(std::string_view request_body, const ClusterLimits& limits);

}  // namespace gpunode::cluster
