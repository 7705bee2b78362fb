// Reads the parts of a pod spec that more than one kind carries or that need their own walk:
// containers with their NVIDIA requests and limits (pods, and Jobs' and CronJobs' pod templates),
// tolerations, required node and pod (anti-)affinity, and match expressions (also in PDB
// selectors). Part of the snapshot reader; errors and views as in json_walk.h.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kube/json_walk.h"
#include "kube/pod_view.h"

namespace gpunode::kube {

// Appends the containers of `containers` (spec.containers, or spec.initContainers when `init`)
// to `out`; `spec_path` names the pod spec in errors ("spec", "spec.template.spec").
absl::Status ReadContainers(od::value& containers, bool init, std::string_view spec_path,
                            const JsonWalk& walk, std::vector<ContainerResources>& out);

// spec.tolerations into details.tolerations (and tolerations_present).
absl::Status ReadTolerations(od::value& tolerations, const JsonWalk& walk, PodDetails& details);

// spec.affinity: the required node affinity terms, and whether required pod (anti-)affinity is
// set.
absl::Status ReadAffinity(od::value& affinity, const JsonWalk& walk, PodDetails& details);

// An array of {key, operator, values} (`field` names it in errors), appended to `out`.
absl::Status ReadRequirements(od::value& requirements, std::string_view field, const JsonWalk& walk,
                              std::vector<NodeSelectorRequirement>& out);

}  // namespace gpunode::kube
