#include "cluster/why_pending.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "cluster/scheduling.h"
#include "core/text.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;
using kube::FormatMilli;

std::vector<PodProblem> ValidateResources(const kube::PodDetails& details) {
  std::vector<PodProblem> out;
  int app_index = 0, init_index = 0;
  for (const kube::ContainerResources& c : details.containers) {
    std::string field = c.init ? StrCat("spec.initContainers[", init_index++, "]")
                               : StrCat("spec.containers[", app_index++, "]");
    for (const kube::ResourceAmount& req : c.requests) {
      const kube::ResourceAmount* lim = kube::FindResource(c.limits, req.name);
      if (lim == nullptr) {
        out.push_back(
            {"limit-missing", StrCat(field,
                                     ".resources.limits: Required value: Limit must be set for "
                                     "non overcommitable resources (",
                                     req.name, ")")});
      } else if (lim->milli != req.milli) {
        out.push_back({"requests-not-equal-limits",
                       StrCat(field, ".resources.requests: Invalid value: \"", req.text,
                              "\": must be equal to ", req.name, " limit of ", lim->text)});
      }
    }
    for (const kube::ResourceList* list : {&c.requests, &c.limits}) {
      for (const kube::ResourceAmount& r : *list) {
        // A fractional value is reported once, on the limit when there is one.
        if (list == &c.requests && kube::FindResource(c.limits, r.name)) continue;
        if (!kube::IsWholeMilli(r.milli)) {
          out.push_back(
              {"not-integer",
               StrCat(field, ".resources.", list == &c.requests ? "requests" : "limits", "[",
                      r.name, "]: Invalid value: \"", r.text, "\": must be an integer")});
        }
      }
    }
  }
  return out;
}

constexpr std::string_view kCordonTaint = "node.kubernetes.io/unschedulable";

// Taints the node lifecycle controller adds for a node condition and removes when it clears.
bool IsConditionTaint(std::string_view key) {
  return key == "node.kubernetes.io/not-ready" || key == "node.kubernetes.io/unreachable" ||
         key == "node.kubernetes.io/memory-pressure" || key == "node.kubernetes.io/disk-pressure" ||
         key == "node.kubernetes.io/pid-pressure" ||
         key == "node.kubernetes.io/network-unavailable" || key == kCordonTaint;
}

}  // namespace

