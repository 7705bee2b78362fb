#include "kube/pod_status.h"

#include "kube/api_object.h"

namespace gpunode::kube {

namespace {

absl::Status ReadPodCondition(od::value& condition, const JsonWalk& walk, PodCondition& out) {
  return walk.ForEachField(
      condition, "status.conditions[]", [&](const FieldKey& key, od::value& val) {
        if (key == "type") return walk.ReadStringCopy(val, "status.conditions[].type", out.type);
        if (key == "status")
          return walk.ReadStringCopy(val, "status.conditions[].status", out.status);
        if (key == "message") {
          return walk.ReadStringCopy(val, "status.conditions[].message", out.message);
        }
        return absl::OkStatus();
      });
}

absl::Status ReadContainerState(od::value& state, const JsonWalk& walk, ContainerStatus& out) {
  constexpr std::string_view kState = "status.containerStatuses[].state";
  return walk.ForEachField(state, kState, [&](const FieldKey& key, od::value& val) {
    if (key == "waiting") {
      return walk.ForEachField(
          val, FieldPath(kState, ".waiting"), [&](const FieldKey& key, od::value& val) {
            if (key == "reason") {
              return walk.ReadStringCopy(val, FieldPath(kState, ".waiting.reason"),
                                         out.waiting_reason);
            }
            if (key == "message") {
              return walk.ReadStringCopy(val, FieldPath(kState, ".waiting.message"),
                                         out.waiting_message);
            }
            return absl::OkStatus();
          });
    }
    if (key != "terminated") return absl::OkStatus();
    RETURN_IF_ERROR(walk.IsSet(val, FieldPath(kState, ".terminated"), "an object", out.terminated));
    return walk.ForEachField(
        val, FieldPath(kState, ".terminated"), [&](const FieldKey& key, od::value& val) {
          if (key == "exitCode") {
            return walk.ReadInt(val, FieldPath(kState, ".terminated.exitCode"), out.exit_code);
          }
          if (key == "reason") {
            return walk.ReadStringCopy(val, FieldPath(kState, ".terminated.reason"),
                                       out.terminated_reason);
          }
          return absl::OkStatus();
        });
  });
}

absl::Status ReadPodStatusFields(od::value& status, const JsonWalk& walk, PodStatus& out) {
  return walk.ForEachField(status, "status", [&](const FieldKey& key, od::value& val) {
    if (key == "phase") return walk.ReadStringCopy(val, "status.phase", out.phase);
    if (key == "conditions") {
      return walk.ForEachElement(val, "status.conditions", [&](od::value& condition) {
        return ReadPodCondition(condition, walk, out.conditions.emplace_back());
      });
    }
    if (key != "containerStatuses") return absl::OkStatus();
    return walk.ForEachElement(val, "status.containerStatuses", [&](od::value& container) {
      ContainerStatus& c = out.containers.emplace_back();
      return walk.ForEachField(container, "status.containerStatuses[]",
                               [&](const FieldKey& key, od::value& val) {
                                 if (key == "state") return ReadContainerState(val, walk, c);
                                 return absl::OkStatus();
                               });
    });
  });
}

}  // namespace

absl::StatusOr<PodStatus> ReadPodStatus(std::string_view json, std::string_view source) {
  PodStatus out;
  RETURN_IF_ERROR(ReadApiObject(json, source, "Pod", [&](od::object& obj, const JsonWalk& walk) {
    return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
      if (key == "metadata") {
        return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
          if (key == "name") return walk.ReadString(val, "metadata.name", walk.where().name);
          if (key == "namespace") {
            return walk.ReadString(val, "metadata.namespace", walk.where().ns);
          }
          return absl::OkStatus();
        });
      }
      if (key == "status") return ReadPodStatusFields(val, walk, out);
      return absl::OkStatus();
    });
  }));
  return out;
}

}  // namespace gpunode::kube
