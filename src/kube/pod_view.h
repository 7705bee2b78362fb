// What gpunode keeps of a Pod. Every pod gets the compact summary audit needs; the few pods a
// command looks at closely (why-pending's target, a drained node's pods, an admission request)
// also carry PodDetails.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/node_view.h"
#include "kube/resource_list.h"

namespace gpunode::kube {

enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };

std::string_view PhaseName(PodPhase phase);

struct Toleration {
  std::string_view key;  // empty with operator Exists: tolerates every taint
  std::string_view op;   // "Exists" or "Equal"; empty means Equal
  std::string_view value;
  std::string_view effect;   // empty: every effect
  bool has_seconds = false;  // tolerationSeconds set (NoExecute only)
};

struct NodeSelectorRequirement {
  std::string_view key;
  std::string_view op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string_view> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;  // only metadata.name exists
};

struct ContainerResources {
  std::string_view name;
  bool init = false;
  bool sidecar = false;   // init container with restartPolicy Always: runs for the pod's life
  ResourceList requests;  // NVIDIA resources only, as written (before defaulting)
  ResourceList limits;
};

struct PodDetails {
  std::string_view uid;
  Labels labels;
  Labels node_selector;
  // spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
  bool has_required_node_affinity = false;
  std::vector<NodeSelectorTerm> required_node_affinity;
  // Inter-pod (anti-)affinity depends on other pods' labels, which gpunode does not keep.
  bool has_required_pod_affinity = false;
  bool tolerations_present = false;  // spec.tolerations exists and is not null
  std::vector<Toleration> tolerations;
  std::vector<ContainerResources> containers;  // init containers first, in spec order
  std::string_view controller_api_version;     // ownerReferences[controller=true]
  std::string_view controller_kind;
  std::string_view controller_name;
  std::string_view controller_uid;
  // The drain notice gpunode left on the pod (cluster/drain_notice.h): the draining node's name
  // and the eviction deadline, when one was set.
  std::string_view drain_notice_node;
  std::string_view drain_notice_deadline;
  // The scheduler's verdict from the PodScheduled condition, when it is False.
  std::string_view unschedulable_message;
  bool ready = false;  // the Ready condition is True
};

struct PodView {
  std::string_view ns;
  std::string_view name;
  std::string_view node_name;  // empty until scheduled
  PodPhase phase = PodPhase::kPending;
  bool terminating = false;      // metadata.deletionTimestamp set
  bool daemonset = false;        // controlled by a DaemonSet
  bool mirror = false;           // static pod mirrored from a kubelet manifest
  bool has_controller = false;   // some ownerReference has controller=true
  bool uses_empty_dir = false;   // local data that eviction destroys
  bool active_deadline = false;  // spec.activeDeadlineSeconds set
  int64_t created_unix = 0;      // metadata.creationTimestamp, seconds
  std::string_view deletion_timestamp;
  std::string_view job;  // the Job that controls it (ownerReferences), empty otherwise
  // Effective pod request per NVIDIA resource, as the scheduler computes it: the larger of the
  // sum over app containers (plus sidecars) and the largest init container; limits stand in for
  // absent requests, as API defaulting does.
  ResourceList gpu_requests;
  std::unique_ptr<PodDetails> details;

  bool Active() const { return phase != PodPhase::kSucceeded && phase != PodPhase::kFailed; }
  bool RequestsGpus() const {
    for (const ResourceAmount& r : gpu_requests) {
      if (r.milli > 0) return true;
    }
    return false;
  }
};

// "namespace/name", as kubectl names a pod in messages.
std::string NamespacedName(const PodView& pod);

// Computes PodView::gpu_requests from per-container resources, the way the scheduler does.
ResourceList EffectiveRequests(const std::vector<ContainerResources>& containers);

}  // namespace gpunode::kube
