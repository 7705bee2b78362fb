#include "kube/daemonset_view.h"

#include "kube/api_object.h"

namespace gpunode::kube {

namespace {

absl::Status ReadDaemonSetMetadata(od::value& metadata, const JsonWalk& walk, DaemonSetView& out) {
  return walk.ForEachField(metadata, "metadata", [&](const FieldKey& key, od::value& val) {
    if (key == "name") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", walk.where().name));
      out.name.assign(walk.where().name);
    } else if (key == "namespace") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", walk.where().ns));
      out.ns.assign(walk.where().ns);
    } else if (key == "generation") {
      return walk.ReadInt(val, "metadata.generation", out.generation);
    } else if (key == "resourceVersion") {
      return walk.ReadStringCopy(val, "metadata.resourceVersion", out.resource_version);
    }
    return absl::OkStatus();
  });
}

absl::Status ReadDaemonSetPodSpec(od::value& pod_spec, const JsonWalk& walk, DaemonSetView& out) {
  constexpr std::string_view kPodSpec = "spec.template.spec";
  bool null = false;
  RETURN_IF_ERROR(walk.IsNull(pod_spec, kPodSpec, "an object", null));
  if (null) return absl::OkStatus();
  od::object obj;
  RETURN_IF_ERROR(walk.Check(pod_spec.get_object().get(obj), kPodSpec, "an object"));
  std::string_view text;
  RETURN_IF_ERROR(walk.Check(obj.raw_json().get(text), kPodSpec, "an object"));
  out.pod_spec_json.assign(text);
  // raw_json() went through the object; back to its start for the nodeSelector.
  RETURN_IF_ERROR(walk.Check(obj.reset().error(), kPodSpec, "an object"));
  return walk.ForEachField(obj, kPodSpec, [&](const FieldKey& key, od::value& val) {
    if (key != "nodeSelector") return absl::OkStatus();
    Labels selector;
    RETURN_IF_ERROR(walk.ReadStringMap(val, FieldPath(kPodSpec, ".nodeSelector"), selector));
    for (const auto& [k, v] : selector) out.node_selector.emplace_back(k, v);
    return absl::OkStatus();
  });
}

absl::Status ReadDaemonSetSpec(od::value& spec, const JsonWalk& walk, DaemonSetView& out) {
  return walk.ForEachField(spec, "spec", [&](const FieldKey& key, od::value& val) {
    if (key != "template") return absl::OkStatus();
    return walk.ForEachField(val, "spec.template", [&](const FieldKey& key, od::value& val) {
      if (key != "spec") return absl::OkStatus();
      return ReadDaemonSetPodSpec(val, walk, out);
    });
  });
}

absl::Status ReadDaemonSetStatusFields(od::value& status, const JsonWalk& walk,
                                       DaemonSetView& out) {
  return walk.ForEachField(status, "status", [&](const FieldKey& key, od::value& val) {
    if (key == "observedGeneration") {
      return walk.ReadInt(val, "status.observedGeneration", out.observed_generation);
    }
    if (key == "desiredNumberScheduled") {
      return walk.ReadInt(val, "status.desiredNumberScheduled", out.desired_scheduled);
    }
    if (key == "numberReady") return walk.ReadInt(val, "status.numberReady", out.ready);
    if (key == "updatedNumberScheduled") {
      return walk.ReadInt(val, "status.updatedNumberScheduled", out.updated_scheduled);
    }
    return absl::OkStatus();
  });
}

absl::Status ReadDaemonSetObject(od::object& obj, const JsonWalk& walk, DaemonSetView& out) {
  return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") return ReadDaemonSetMetadata(val, walk, out);
    if (key == "spec") return ReadDaemonSetSpec(val, walk, out);
    if (key == "status") return ReadDaemonSetStatusFields(val, walk, out);
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<DaemonSetView> ReadDaemonSet(std::string_view json, std::string_view source) {
  DaemonSetView out;
  RETURN_IF_ERROR(ReadApiObject(
      json, source, "DaemonSet",
      [&](od::object& obj, const JsonWalk& walk) { return ReadDaemonSetObject(obj, walk, out); }));
  return out;
}

absl::Status ReadDaemonSetPage(std::string_view json, std::string_view source,
                               std::vector<DaemonSetView>& out, std::string& continue_token) {
  return ReadApiList(json, source, "DaemonSet", continue_token,
                     [&](od::object& item, const JsonWalk& walk) {
                       return ReadDaemonSetObject(item, walk, out.emplace_back());
                     });
}

}  // namespace gpunode::kube
