// Reads metadata.ownerReferences for the one reference that matters to gpunode: the controller
// (a pod's Job or DaemonSet, a Job's CronJob). Part of the snapshot reader.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

struct ControllerRef {
  bool found = false;  // some reference has controller: true
  std::string_view api_version;
  std::string_view kind;
  std::string_view name;
  std::string_view uid;
};

// Reads the ownerReferences array `refs` (null: none) into `out`; with several controllers (which
// the API server refuses) the last one wins. Views point into the input (json_walk.h).
absl::Status ReadControllerRef(od::value& refs, const JsonWalk& walk, ControllerRef& out);

}  // namespace gpunode::kube
