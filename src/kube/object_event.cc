#include "kube/object_event.h"

#include "core/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::kube {

absl::Status PostEvent(Client& client, const ObjectEvent& event, absl::Time now) {
  const ObjectRef& object = event.object;
  const std::string ns = object.ns.empty() ? "default" : object.ns;
  std::string stamp = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  nlohmann::json involved = {{"apiVersion", object.api_version},
                             {"kind", object.kind},
                             {"name", object.name},
                             {"uid", object.uid}};
  if (!object.ns.empty()) involved["namespace"] = object.ns;
  nlohmann::json body = {{"apiVersion", "v1"},
                         {"kind", "Event"},
                         {"metadata", {{"generateName", object.name + "."}, {"namespace", ns}}},
                         {"involvedObject", involved},
                         {"type", event.type},
                         {"reason", event.reason},
                         {"message", event.message},
                         {"source", {{"component", event.component}}},
                         {"reportingComponent", event.component},
                         {"reportingInstance", event.instance},
                         {"firstTimestamp", stamp},
                         {"lastTimestamp", stamp},
                         {"count", 1}};
  if (!event.instance.empty()) body["source"]["host"] = event.instance;
  HttpRequest request;
  request.method = "POST";
  request.path = core::StrCat("/api/v1/namespaces/", UrlEncode(ns), "/events");
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
