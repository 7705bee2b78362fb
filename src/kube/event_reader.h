// Reads Event objects (core/v1, or events.k8s.io/v1 with its field names): in a snapshot, where
// only a kubelet's image pulls for pods are kept, as ImagePullEvents; and in an API server's
// EventList pages, where the caller looks at each event.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

// The fields of an Event that gpunode reads; views into the input (json_walk.h's lifetime).
// events.k8s.io/v1's names land in core/v1's: regarding in involvedObject, note in message,
// deprecatedSource in source, and so on.
struct EventFields {
  std::string_view ns, reason, message, host, reporting_instance;
  std::string_view involved_kind, involved_ns, involved_name;
  std::string_view first, last, event_time, series_last, created;
  int64_t count = 1;
};

// Reads the event `obj` (not yet iterated) into `out`. Errors as in json_walk.h.
absl::Status ReadEventFields(od::object& obj, const JsonWalk& walk, EventFields& out);

// Reads one page of an EventList the API server answered with, calling on_event for each event
// (its views live for the call); `continue_token` receives metadata.continue. `source` names the
// page in errors (api_object.h).
absl::Status ReadEventPage(std::string_view json, std::string_view source,
                           const std::function<void(const EventFields&)>& on_event,
                           std::string& continue_token);

// Reads the event `obj` (not yet iterated); appends an image pull to snap.image_pulls when it
// is one. Errors as in json_walk.h.
absl::Status ReadEvent(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

}  // namespace gpunode::kube
