#include "kube/node_event.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {

absl::Status PostNodeEvent(Client& client, const NodeEvent& event) {
  std::string now = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  // As the kubelet reports node events: the node's name stands for its uid, the event lives in
  // the default namespace.
  nlohmann::json body = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", event.node + "."}, {"namespace", "default"}}},
      {"involvedObject", {{"kind", "Node"}, {"name", event.node}, {"uid", event.node}}},
      {"type", event.type},
      {"reason", event.reason},
      {"message", event.message},
      {"source", {{"component", event.component}, {"host", event.node}}},
      {"reportingComponent", event.component},
      {"reportingInstance", event.node},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  HttpRequest request;
  request.method = "POST";
  request.path = "/api/v1/namespaces/default/events";
  request.content_type = "application/json";
  // A message carries what the user wrote (a label value, a file's line): keep invalid UTF-8
  // from throwing.
  request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  absl::StatusOr<HttpResponse> response = client.Send(request);
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status > 299) {
    return StatusFromResponse(request, *response);
  }
  return absl::OkStatus();
}

}  // namespace gpunode::kube
