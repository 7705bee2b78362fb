// What gpunode reads of a DaemonSet from the API server: the version to replace it at, how far
// its rollout got (prepull's), and the pod template with its nodeSelector (verify's device
// plugin step, which reads the template as a pod).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpunode::kube {

struct DaemonSetView {
  std::string ns;
  std::string name;
  std::string resource_version;     // metadata.resourceVersion
  int64_t generation = 0;           // metadata.generation
  int64_t observed_generation = 0;  // status.observedGeneration
  int64_t desired_scheduled = 0;    // status.desiredNumberScheduled
  int64_t ready = 0;                // status.numberReady
  int64_t updated_scheduled = 0;    // status.updatedNumberScheduled
  // spec.template.spec.nodeSelector, in input order.
  std::vector<std::pair<std::string, std::string>> node_selector;
  // spec.template.spec's JSON text, as sent; "{}" when there is none.
  std::string pod_spec_json = "{}";
};

// Reads a DaemonSet object; `source` names the answer in errors (api_object.h).
absl::StatusOr<DaemonSetView> ReadDaemonSet(std::string_view json, std::string_view source);

// Reads one page of a DaemonSetList into `out`; `continue_token` receives metadata.continue.
absl::Status ReadDaemonSetPage(std::string_view json, std::string_view source,
                               std::vector<DaemonSetView>& out, std::string& continue_token);

}  // namespace gpunode::kube
