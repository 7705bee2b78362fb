#include "kube/pod_spec_reader.h"

#include <string>

#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

// resources.requests and resources.limits of one container; `field` is "spec.containers[i]".
absl::Status ReadContainerResources(od::value& resources, const std::string& field,
                                    const JsonWalk& walk, ContainerResources& out) {
  return walk.ForEachField(
      resources, FieldPath(field, ".resources"), [&](const FieldKey& key, od::value& val) {
        if (key == "requests") {
          return walk.ReadNvidiaResources(val, FieldPath(field, ".resources.requests"),
                                          out.requests);
        }
        if (key == "limits") {
          return walk.ReadNvidiaResources(val, FieldPath(field, ".resources.limits"), out.limits);
        }
        return absl::OkStatus();
      });
}

// One term of nodeSelectorTerms: its matchExpressions and matchFields.
absl::Status ReadNodeSelectorTerm(od::value& term, const JsonWalk& walk, NodeSelectorTerm& out) {
  return walk.ForEachField(term, "nodeSelectorTerms[]", [&](const FieldKey& key, od::value& val) {
    if (key == "matchExpressions") {
      return ReadRequirements(val, "nodeSelectorTerms[].matchExpressions", walk,
                              out.match_expressions);
    }
    if (key == "matchFields") {
      return ReadRequirements(val, "nodeSelectorTerms[].matchFields", walk, out.match_fields);
    }
    return absl::OkStatus();
  });
}

// nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution (not null): its nodeSelectorTerms.
absl::Status ReadRequiredNodeSelector(od::value& selector, const JsonWalk& walk,
                                      std::vector<NodeSelectorTerm>& out) {
  return walk.ForEachField(
      selector, "spec.affinity.nodeAffinity.required", [&](const FieldKey& key, od::value& val) {
        if (key != "nodeSelectorTerms") return absl::OkStatus();
        return walk.ForEachElement(val, "nodeSelectorTerms", [&](od::value& term) {
          return ReadNodeSelectorTerm(term, walk, out.emplace_back());
        });
      });
}

// spec.affinity.nodeAffinity: only the required terms count; preferred ones never block.
absl::Status ReadNodeAffinity(od::value& node_affinity, const JsonWalk& walk, PodDetails& details) {
  return walk.ForEachField(
      node_affinity, "spec.affinity.nodeAffinity", [&](const FieldKey& key, od::value& val) {
        if (key != "requiredDuringSchedulingIgnoredDuringExecution") return absl::OkStatus();
        bool null = false;
        RETURN_IF_ERROR(walk.IsNull(val, "spec.affinity.nodeAffinity.required", "an object", null));
        if (null) return absl::OkStatus();
        details.has_required_node_affinity = true;
        return ReadRequiredNodeSelector(val, walk, details.required_node_affinity);
      });
}

// spec.affinity.podAffinity or podAntiAffinity: only whether required terms are set.
absl::Status ReadPodAffinity(od::value& pod_affinity, const JsonWalk& walk, PodDetails& details) {
  return walk.ForEachField(pod_affinity, "spec.affinity", [&](const FieldKey& key, od::value& val) {
    if (key != "requiredDuringSchedulingIgnoredDuringExecution") return absl::OkStatus();
    bool set = false;
    RETURN_IF_ERROR(walk.IsSet(val, "spec.affinity", "an array", set));
    details.has_required_pod_affinity |= set;
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status ReadContainers(od::value& containers, bool init, std::string_view spec_path,
                            const JsonWalk& walk, std::vector<ContainerResources>& out) {
  std::string list = StrCat(spec_path, init ? ".initContainers" : ".containers");
  size_t i = 0;
  return walk.ForEachElement(
      containers, list,
      [&](od::value& container) {
        ContainerResources& cr = out.emplace_back();
        cr.init = init;
        std::string field = StrCat(list, "[", i++, "]");
        return walk.ForEachField(container, field, [&](const FieldKey& key, od::value& val) {
          if (key == "name") return walk.ReadString(val, FieldPath(field, ".name"), cr.name);
          if (key == "restartPolicy") {
            std::string_view policy;
            RETURN_IF_ERROR(walk.ReadString(val, FieldPath(field, ".restartPolicy"), policy));
            cr.sidecar = init && policy == "Always";
          } else if (key == "resources") {
            return ReadContainerResources(val, field, walk, cr);
          }
          return absl::OkStatus();
        });
      },
      "an array", "an array of containers");
}

absl::Status ReadTolerations(od::value& tolerations, const JsonWalk& walk, PodDetails& details) {
  bool null = false;
  RETURN_IF_ERROR(walk.IsNull(tolerations, "spec.tolerations", "an array", null));
  if (null) return absl::OkStatus();
  details.tolerations_present = true;
  return walk.ForEachElement(tolerations, "spec.tolerations", [&](od::value& element) {
    Toleration& tol = details.tolerations.emplace_back();
    return walk.ForEachField(
        element, "spec.tolerations[]", [&](const FieldKey& key, od::value& val) {
          if (key == "key") return walk.ReadString(val, "spec.tolerations[].key", tol.key);
          if (key == "operator") return walk.ReadString(val, "spec.tolerations[].operator", tol.op);
          if (key == "value") return walk.ReadString(val, "spec.tolerations[].value", tol.value);
          if (key == "effect") return walk.ReadString(val, "spec.tolerations[].effect", tol.effect);
          if (key == "tolerationSeconds") {
            return walk.IsSet(val, "spec.tolerations[].tolerationSeconds", "a number",
                              tol.has_seconds);
          }
          return absl::OkStatus();
        });
  });
}

absl::Status ReadAffinity(od::value& affinity, const JsonWalk& walk, PodDetails& details) {
  return walk.ForEachField(affinity, "spec.affinity", [&](const FieldKey& key, od::value& val) {
    if (key == "nodeAffinity") return ReadNodeAffinity(val, walk, details);
    if (key == "podAffinity" || key == "podAntiAffinity")
      return ReadPodAffinity(val, walk, details);
    return absl::OkStatus();
  });
}

absl::Status ReadRequirements(od::value& requirements, std::string_view field, const JsonWalk& walk,
                              std::vector<NodeSelectorRequirement>& out) {
  return walk.ForEachElement(requirements, field, [&](od::value& element) {
    NodeSelectorRequirement& req = out.emplace_back();
    return walk.ForEachField(element, field, [&](const FieldKey& key, od::value& val) {
      if (key == "key") return walk.ReadString(val, FieldPath(field, "[].key"), req.key);
      if (key == "operator") return walk.ReadString(val, FieldPath(field, "[].operator"), req.op);
      if (key == "values") {
        return walk.ReadStringArray(val, FieldPath(field, "[].values"), req.values);
      }
      return absl::OkStatus();
    });
  });
}

}  // namespace gpunode::kube
