#include "kube/event_reader.h"

#include <optional>

#include "kube/api_object.h"
#include "kube/image_pull_event.h"

namespace gpunode::kube {

namespace {

absl::Status ReadInvolvedObject(od::value& object, const JsonWalk& walk, EventFields& e) {
  return walk.ForEachField(object, "involvedObject", [&](const FieldKey& key, od::value& val) {
    if (key == "kind") return walk.ReadString(val, "involvedObject.kind", e.involved_kind);
    if (key == "namespace") return walk.ReadString(val, "involvedObject.namespace", e.involved_ns);
    if (key == "name") return walk.ReadString(val, "involvedObject.name", e.involved_name);
    return absl::OkStatus();
  });
}

absl::Status ReadSeries(od::value& series, const JsonWalk& walk, EventFields& e) {
  return walk.ForEachField(series, "series", [&](const FieldKey& key, od::value& val) {
    if (key == "count") return walk.ReadInt(val, "series.count", e.count);
    if (key == "lastObservedTime") {
      return walk.ReadString(val, "series.lastObservedTime", e.series_last);
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status ReadEventFields(od::object& obj, const JsonWalk& walk, EventFields& e) {
  return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") {
      return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
        if (key == "name") return walk.ReadString(val, "metadata.name", walk.where().name);
        if (key == "creationTimestamp") {
          return walk.ReadString(val, "metadata.creationTimestamp", e.created);
        }
        if (key != "namespace") return absl::OkStatus();
        RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", e.ns));
        walk.where().ns = e.ns;
        return absl::OkStatus();
      });
    }
    // core/v1 names the pod in involvedObject, events.k8s.io/v1 in regarding; likewise below.
    if (key == "involvedObject" || key == "regarding") return ReadInvolvedObject(val, walk, e);
    if (key == "reason") return walk.ReadString(val, "reason", e.reason);
    if (key == "message" || key == "note") return walk.ReadString(val, "message", e.message);
    if (key == "source" || key == "deprecatedSource") {
      return walk.ForEachField(val, "source", [&](const FieldKey& key, od::value& val) {
        if (key == "host") return walk.ReadString(val, "source.host", e.host);
        return absl::OkStatus();
      });
    }
    if (key == "reportingInstance") {
      return walk.ReadString(val, "reportingInstance", e.reporting_instance);
    }
    if (key == "firstTimestamp" || key == "deprecatedFirstTimestamp") {
      return walk.ReadString(val, "firstTimestamp", e.first);
    }
    if (key == "lastTimestamp" || key == "deprecatedLastTimestamp") {
      return walk.ReadString(val, "lastTimestamp", e.last);
    }
    if (key == "eventTime") return walk.ReadString(val, "eventTime", e.event_time);
    if (key == "count" || key == "deprecatedCount") return walk.ReadInt(val, "count", e.count);
    if (key == "series") return ReadSeries(val, walk, e);
    return absl::OkStatus();
  });
}

absl::Status ReadEvent(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap) {
  EventFields e;
  RETURN_IF_ERROR(ReadEventFields(obj, walk, e));
  if (e.involved_kind != "Pod") return absl::OkStatus();
  std::optional<PullMessage> pull = ParsePullMessage(e.reason, e.message);
  if (!pull) return absl::OkStatus();
  StringArena& a = *snap.strings;
  ImagePullEvent& out = snap.image_pulls.emplace_back();
  out.ns = a.Intern(e.involved_ns.empty() ? e.ns : e.involved_ns);
  out.pod = a.Copy(e.involved_name);
  out.node = a.Intern(!e.host.empty() ? e.host : e.reporting_instance);
  out.image = a.Intern(pull->image);
  out.outcome = pull->outcome;
  out.waited_millis = pull->waited_millis;
  out.pulled_millis = pull->pulled_millis;
  out.first_unix = ParseRfc3339Seconds(!e.first.empty() ? e.first : e.event_time);
  out.last_unix = ParseRfc3339Seconds(!e.last.empty()          ? e.last
                                      : !e.series_last.empty() ? e.series_last
                                                               : e.event_time);
  if (out.last_unix == 0) out.last_unix = out.first_unix;
  out.count = e.count;
  return absl::OkStatus();
}

absl::Status ReadEventPage(std::string_view json, std::string_view source,
                           const std::function<void(const EventFields&)>& on_event,
                           std::string& continue_token) {
  return ReadApiList(json, source, "Event", continue_token,
                     [&](od::object& item, const JsonWalk& walk) {
                       EventFields e;
                       RETURN_IF_ERROR(ReadEventFields(item, walk, e));
                       on_event(e);
                       return absl::OkStatus();
                     });
}

}  // namespace gpunode::kube
