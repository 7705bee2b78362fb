#include "cluster/audit.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "cluster/image_pulls.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

constexpr size_t kNamesShown = 5;

std::string NodeObject(std::string_view name) { return StrCat("node/", name); }

std::string NameList(const std::vector<const kube::PodView*>& pods) {
  std::string out;
  for (size_t i = 0; i < pods.size() && i < kNamesShown; ++i) {
    core::StrAppend(&out, i ? ", " : "", kube::NamespacedName(*pods[i]));
  }
  if (pods.size() > kNamesShown) core::StrAppend(&out, " and ", pods.size() - kNamesShown, " more");
  return out;
}

std::string Amount(int64_t milli, std::string_view resource) {
  return StrCat(kube::FormatMilli(milli), " ", resource);
}

// Per-node working state while the pods stream by.
struct NodeWork {
  const kube::NodeView* node = nullptr;
  bool gpu = false;
  NodeSummary summary;
  std::vector<const kube::PodView*> cpu_pods;
  std::vector<const kube::PodView*> new_gpu_pods;  // arrived after the drain began
  int64_t drain_started = 0;
};

int64_t ParseTime(std::string_view rfc3339) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(rfc3339), &t, &err)) return 0;
  return absl::ToUnixSeconds(t);
}

}  // namespace

ResourceUsage NodeSummary::Gpu() const {
  for (const ResourceUsage& r : resources) {
    if (r.resource == kube::kGpuResource) return r;
  }
  return ResourceUsage{std::string(kube::kGpuResource)};
}

int AuditReport::Count(Severity severity) const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(),
                                        [&](const Finding& f) { return f.severity == severity; }));
}

