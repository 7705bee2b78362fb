// Reads an Event object of a snapshot (core/v1, or events.k8s.io/v1 with its field names) and
// keeps it only when it is a kubelet's image pull for a pod, as an ImagePullEvent. Part of the
// snapshot reader.
#pragma once

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

// Reads the event `obj` (not yet iterated); appends an image pull to snap.image_pulls when it
// is one. Errors as in json_walk.h.
absl::Status ReadEvent(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

}  // namespace gpunode::kube
