#include "kube/pod_reader.h"

#include <algorithm>
#include <memory>

#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/owner_reader.h"
#include "kube/pod_spec_reader.h"
#include "kube/view_copy.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

PodPhase PhaseFromName(std::string_view phase) {
  return phase == "Running"     ? PodPhase::kRunning
         : phase == "Succeeded" ? PodPhase::kSucceeded
         : phase == "Failed"    ? PodPhase::kFailed
         : phase == "Unknown"   ? PodPhase::kUnknown
                                : PodPhase::kPending;
}

}  // namespace

absl::Status PodReader::Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap) {
  details_wanted_ = static_cast<bool>(options_->keep_pod_details);
  // Made anew in place rather than moved from a temporary: GCC 12 warns, falsely, that the
  // temporary's InlinedVector is read uninitialized (-Wuninitialized).
  std::destroy_at(&pod_);
  std::construct_at(&pod_);
  details_.uid = {};
  details_.labels.clear();
  details_.node_selector.clear();
  details_.has_required_node_affinity = false;
  details_.required_node_affinity.clear();
  details_.has_required_pod_affinity = false;
  details_.tolerations_present = false;
  details_.tolerations.clear();
  details_.containers.clear();
  details_.controller_api_version = {};
  details_.controller_kind = {};
  details_.controller_name = {};
  details_.controller_uid = {};
  details_.drain_notice_node = {};
  details_.drain_notice_deadline = {};
  details_.unschedulable_message = {};
  details_.ready = false;
  RETURN_IF_ERROR(walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") return ReadMetadata(val, walk);
    if (key == "spec") return ReadSpec(val, walk);
    if (key == "status") return ReadStatus(val, walk);
    return absl::OkStatus();
  }));
  if (pod_.name.empty()) {
    return walk.Fail("metadata.name", StrCat("missing; every pod has a name (a pod template is "
                                             "not a pod); ",
                                             kFixInput));
  }
  // Init containers come first, as the scheduler walks them.
  std::stable_partition(details_.containers.begin(), details_.containers.end(),
                        [](const ContainerResources& c) { return c.init; });
  pod_.gpu_requests = EffectiveRequests(details_.containers);
  Commit(snap);
  return absl::OkStatus();
}

absl::Status PodReader::ReadMetadata(od::value& metadata, const JsonWalk& walk) {
  return walk.ForEachField(metadata, "metadata", [&](const FieldKey& key, od::value& val) {
    if (key == "name") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", pod_.name));
      walk.where().name = pod_.name;
    } else if (key == "namespace") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", pod_.ns));
      walk.where().ns = pod_.ns;
    } else if (key == "creationTimestamp") {
      std::string_view ts;
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.creationTimestamp", ts));
      pod_.created_unix = ParseRfc3339Seconds(ts);
    } else if (key == "deletionTimestamp") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.deletionTimestamp", pod_.deletion_timestamp));
      pod_.terminating = !pod_.deletion_timestamp.empty();
    } else if (key == "annotations") {
      return walk.ForEachField(val, "metadata.annotations",
                               [&](const FieldKey& key, od::value& annotation) {
                                 if (key == "kubernetes.io/config.mirror") pod_.mirror = true;
                                 if (!details_wanted_) return absl::OkStatus();
                                 if (key == kDrainNoticeNodeAnnotation) {
                                   return walk.ReadString(annotation, "metadata.annotations",
                                                          details_.drain_notice_node);
                                 }
                                 if (key == kDrainNoticeDeadlineAnnotation) {
                                   return walk.ReadString(annotation, "metadata.annotations",
                                                          details_.drain_notice_deadline);
                                 }
                                 return absl::OkStatus();
                               });
    } else if (key == "ownerReferences") {
      ControllerRef controller;
      RETURN_IF_ERROR(ReadControllerRef(val, walk, controller));
      if (controller.found) {
        pod_.has_controller = true;
        pod_.daemonset = controller.kind == "DaemonSet";
        if (controller.kind == "Job") pod_.job = controller.name;
        details_.controller_api_version = controller.api_version;
        details_.controller_kind = controller.kind;
        details_.controller_name = controller.name;
        details_.controller_uid = controller.uid;
      }
    } else if (details_wanted_ && key == "labels") {
      return walk.ReadStringMap(val, "metadata.labels", details_.labels);
    } else if (details_wanted_ && key == "uid") {
      return walk.ReadString(val, "metadata.uid", details_.uid);
    }
    return absl::OkStatus();
  });
}

absl::Status PodReader::ReadSpec(od::value& spec, const JsonWalk& walk) {
  return walk.ForEachField(spec, "spec", [&](const FieldKey& key, od::value& val) {
    if (key == "nodeName") return walk.ReadString(val, "spec.nodeName", pod_.node_name);
    if (key == "activeDeadlineSeconds") {
      return walk.IsSet(val, "spec.activeDeadlineSeconds", "an integer", pod_.active_deadline);
    }
    if (key == "containers") return ReadContainers(val, false, "spec", walk, details_.containers);
    if (key == "initContainers") {
      return ReadContainers(val, true, "spec", walk, details_.containers);
    }
    if (key == "volumes") return ReadVolumes(val, walk);
    if (!details_wanted_) return absl::OkStatus();
    if (key == "nodeSelector") {
      return walk.ReadStringMap(val, "spec.nodeSelector", details_.node_selector);
    }
    if (key == "tolerations") return ReadTolerations(val, walk, details_);
    if (key == "affinity") return ReadAffinity(val, walk, details_);
    return absl::OkStatus();
  });
}