AuditReport Audit(const kube::ClusterSnapshot& snapshot, const AuditOptions& options) {
  AuditReport report;
  report.node_count = snapshot.nodes.size();
  report.pod_count = snapshot.pods.size();

  std::vector<NodeWork> work(snapshot.nodes.size());
  absl::flat_hash_map<std::string_view, size_t> by_name;
  by_name.reserve(snapshot.nodes.size());
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    const kube::NodeView& node = snapshot.nodes[i];
    NodeWork& w = work[i];
    w.node = &node;
    w.gpu = IsGpuNode(node, options.count_label);
    by_name.emplace(node.name, i);
    NodeSummary& s = w.summary;
    s.name = std::string(node.name);
    s.ready = node.ready;
    s.unschedulable = node.unschedulable;
    if (auto state = kube::FindLabel(node.labels, kube::kGpuStateLabel)) {
      s.gpu_state = std::string(*state);
    }
    ExpectedGpus expected = ExpectedGpusOf(node, options.count_label);
    s.gpu_count = expected.count;
    s.missing_gpus = expected.missing.addresses;
    s.missing_gpus_unnamed = expected.missing.unlisted + expected.missing.unknown;
    for (const kube::ResourceAmount& r : node.capacity) {
      s.resources.push_back(
          {std::string(r.name), r.milli, kube::MilliOf(node.allocatable, r.name), 0});
    }
    for (const kube::ResourceAmount& r : node.allocatable) {
      if (!kube::FindResource(node.capacity, r.name)) {
        s.resources.push_back({std::string(r.name), 0, r.milli, 0});
      }
    }
    if (s.gpu_state == kube::kGpuStateDraining && !node.drain_started_at.empty()) {
      w.drain_started = ParseTime(node.drain_started_at);
    }
  }

  for (const kube::PodView& pod : snapshot.pods) {
    if (!pod.Active() || pod.node_name.empty()) continue;
    const bool holds_gpus = pod.RequestsGpus();
    if (holds_gpus) ++report.active_gpu_pods;
    auto it = by_name.find(pod.node_name);
    NodeWork* w = it == by_name.end() ? nullptr : &work[it->second];

    if (holds_gpus) {
      std::string reason;
      if (w == nullptr) {
        reason = StrCat("its node ", pod.node_name, " no longer exists");
      } else if (pod.phase == kube::PodPhase::kUnknown) {
        reason = StrCat("in phase Unknown on node ", pod.node_name,
                        " (the kubelet stopped reporting it)");
      } else if (pod.terminating) {
        reason = StrCat("terminating since ", pod.deletion_timestamp, " on node ", pod.node_name);
      } else if (w->node->ready != kube::ConditionStatus::kTrue) {
        reason = StrCat("its node ", pod.node_name, " is NotReady");
      }
      if (!reason.empty()) {
        std::string held;
        for (const kube::ResourceAmount& r : pod.gpu_requests) {
          core::StrAppend(&held, held.empty() ? "" : " and ", Amount(r.milli, r.name));
        }
        report.findings.push_back(
            {std::string(kFindingZombiePod), Severity::kError,
             StrCat("pod/", pod.ns, "/", pod.name),
             StrCat("pod ", kube::NamespacedName(pod), " holds ", held, " while ", reason),
             StrCat("check that the node is down or the pod's containers are gone (`kubectl "
                    "describe node ",
                    pod.node_name, "`), then `kubectl delete pod -n ", pod.ns, " ", pod.name,
                    " --grace-period=0 --force`")});
      }
    }
    if (w == nullptr || !w->gpu) continue;
    for (const kube::ResourceAmount& r : pod.gpu_requests) {
      auto usage = std::find_if(w->summary.resources.begin(), w->summary.resources.end(),
                                [&](const ResourceUsage& u) { return u.resource == r.name; });
      if (usage == w->summary.resources.end()) {
        w->summary.resources.push_back({std::string(r.name), 0, 0, r.milli});
      } else {
        usage->requested += r.milli;
      }
    }
    if (holds_gpus) {
      ++w->summary.gpu_pods;
      if (w->drain_started != 0 && pod.created_unix >= w->drain_started) {
        w->new_gpu_pods.push_back(&pod);
      }
    } else if (!pod.daemonset && !pod.mirror) {
      // DaemonSets (device plugin, exporters) and static pods belong on every node.
      w->cpu_pods.push_back(&pod);
    }
  }

  for (NodeWork& w : work) {
    if (!w.gpu) continue;
    const kube::NodeView& node = *w.node;
    NodeSummary& s = w.summary;
    std::sort(s.resources.begin(), s.resources.end(),
              [](const ResourceUsage& a, const ResourceUsage& b) {
                bool a_gpu = a.resource == kube::kGpuResource;
                bool b_gpu = b.resource == kube::kGpuResource;
                return a_gpu != b_gpu ? a_gpu : a.resource < b.resource;
              });
    std::string object = NodeObject(node.name);
    ExpectedGpus expected = ExpectedGpusOf(node, options.count_label);
    // Where a count is short, the GPU the labeller finds on the bus and the driver does not.
    std::string missing = expected.missing.empty() ? "" : "; " + expected.MissingText();
    bool missing_said = false;
    for (const ResourceUsage& r : s.resources) {
      if (r.allocatable < r.capacity) {
        bool whole_gpus = r.resource == kube::kGpuResource;
        missing_said = missing_said || whole_gpus;
        report.findings.push_back(
            {std::string(kFindingGpuUnhealthy), Severity::kError, object,
             StrCat("node ", node.name, ": ", kube::FormatMilli(r.capacity - r.allocatable), " of ",
                    Amount(r.capacity, r.resource), " are unhealthy (capacity ",
                    kube::FormatMilli(r.capacity), ", allocatable ",
                    kube::FormatMilli(r.allocatable), ")", whole_gpus ? missing : ""),
             StrCat("the device plugin marks a GPU unhealthy after an XID error: run `gpunode "
                    "doctor` on ",
                    node.name,
                    " (or check `nvidia-smi -q` and the kernel log), then drain it "
                    "for repair with `gpunode cluster drain ",
                    node.name, "`")});
      }
      if (r.requested > r.allocatable) {
        report.findings.push_back(
            {std::string(kFindingAccountingLeak), Severity::kError, object,
             StrCat("node ", node.name, ": active pods request ", Amount(r.requested, r.resource),
                    " but only ", kube::FormatMilli(r.allocatable), " are allocatable"),
             StrCat("look for zombie pods on the node (`kubectl get pods -A -o wide "
                    "--field-selector spec.nodeName=",
                    node.name,
                    "`); if there are none, GPUs went unhealthy under running pods: "
                    "drain the node and restart the device plugin")});
      }
    }
    int64_t capacity = s.Gpu().capacity;
    if (expected.LabelsDisagree()) {
      report.findings.push_back(
          {std::string(kFindingGpuCountLabels), Severity::kError, object,
           StrCat("node ", node.name, ": ", expected.Disagreement()),
           StrCat("one of them is wrong: compare with `nvidia-smi -L` on ", node.name,
                  ", then fix your label (`kubectl label node ", node.name, " ", expected.own_key,
                  "=N --overwrite`) or look at gpu-feature-discovery, which writes ",
                  kube::kGpuCountLabel)});
    }
    auto want = expected.WantedGpus();
    if (want && capacity != *want * 1000) {
      std::string want_text =
          expected.replicas > 1
              ? StrCat(*want, " (", *expected.count, " GPUs x ", expected.replicas, " replicas)")
              : StrCat(*want);
      report.findings.push_back(
          {std::string(kFindingGpuCountMismatch), Severity::kError, object,
           StrCat("node ", node.name, " advertises ", Amount(capacity, kube::kGpuResource),
                  " but should advertise ", want_text, " (", expected.Source(), ")", missing),
           StrCat("a GPU is missing (fallen off the bus?) or the device plugin is not running: "
                  "check `nvidia-smi` and the kernel log on ",
                  node.name, ", and the nvidia-device-plugin pod on it")});
    } else if (!missing.empty() && !missing_said && !expected.LabelsDisagree()) {
      // The device plugin still advertises every GPU as healthy, but the driver lost one.
      report.findings.push_back(
          {std::string(kFindingGpuCountMismatch), Severity::kError, object,
           StrCat("node ", node.name, " advertises ", Amount(capacity, kube::kGpuResource),
                  " as healthy, but its labeller finds a GPU the driver does not see", missing),
           StrCat("check `nvidia-smi` and the kernel log on ", node.name,
                  " (XID 79: fallen off the bus), then reseat or replace the GPU; the device "
                  "plugin will mark it unhealthy")});
    }
    bool tainted = std::any_of(node.taints.begin(), node.taints.end(), [](const kube::Taint& t) {
      return t.key == kube::kGpuTaintKey && t.effect == "NoSchedule";
    });
    if (!tainted) {
      report.findings.push_back(
          {std::string(kFindingUntaintedGpuNode), Severity::kWarning, object,
           StrCat("GPU node ", node.name, " has no ", kube::kGpuTaintKey,
                  " NoSchedule taint, so pods that need no GPU can land on it"),
           StrCat("`kubectl taint nodes ", node.name, " ", kube::kGpuTaintKey,
                  "=present:NoSchedule`, and deploy `gpunode webhook` so GPU pods get the "
                  "toleration")});
    }
    if (!w.cpu_pods.empty()) {
      report.findings.push_back(
          {std::string(kFindingCpuPodsOnGpuNode), Severity::kWarning, object,
           StrCat(w.cpu_pods.size(), " pod(s) that request no GPU run on GPU node ", node.name,
                  ": ", NameList(w.cpu_pods)),
           StrCat("taint the node (", kube::kGpuTaintKey,
                  "=present:NoSchedule) so CPU work goes elsewhere, or give these workloads a "
                  "nodeSelector for CPU nodes")});
    }
    if (!w.new_gpu_pods.empty()) {
      report.findings.push_back(
          {std::string(kFindingDrainingNodeNewPods), Severity::kError, object,
           StrCat("node ", node.name, " has been draining since ", node.drain_started_at, " (",
                  kube::kGpuStateLabel, "=draining) but received ", w.new_gpu_pods.size(),
                  " new GPU pod(s): ", NameList(w.new_gpu_pods)),
           "add the node affinity in deploy/cluster/draining-anti-affinity.yaml to GPU workloads, "
           "or cordon the node (`gpunode cluster drain NODE --cordon`)"});
    }
    report.nodes.push_back(std::move(s));
  }
  AddJobHygieneFindings(snapshot, options.hygiene, report.findings);
  AddImagePullFindings(snapshot, options.slow_pull, report.findings);
  std::sort(report.nodes.begin(), report.nodes.end(),
            [](const NodeSummary& a, const NodeSummary& b) { return a.name < b.name; });
  std::stable_sort(
      report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
        return std::tie(b.severity, a.id, a.object) < std::tie(a.severity, b.id, b.object);
      });
  return report;
}

}  // namespace gpunode::cluster