absl::StatusOr<PendingReport> WhyPending(const kube::ClusterSnapshot& snapshot, std::string_view ns,
                                         std::string_view name) {
  const kube::PodView* pod = snapshot.FindPod(ns, name);
  if (pod == nullptr) {
    return absl::NotFoundError(StrCat("pod ", ns, "/", name, " not found"));
  }
  if (pod->details == nullptr) {
    return absl::InternalError("why-pending needs the pod's details; read them with the snapshot");
  }
  const kube::PodDetails& details = *pod->details;
  PendingReport report;
  report.ns = std::string(ns);
  report.name = std::string(name);
  report.phase = std::string(kube::PhaseName(pod->phase));
  report.node_name = std::string(pod->node_name);
  for (const kube::ResourceAmount& r : pod->gpu_requests) {
    report.requests.emplace_back(std::string(r.name), r.milli);
  }
  report.recorded_message = std::string(details.unschedulable_message);
  report.pod_affinity_ignored = details.has_required_pod_affinity;
  report.problems = ValidateResources(details);

  if (pod->phase != kube::PodPhase::kPending) {
    report.verdict = {"not-pending",
                      StrCat("the pod is ", report.phase, report.node_name.empty() ? "" : " on ",
                             report.node_name, "; nothing is holding it back")};
    return report;
  }
  if (!report.problems.empty()) {
    report.verdict = {
        "invalid", StrCat("the pod's GPU resources are invalid (", report.problems.front().message,
                          "); fix the manifest: extended resources need integer "
                          "requests equal to their limits")};
  }

  // Free resources per node: allocatable minus what active pods bound there request.
  absl::flat_hash_map<std::string_view, kube::ResourceList> used;
  for (const kube::PodView& p : snapshot.pods) {
    if (!p.Active() || p.node_name.empty() || &p == pod) continue;
    for (const kube::ResourceAmount& r : p.gpu_requests)
      kube::AddMilli(used[p.node_name], r.name, r.milli);
  }

  std::map<std::string, int> histogram;  // the scheduler's FitError tally
  std::vector<std::string_view> would_fit_later;
  std::vector<std::string_view> fits_now;
  std::map<std::string_view, int64_t> largest;  // per resource, the largest node capacity
  for (const kube::NodeView& node : snapshot.nodes) {
    for (const kube::ResourceAmount& r : node.capacity) {
      largest[r.name] = std::max(largest[r.name], r.milli);
    }
  }

  for (const kube::NodeView& node : snapshot.nodes) {
    NodeFit fit;
    fit.node = std::string(node.name);
    bool permanent = false;
    // In kube-scheduler's filter order: NodeUnschedulable, TaintToleration, NodeAffinity,
    // NodeResourcesFit. The first failure is what the scheduler's message counts.
    if (node.unschedulable && !ToleratesUnschedulable(details.tolerations)) {
      fit.reasons.push_back(
          {std::string(kReasonUnschedulable), "node(s) were unschedulable (cordoned)", true});
      if (fit.scheduler_reason.empty()) fit.scheduler_reason = "node(s) were unschedulable";
    }
    for (const kube::Taint& taint : UntoleratedTaints(details.tolerations, node)) {
      // The cordon taint repeats spec.unschedulable, reported above.
      if (node.unschedulable && taint.key == kCordonTaint) continue;
      std::string msg = StrCat("node(s) had untolerated taint ", TaintText(taint));
      // kube-scheduler (v1.36, the release tests/k8s runs) no longer names the taint in its
      // message; the reasons per node still do.
      if (fit.scheduler_reason.empty()) fit.scheduler_reason = "node(s) had untolerated taint(s)";
      bool passing = IsConditionTaint(taint.key);
      std::string near_miss = TolerationNearMiss(details.tolerations, taint);
      fit.reasons.push_back(
          {std::string(kReasonTaint),
           passing ? StrCat(msg, " (effect ", taint.effect,
                            "; the node lifecycle controller removes it when the node recovers)")
                   : StrCat(msg, " (effect ", taint.effect, "; ",
                            near_miss.empty() ? StrCat("add a toleration for key ", taint.key)
                                              : near_miss,
                            ")"),
           passing});
      permanent |= !passing;
    }
    if (!MatchesNodeSelectorAndAffinity(details, node)) {
      std::string msg = "node(s) didn't match Pod's node affinity/selector";
      if (fit.scheduler_reason.empty()) fit.scheduler_reason = msg;
      fit.reasons.push_back(
          {std::string(kReasonAffinity),
           StrCat(msg, " (", NodeSelectionMismatch(details, node, snapshot.nodes), ")"), false});
      permanent = true;
    }
    const kube::ResourceList& node_used = used[node.name];
    for (const kube::ResourceAmount& want : pod->gpu_requests) {
      int64_t capacity = kube::MilliOf(node.capacity, want.name);
      int64_t allocatable = kube::MilliOf(node.allocatable, want.name);
      int64_t free = allocatable - kube::MilliOf(node_used, want.name);
      if (want.milli <= free) continue;
      std::string msg = StrCat("Insufficient ", want.name);
      if (fit.scheduler_reason.empty()) fit.scheduler_reason = msg;
      if (want.milli > capacity) {
        fit.reasons.push_back({std::string(kReasonExceedsCapacity),
                               capacity == 0
                                   ? StrCat(msg, " (wanted ", FormatMilli(want.milli),
                                            "; the node has no ", want.name, ")")
                                   : StrCat(msg, " (wanted ", FormatMilli(want.milli),
                                            ", the node has ", FormatMilli(capacity), " in all)"),
                               false});
        permanent = true;
      } else if (want.milli > allocatable) {
        fit.reasons.push_back({std::string(kReasonInsufficient),
                               StrCat(msg, " (wanted ", FormatMilli(want.milli), ", free ",
                                      FormatMilli(std::max<int64_t>(free, 0)), "; ",
                                      FormatMilli(capacity - allocatable), " of ",
                                      FormatMilli(capacity), " are unhealthy)"),
                               true});
      } else {
        fit.reasons.push_back({std::string(kReasonInsufficient),
                               StrCat(msg, " (wanted ", FormatMilli(want.milli), ", free ",
                                      FormatMilli(std::max<int64_t>(free, 0)), ")"),
                               true});
      }
    }
    if (fit.reasons.empty()) {
      fits_now.push_back(node.name);
    } else {
      ++histogram[fit.scheduler_reason];
      if (!permanent) would_fit_later.push_back(node.name);
    }
    report.nodes.push_back(std::move(fit));
  }
  std::sort(report.nodes.begin(), report.nodes.end(),
            [](const NodeFit& a, const NodeFit& b) { return a.node < b.node; });

  // "0/N nodes are available: <count> <reason>, ...": entries sorted as strings, as
  // kube-scheduler's FitError does.
  std::vector<std::string> entries;
  for (const auto& [reason, count] : histogram) entries.push_back(StrCat(count, " ", reason));
  std::sort(entries.begin(), entries.end());
  report.scheduler_message =
      StrCat(fits_now.size(), "/", snapshot.nodes.size(), " nodes are available");
  if (!entries.empty()) {
    core::StrAppend(&report.scheduler_message, ": ");
    for (size_t i = 0; i < entries.size(); ++i) {
      core::StrAppend(&report.scheduler_message, i ? ", " : "", entries[i]);
    }
  }
  core::StrAppend(&report.scheduler_message, ".");

  if (!report.verdict.code.empty()) return report;  // invalid
  if (!pod->node_name.empty()) {
    report.verdict = {"bound", StrCat("the pod is scheduled to ", pod->node_name,
                                      " and waits for the kubelet (image pull, volumes or device "
                                      "allocation): see `kubectl describe pod -n ",
                                      ns, " ", name, "`")};
    return report;
  }
  for (const kube::ResourceAmount& want : pod->gpu_requests) {
    int64_t biggest = largest.count(want.name) ? largest[want.name] : 0;
    if (want.milli > biggest) {
      report.verdict = {
          "never", StrCat("cannot schedule: it requests ", FormatMilli(want.milli), " ", want.name,
                          " but the largest node has ", FormatMilli(biggest),
                          "; no amount of waiting helps: lower the request or add larger "
                          "nodes")};
      return report;
    }
  }
  auto join = [](const std::vector<std::string_view>& names) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < 5; ++i)
      core::StrAppend(&out, i ? ", " : "", names[i]);
    if (names.size() > 5) core::StrAppend(&out, " and ", names.size() - 5, " more");
    return out;
  };
  if (!fits_now.empty()) {
    report.verdict = {"fits-now",
                      StrCat("fits now on ", join(fits_now),
                             "; if it stays Pending, the cause is not GPUs, taints or selectors: "
                             "see the events in `kubectl describe pod -n ",
                             ns, " ", name, "`")};
  } else if (!would_fit_later.empty()) {
    report.verdict = {"wait", StrCat("waiting helps: it fits on ", join(would_fit_later),
                                     " once running pods free enough GPUs (or the node is "
                                     "uncordoned / its GPUs recover)")};
  } else {
    report.verdict = {"never",
                      "cannot schedule: every node is excluded by a taint, a selector or its size; "
                      "fix the pod's tolerations or selectors (see the reasons per node)"};
  }
  return report;
}

}  // namespace gpunode::cluster
