#include "kube/node_reader.h"

#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/view_copy.h"

namespace gpunode::kube {

using core::StrCat;

absl::Status NodeReader::Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap) {
  node_.name = {};
  node_.labels.clear();
  node_.taints.clear();
  node_.unschedulable = false;
  node_.ready = ConditionStatus::kUnknown;
  node_.capacity.clear();
  node_.allocatable.clear();
  node_.drain_started_at = {};
  node_.gpunode_annotations.clear();
  RETURN_IF_ERROR(walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") return ReadMetadata(val, walk);
    if (key == "spec") return ReadSpec(val, walk);
    if (key == "status") return ReadStatus(val, walk);
    return absl::OkStatus();
  }));
  if (node_.name.empty()) {
    return walk.Fail("metadata.name", StrCat("missing; every node has a name; ", kFixInput));
  }
  Commit(snap);
  return absl::OkStatus();
}

absl::Status NodeReader::ReadMetadata(od::value& metadata, const JsonWalk& walk) {
  return walk.ForEachField(metadata, "metadata", [&](const FieldKey& key, od::value& val) {
    if (key == "name") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", node_.name));
      walk.where().name = node_.name;
    } else if (key == "labels") {
      return walk.ReadStringMap(val, "metadata.labels", node_.labels);
    } else if (key == "annotations") {
      return ReadAnnotations(val, walk);
    }
    return absl::OkStatus();
  });
}

// The drain mark, and the other gpunode.io/ annotations (the state gpunode keeps on a node).
absl::Status NodeReader::ReadAnnotations(od::value& annotations, const JsonWalk& walk) {
  constexpr std::string_view kField = "metadata.annotations";
  return walk.ForEachField(annotations, kField, [&](const FieldKey& key, od::value& val) {
    if (key == kDrainStartedAnnotation) return walk.ReadString(val, kField, node_.drain_started_at);
    std::string_view name, value;
    RETURN_IF_ERROR(walk.UnescapedKey(key, kField, name));
    if (!name.starts_with(kGpunodeAnnotationPrefix)) return absl::OkStatus();
    RETURN_IF_ERROR(walk.ReadString(val, StrCat(kField, "[", name, "]"), value));
    node_.gpunode_annotations.emplace_back(name, value);
    return absl::OkStatus();
  });
}

absl::Status NodeReader::ReadSpec(od::value& spec, const JsonWalk& walk) {
  return walk.ForEachField(spec, "spec", [&](const FieldKey& key, od::value& val) {
    if (key == "unschedulable") {
      return walk.ReadBool(val, "spec.unschedulable", node_.unschedulable);
    }
    if (key != "taints") return absl::OkStatus();
    return walk.ForEachElement(val, "spec.taints", [&](od::value& element) {
      Taint& taint = node_.taints.emplace_back();
      return walk.ForEachField(element, "spec.taints[]", [&](const FieldKey& key, od::value& val) {
        if (key == "key") return walk.ReadString(val, "spec.taints[].key", taint.key);
        if (key == "value") return walk.ReadString(val, "spec.taints[].value", taint.value);
        if (key == "effect") return walk.ReadString(val, "spec.taints[].effect", taint.effect);
        return absl::OkStatus();
      });
    });
  });
}

absl::Status NodeReader::ReadStatus(od::value& status, const JsonWalk& walk) {
  return walk.ForEachField(status, "status", [&](const FieldKey& key, od::value& val) {
    if (key == "capacity") return walk.ReadNvidiaResources(val, "status.capacity", node_.capacity);
    if (key == "allocatable") {
      return walk.ReadNvidiaResources(val, "status.allocatable", node_.allocatable);
    }
    if (key != "conditions") return absl::OkStatus();
    return walk.ForEachElement(val, "status.conditions", [&](od::value& element) {
      std::string_view type, condition_status;
      RETURN_IF_ERROR(walk.ForEachField(
          element, "status.conditions[]", [&](const FieldKey& key, od::value& val) {
            if (key == "type") return walk.ReadString(val, "status.conditions[].type", type);
            if (key == "status") {
              return walk.ReadString(val, "status.conditions[].status", condition_status);
            }
            return absl::OkStatus();
          }));
      if (type == "Ready") {
        node_.ready = condition_status == "True"    ? ConditionStatus::kTrue
                      : condition_status == "False" ? ConditionStatus::kFalse
                                                    : ConditionStatus::kUnknown;
      }
      return absl::OkStatus();
    });
  });
}

void NodeReader::Commit(ClusterSnapshot& snap) const {
  StringArena& a = *snap.strings;
  NodeView out;
  out.name = a.Intern(node_.name);
  out.labels = CopyLabels(a, node_.labels);
  for (const Taint& t : node_.taints) {
    out.taints.push_back({a.Intern(t.key), a.Copy(t.value), a.Intern(t.effect)});
  }
  out.unschedulable = node_.unschedulable;
  out.ready = node_.ready;
  out.capacity = CopyResources(a, node_.capacity);
  out.allocatable = CopyResources(a, node_.allocatable);
  out.drain_started_at = a.Copy(node_.drain_started_at);
  out.gpunode_annotations = CopyLabels(a, node_.gpunode_annotations);
  snap.nodes.push_back(std::move(out));
}

}  // namespace gpunode::kube