// Only whether some volume is an emptyDir: local data that eviction destroys.
absl::Status PodReader::ReadVolumes(od::value& volumes, const JsonWalk& walk) {
  return walk.ForEachElement(volumes, "spec.volumes", [&](od::value& volume) {
    return walk.ForEachField(volume, "spec.volumes[]", [&](const FieldKey& key, od::value&) {
      if (key == "emptyDir") pod_.uses_empty_dir = true;
      return absl::OkStatus();
    });
  });
}

absl::Status PodReader::ReadStatus(od::value& status, const JsonWalk& walk) {
  return walk.ForEachField(status, "status", [&](const FieldKey& key, od::value& val) {
    if (key == "phase") {
      std::string_view phase;
      RETURN_IF_ERROR(walk.ReadString(val, "status.phase", phase));
      pod_.phase = PhaseFromName(phase);
    } else if (details_wanted_ && key == "conditions") {
      return ReadConditions(val, walk);
    }
    return absl::OkStatus();
  });
}

// The scheduler's verdict: the message of PodScheduled when it is False; and readiness.
absl::Status PodReader::ReadConditions(od::value& conditions, const JsonWalk& walk) {
  return walk.ForEachElement(conditions, "status.conditions", [&](od::value& condition) {
    std::string_view type, status, message;
    RETURN_IF_ERROR(walk.ForEachField(
        condition, "status.conditions[]", [&](const FieldKey& key, od::value& val) {
          if (key == "type") return walk.ReadString(val, "status.conditions[].type", type);
          if (key == "status") return walk.ReadString(val, "status.conditions[].status", status);
          if (key == "message") {
            return walk.ReadString(val, "status.conditions[].message", message);
          }
          return absl::OkStatus();
        }));
    if (type == "PodScheduled" && status == "False") details_.unschedulable_message = message;
    if (type == "Ready") details_.ready = status == "True";
    return absl::OkStatus();
  });
}

void PodReader::Commit(ClusterSnapshot& snap) const {
  StringArena& a = *snap.strings;
  PodView& out = snap.pods.emplace_back();
  out.ns = a.Intern(pod_.ns);
  out.name = a.Copy(pod_.name);
  out.node_name = a.Intern(pod_.node_name);
  out.phase = pod_.phase;
  out.terminating = pod_.terminating;
  out.daemonset = pod_.daemonset;
  out.mirror = pod_.mirror;
  out.has_controller = pod_.has_controller;
  out.uses_empty_dir = pod_.uses_empty_dir;
  out.created_unix = pod_.created_unix;
  out.deletion_timestamp = a.Copy(pod_.deletion_timestamp);
  out.active_deadline = pod_.active_deadline;
  out.job = a.Copy(pod_.job);
  out.gpu_requests = pod_.gpu_requests;  // names point at interned copies below
  for (ResourceAmount& r : out.gpu_requests) r.name = a.Intern(r.name);
  if (!details_wanted_ || !options_->keep_pod_details(pod_)) return;
  auto d = std::make_unique<PodDetails>();
  d->uid = a.Copy(details_.uid);
  d->labels = CopyLabels(a, details_.labels);
  d->node_selector = CopyLabels(a, details_.node_selector);
  d->has_required_node_affinity = details_.has_required_node_affinity;
  for (const NodeSelectorTerm& t : details_.required_node_affinity) {
    NodeSelectorTerm& copy = d->required_node_affinity.emplace_back();
    for (const NodeSelectorRequirement& r : t.match_expressions) {
      copy.match_expressions.push_back(CopyRequirement(a, r));
    }
    for (const NodeSelectorRequirement& r : t.match_fields) {
      copy.match_fields.push_back(CopyRequirement(a, r));
    }
  }
  d->has_required_pod_affinity = details_.has_required_pod_affinity;
  d->tolerations_present = details_.tolerations_present;
  for (const Toleration& t : details_.tolerations) {
    d->tolerations.push_back(
        {a.Intern(t.key), a.Intern(t.op), a.Copy(t.value), a.Intern(t.effect), t.has_seconds});
  }
  for (const ContainerResources& c : details_.containers) {
    d->containers.push_back({a.Copy(c.name), c.init, c.sidecar, CopyResources(a, c.requests),
                             CopyResources(a, c.limits)});
  }
  d->controller_api_version = a.Intern(details_.controller_api_version);
  d->controller_kind = a.Intern(details_.controller_kind);
  d->controller_name = a.Copy(details_.controller_name);
  d->controller_uid = a.Copy(details_.controller_uid);
  d->drain_notice_node = a.Copy(details_.drain_notice_node);
  d->drain_notice_deadline = a.Copy(details_.drain_notice_deadline);
  d->unschedulable_message = a.Copy(details_.unschedulable_message);
  d->ready = details_.ready;
  out.details = std::move(d);
}

}  // namespace gpunode::kube
