#include "cluster/drain.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "cluster/drain_notice.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_loader.h"
#include "kube/api_status.h"
#include "kube/gpu_resources.h"
#include "kube/label_selector.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {
namespace {

using core::StrCat;

std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) core::StrAppend(&out, i ? ", " : "", names[i]);
  if (names.size() > 5) core::StrAppend(&out, " and ", names.size() - 5, " more");
  return out;
}

std::string Dur(absl::Duration d) {
  d = absl::Trunc(std::max(d, absl::ZeroDuration()), absl::Seconds(1));
  return d == absl::ZeroDuration() ? "0s" : absl::FormatDuration(d);
}

bool ShouldDrain(const kube::PodView& pod, const DrainOptions& options) {
  return !pod.daemonset && !pod.mirror && pod.Active() && (options.all_pods || pod.RequestsGpus());
}

// Reads the node's pods (with the details eviction needs) through a field selector.
absl::StatusOr<kube::ClusterSnapshot> ReadNodePods(kube::Client& client, const std::string& node,
                                                   bool with_node, bool with_budgets) {
  kube::ApiQuery query;
  query.all_nodes = false;
  query.node_name = with_node ? node : "";
  query.pod_field_selector = StrCat("spec.nodeName=", node);
  query.pdbs = with_budgets;
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView&) { return true; };
  return kube::LoadFromApi(client, query, read);
}

struct EvictionAnswer {
  enum Kind { kEvicted, kGone, kBlocked, kFailed } kind = kFailed;
  std::string message;
  absl::Duration retry_after = absl::ZeroDuration();
};

// An eviction is idempotent (a second POST for a pod already evicted answers 200 or 404), so a
// 5xx or a transport error is sent again with backoff, as the client retries its list calls.
// 429 is not: it is a PodDisruptionBudget's answer, which the drain loop paces.
constexpr int kEvictionAttempts = 5;
constexpr absl::Duration kEvictionBackoff = absl::Milliseconds(500);
constexpr absl::Duration kEvictionMaxBackoff = absl::Seconds(8);

bool ServerError(int status) {
  return status == 500 || status == 502 || status == 503 || status == 504;
}

// POSTs a policy/v1 Eviction and classifies the answer. A 429 means a PodDisruptionBudget (or
// the budget controller not having caught up) forbids it for now. kFailed comes after the
// retries: an error the server kept answering, or a transport error.
EvictionAnswer Evict(kube::Client& client, const kube::PodView& pod, core::Env& env) {
  nlohmann::json body = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", pod.name}, {"namespace", pod.ns}}}};
  kube::HttpRequest request;
  request.method = "POST";
  request.path = StrCat("/api/v1/namespaces/", kube::UrlEncode(pod.ns), "/pods/",
                        kube::UrlEncode(pod.name), "/eviction");
  request.content_type = "application/json";
  request.body = body.dump();
  absl::StatusOr<kube::HttpResponse> sent;
  absl::Duration backoff = kEvictionBackoff;
  for (int attempt = 1;; ++attempt) {
    sent = client.SendOnce(request);
    if ((sent.ok() && !ServerError(sent->status)) || attempt == kEvictionAttempts) break;
    absl::Duration wait = backoff;
    int64_t seconds = 0;
    if (sent.ok() && absl::SimpleAtoi(sent->retry_after, &seconds) && seconds > 0) {
      wait = std::min(absl::Seconds(seconds), kEvictionMaxBackoff);
    }
    env.SleepFor(wait);
    backoff = std::min(backoff * 2, kEvictionMaxBackoff);
  }
  EvictionAnswer answer;
  if (!sent.ok()) {
    answer.message =
        StrCat(std::string(sent.status().message()), " (after ", kEvictionAttempts, " attempts)");
    return answer;
  }
  const kube::HttpResponse& response = *sent;
  if (response.status == 200 || response.status == 201) {
    answer.kind = EvictionAnswer::kEvicted;
    return answer;
  }
  if (response.status == 404) {
    answer.kind = EvictionAnswer::kGone;
    return answer;
  }
  // An empty body says nothing; one that is not a Status says what is wrong with it.
  absl::StatusOr<kube::ApiStatus> status =
      response.body.empty()
          ? kube::ApiStatus()
          : kube::ReadApiStatus(response.body, StrCat(request.method, " ", request.path));
  std::string message;
  std::string causes;
  if (status.ok()) {
    message = status->message;
    causes = absl::StrJoin(status->cause_messages, "; ");
    answer.retry_after = absl::Seconds(status->retry_after_seconds);
  } else {
    message = std::string(status.status().message());
  }
  int64_t header_seconds = 0;
  if (!response.retry_after.empty() && absl::SimpleAtoi(response.retry_after, &header_seconds)) {
    answer.retry_after = std::max(answer.retry_after, absl::Seconds(header_seconds));
  }
  answer.message = message.empty() ? StrCat("HTTP ", response.status) : message;
  if (!causes.empty()) core::StrAppend(&answer.message, " (", causes, ")");
  answer.kind = response.status == 429 ? EvictionAnswer::kBlocked : EvictionAnswer::kFailed;
  if (answer.kind == EvictionAnswer::kFailed) {
    answer.message =
        StrCat("HTTP ", response.status, ": ", answer.message,
               ServerError(response.status) ? StrCat(" (after ", kEvictionAttempts, " attempts)")
                                            : std::string());
  }
  return answer;
}

// What the evictions of a drain did, pod by pod ("namespace/name", with the reason where one is
// kept).
struct EvictionRound {
  std::vector<std::string> evicted;
  std::vector<std::string> blocked;            // a PodDisruptionBudget's 429, past the timeout
  std::vector<std::string> failed;             // the API server's error after the retries
  std::vector<std::string> still_terminating;  // evicted, not gone by the eviction timeout
  std::vector<std::string> refused;            // emptyDir or no controller, without the flag

  bool Clean() const {
    return blocked.empty() && failed.empty() && still_terminating.empty() && refused.empty();
  }
  void Add(EvictionRound other) {
    for (auto [to, from] : {std::pair{&evicted, &other.evicted},
                            {&blocked, &other.blocked},
                            {&failed, &other.failed},
                            {&still_terminating, &other.still_terminating},
                            {&refused, &other.refused}}) {
      to->insert(to->end(), from->begin(), from->end());
    }
  }
};

// Evicts the pods whose time is up through the Eviction API, respecting PodDisruptionBudgets
// (retried until the eviction timeout), and waits until the evicted pods are gone (their grace
// period runs after the eviction).
absl::StatusOr<EvictionRound> EvictDue(kube::Client& client, const DrainOptions& options,
                                       core::Env& env, std::ostream& out,
                                       const std::vector<const kube::PodView*>& due) {
  struct Target {
    const kube::PodView* pod;
    std::string uid;
    bool evicted = false;
    std::string blocked;  // last 429 message
    std::string failed;   // the API server's error after the retries: not tried again
  };
  EvictionRound round;
  std::vector<Target> targets;
  for (const kube::PodView* pod : due) {
    // Pods that arrived during the wait get the same checks as the plan.
    if ((pod->uses_empty_dir && !options.delete_emptydir_data) ||
        (!pod->has_controller && !options.force)) {
      round.refused.push_back(kube::NamespacedName(*pod));
      continue;
    }
    targets.push_back({pod, pod->details ? std::string(pod->details->uid) : "", false, "", ""});
  }
  absl::Time eviction_deadline = env.Now() + options.eviction_timeout;
  for (;;) {
    absl::Duration wait = options.eviction_retry_interval;
    bool pending = false;
    for (Target& t : targets) {
      if (t.evicted || !t.failed.empty()) continue;
      EvictionAnswer answer = Evict(client, *t.pod, env);
      if (answer.kind == EvictionAnswer::kEvicted || answer.kind == EvictionAnswer::kGone) {
        t.evicted = true;
        out << (answer.kind == EvictionAnswer::kEvicted ? "evicted " : "already gone: ")
            << kube::NamespacedName(*t.pod) << "\n";
      } else if (answer.kind == EvictionAnswer::kBlocked) {
        pending = true;
        t.blocked = answer.message;
        wait = std::max(wait, answer.retry_after);
        out << "cannot evict " << kube::NamespacedName(*t.pod) << " yet: " << answer.message
            << " (will retry)\n";
      } else {
        // The other pods still get their eviction: a drain that stops here would leave the node
        // labelled with no word on what was done.
        t.failed = answer.message;
        out << "cannot evict " << kube::NamespacedName(*t.pod) << ": " << answer.message << "\n";
      }
    }
    absl::Time now = env.Now();
    if (!pending || now >= eviction_deadline) break;
    env.SleepFor(std::min(wait, eviction_deadline - now));
  }
  for (const Target& t : targets) {
    if (t.evicted) {
      round.evicted.push_back(kube::NamespacedName(*t.pod));
    } else if (!t.failed.empty()) {
      round.failed.push_back(StrCat(kube::NamespacedName(*t.pod), ": ", t.failed));
    } else {
      round.blocked.push_back(StrCat(kube::NamespacedName(*t.pod), ": ", t.blocked));
    }
  }
  if (round.evicted.empty()) return round;
  // The node's pods are read, not the first read's pointers: those point into the caller's
  // snapshot, which stays as it was.
  const std::string node(due.front()->node_name);
  for (;;) {
    ASSIGN_OR_RETURN(kube::ClusterSnapshot now_pods, ReadNodePods(client, node, false, false));
    round.still_terminating.clear();
    for (const Target& t : targets) {
      if (!t.evicted) continue;
      for (const kube::PodView& pod : now_pods.pods) {
        bool same = pod.ns == t.pod->ns && pod.name == t.pod->name &&
                    (!pod.details || t.uid.empty() || pod.details->uid == t.uid);
        if (same && pod.Active()) round.still_terminating.push_back(kube::NamespacedName(pod));
      }
    }
    absl::Time now = env.Now();
    if (round.still_terminating.empty() || now >= eviction_deadline) break;
    env.SleepFor(std::min(options.poll_interval, eviction_deadline - now));
  }
  return round;
}

// One line of the wait: how many pods, how long waited, the oldest and how long it has run, and
// when (if ever) eviction comes.
std::string ProgressLine(const DrainOptions& options,
                         const std::vector<const kube::PodView*>& remaining,
                         const std::vector<std::string>& names, absl::Duration waited,
                         absl::Time gpu_deadline, absl::Time other_deadline, absl::Time now) {
  const kube::PodView* oldest = nullptr;
  bool without_gpu = false;
  for (const kube::PodView* pod : remaining) {
    without_gpu |= !pod->RequestsGpus();
    if (pod->created_unix > 0 && (oldest == nullptr || pod->created_unix < oldest->created_unix)) {
      oldest = pod;
    }
  }
  std::string line = StrCat("waiting for ", remaining.size(), " pod(s) on ", options.node,
                            " to finish: waited ", Dur(waited));
  if (oldest != nullptr) {
    core::StrAppend(&line, ", oldest ", kube::NamespacedName(*oldest), " (running ",
                    Dur(now - absl::FromUnixSeconds(oldest->created_unix)), ")");
  }
  if (options.evict_after) {
    core::StrAppend(&line, ", evicting in ", Dur(gpu_deadline - now));
  } else {
    core::StrAppend(&line, ", GPU pods are not evicted (--evict-after sets a deadline)");
    if (without_gpu) {
      core::StrAppend(&line, ", pods without a GPU evicted in ", Dur(other_deadline - now));
    }
  }
  core::StrAppend(&line, ": ", Names(names), "\n");
  return line;
}
}  // namespace

nlohmann::json DrainNodePatch(const kube::NodeView& node, bool cordon, absl::Time now) {
  nlohmann::json metadata = {
      {"labels", {{std::string(kube::kGpuStateLabel), std::string(kube::kGpuStateDraining)}}}};
  // Keep the original start time when a drain is rerun, so audit still spots pods that arrived
  // after it began.
  if (kube::FindLabel(node.labels, kube::kGpuStateLabel) !=
      std::optional<std::string_view>(kube::kGpuStateDraining)) {
    metadata["annotations"] = {{std::string(kube::kDrainStartedAnnotation),
                                absl::FormatTime(absl::RFC3339_sec, now, absl::UTCTimeZone())}};
  }
  // Only a cordon this drain sets is recorded, so restore leaves one a person set in place.
  if (cordon && !node.unschedulable) {
    metadata["annotations"][std::string(kube::kDrainCordonedAnnotation)] = "true";
  }
  nlohmann::json patch = {{"metadata", metadata}};
  if (cordon) patch["spec"] = {{"unschedulable", true}};
  return patch;
}

bool DrainPlan::Refused() const {
  return std::any_of(pods.begin(), pods.end(), [](const PlannedPod& p) {
    return p.action == PodAction::kRefuseEmptyDir || p.action == PodAction::kRefuseUnmanaged;
  });
}

DrainPlan PlanDrain(const kube::ClusterSnapshot& snapshot, const kube::NodeView& node,
                    const DrainOptions& options) {
  DrainPlan plan;
  plan.node = std::string(node.name);
  plan.already_draining = kube::FindLabel(node.labels, kube::kGpuStateLabel) ==
                          std::optional<std::string_view>(kube::kGpuStateDraining);
  plan.budgets_known = snapshot.has_pdbs;
  for (const kube::PodView& pod : snapshot.pods) {
    if (pod.node_name != node.name || !pod.Active()) continue;
    PlannedPod p;
    p.pod = &pod;
    if (pod.mirror) {
      p.action = PodAction::kSkipMirror;
    } else if (pod.daemonset) {
      p.action = PodAction::kSkipDaemonSet;
    } else if (!options.all_pods && !pod.RequestsGpus()) {
      p.action = PodAction::kStays;
    } else {
      if (pod.uses_empty_dir && !options.delete_emptydir_data) {
        p.refusals.push_back(PodAction::kRefuseEmptyDir);
      }
      if (!pod.has_controller && !options.force) p.refusals.push_back(PodAction::kRefuseUnmanaged);
      if (!p.refusals.empty()) p.action = p.refusals.front();
    }
    if (p.action == PodAction::kDrain && pod.details) {
      for (const kube::PdbView& pdb : snapshot.pdbs) {
        if (pdb.ns == pod.ns && pdb.disruptions_allowed <= 0 &&
            kube::Matches(pdb.selector, pod.details->labels)) {
          p.blocking_budget = StrCat(pdb.ns, "/", pdb.name, " (", pdb.current_healthy,
                                     " healthy, needs ", pdb.desired_healthy, ")");
          break;
        }
      }
    }
    plan.pods.push_back(p);
  }
  std::sort(plan.pods.begin(), plan.pods.end(), [](const PlannedPod& a, const PlannedPod& b) {
    return std::tie(a.pod->ns, a.pod->name) < std::tie(b.pod->ns, b.pod->name);
  });
  return plan;
}

void PrintPlan(const DrainPlan& plan, const DrainOptions& options, std::ostream& out) {
  out << "drain " << plan.node << " (dry run):\n";
  out << "  label " << kube::kGpuStateLabel << "=" << kube::kGpuStateDraining
      << (plan.already_draining ? " (already set)" : "") << "\n";
  out << (options.cordon ? "  cordon the node\n" : "  leave the node schedulable (no --cordon)\n");
  int to_drain = 0;
  for (const PlannedPod& p : plan.pods) {
    std::string name = kube::NamespacedName(*p.pod);
    switch (p.action) {
      case PodAction::kDrain:
        ++to_drain;
        if (!p.pod->RequestsGpus()) {
          out << "  wait up to " << Dur(options.evict_after.value_or(options.other_pods_timeout))
              << " for " << name << " (holds no GPU) to finish, then evict it";
        } else if (options.evict_after) {
          out << "  wait up to " << Dur(*options.evict_after) << " for " << name
              << " to finish, then evict it";
        } else {
          out << "  wait for " << name
              << " to finish; it is not evicted (--evict-after sets a deadline)";
        }
        // A budget matters only to a pod that is to be evicted.
        if (!p.blocking_budget.empty() && (options.evict_after || !p.pod->RequestsGpus())) {
          out << " (PodDisruptionBudget " << p.blocking_budget << " blocks eviction now)";
        }
        out << "\n";
        break;
      case PodAction::kSkipDaemonSet:
        out << "  skip " << name << " (DaemonSet pod)\n";
        break;
      case PodAction::kSkipMirror:
        out << "  skip " << name << " (static pod)\n";
        break;
      case PodAction::kStays:
        out << "  leave " << name << " (requests no GPU; --all-pods evicts it too)\n";
        break;
      case PodAction::kRefuseEmptyDir:
      case PodAction::kRefuseUnmanaged: {
        out << "  REFUSE " << name << ":";
        const char* separator = " ";
        for (PodAction refusal : p.refusals) {
          out << separator
              << (refusal == PodAction::kRefuseEmptyDir
                      ? "uses emptyDir, whose data eviction deletes (--delete-emptydir-data)"
                      : "no controller will recreate it (--force evicts it anyway)");
          separator = "; ";
        }
        out << "\n";
        break;
      }
    }
  }
  if (to_drain == 0) out << "  no GPU pods to wait for\n";
  int gpu_pods =
      static_cast<int>(std::count_if(plan.pods.begin(), plan.pods.end(), [](const PlannedPod& p) {
        return p.action == PodAction::kDrain && p.pod->RequestsGpus();
      }));
  if (gpu_pods > 0 && options.tell_owners) {
    out << "  tell the owners of " << gpu_pods << " GPU pod(s): Event NodeDraining on each pod "
        << "and its controllers, pod annotation " << kube::kDrainNoticeNodeAnnotation
        << (options.evict_after ? StrCat(" and ", kube::kDrainNoticeDeadlineAnnotation) : "")
        << "\n";
  }
  if (!plan.budgets_known) {
    out << "  (no PodDisruptionBudgets in the input: add them to the snapshot with `kubectl get "
           "nodes,pods,pdb -A -o json` to see which would block)\n";
  }
}

absl::StatusOr<DrainOutcome> RunDrain(kube::Client& client, const DrainOptions& options,
                                      core::Env& env, std::ostream& out) {
  absl::StatusOr<kube::ClusterSnapshot> first = ReadNodePods(client, options.node, true, true);
  if (absl::IsPermissionDenied(first.status()) || absl::IsNotFound(first.status())) {
    // Budgets are an extra for the plan (not readable without RBAC, absent before policy/v1);
    // the Eviction API enforces them regardless. A missing node fails again below.
    first = ReadNodePods(client, options.node, true, false);
  }
  if (!first.ok()) return first.status();
  const kube::NodeView* node = first->FindNode(options.node);
  if (node == nullptr) {
    return absl::NotFoundError(StrCat("node ", options.node, " not found"));
  }
  DrainPlan plan = PlanDrain(*first, *node, options);
  int skipped =
      static_cast<int>(std::count_if(plan.pods.begin(), plan.pods.end(), [](const PlannedPod& p) {
        return p.action == PodAction::kSkipDaemonSet || p.action == PodAction::kSkipMirror;
      }));
  DrainOutcome outcome;
  if (options.dry_run) {
    PrintPlan(plan, options, out);
    outcome.end = plan.Refused() ? DrainOutcome::End::kRefused : DrainOutcome::End::kDrained;
    outcome.summary = plan.Refused() ? "dry run: the drain would refuse some pods (see REFUSE)"
                                     : "dry run: nothing was changed";
    return outcome;
  }
  if (plan.Refused()) {
    std::vector<std::string> empty_dir, unmanaged;
    for (const PlannedPod& p : plan.pods) {
      for (PodAction refusal : p.refusals) {
        (refusal == PodAction::kRefuseEmptyDir ? empty_dir : unmanaged)
            .push_back(kube::NamespacedName(*p.pod));
      }
    }
    outcome.end = DrainOutcome::End::kRefused;
    outcome.summary = StrCat("refusing to drain ", options.node, ", nothing was changed:");
    if (!empty_dir.empty()) {
      core::StrAppend(&outcome.summary, " ", Names(empty_dir),
                      " use emptyDir (evicting deletes that data; pass --delete-emptydir-data)");
    }
    if (!unmanaged.empty()) {
      core::StrAppend(&outcome.summary, empty_dir.empty() ? " " : "; ", Names(unmanaged),
                      " have no controller to recreate them (pass --force)");
    }
    return outcome;
  }

  RETURN_IF_ERROR(client.Patch(StrCat("/api/v1/nodes/", kube::UrlEncode(options.node)),
                               "application/merge-patch+json",
                               DrainNodePatch(*node, options.cordon, env.Now()).dump()));
  out << "node " << options.node << " labelled " << kube::kGpuStateLabel << "="
      << kube::kGpuStateDraining << (options.cordon ? " and cordoned" : "") << "\n";

  const absl::Time start = env.Now();
  const absl::Time gpu_deadline =
      options.evict_after ? start + *options.evict_after : absl::InfiniteFuture();
  const absl::Time other_deadline =
      start + options.evict_after.value_or(options.other_pods_timeout);
  DrainNotice notice{
      .node = options.node,
      .why = options.why,
      .component = options.component,
      .deadline = options.evict_after ? std::optional<absl::Time>(gpu_deadline) : std::nullopt};
  DrainNotifier notifier;
  std::set<std::string> seen, evicted_seen;
  EvictionRound evictions;
  std::vector<std::string> last_remaining;
  absl::Time last_progress = absl::InfinitePast();
  kube::ClusterSnapshot current = std::move(*first);
  bool incomplete = false;
  for (;;) {
    const absl::Time now = env.Now();
    std::vector<const kube::PodView*> remaining, gpu_pods, due;
    absl::Time next_due = absl::InfiniteFuture();
    for (const kube::PodView& pod : current.pods) {
      if (!ShouldDrain(pod, options)) continue;
      remaining.push_back(&pod);
      seen.insert(kube::NamespacedName(pod));
      if (pod.RequestsGpus()) gpu_pods.push_back(&pod);
      absl::Time deadline = pod.RequestsGpus() ? gpu_deadline : other_deadline;
      if (deadline <= now) {
        due.push_back(&pod);
      } else {
        next_due = std::min(next_due, deadline);
      }
    }
    if (options.tell_owners) {
      for (const std::string& problem : notifier.Tell(client, gpu_pods, notice, now)) {
        out << "cannot tell every owner that " << options.node << " is draining: " << problem
            << "\n";
      }
    }
    if (remaining.empty()) break;
    if (!due.empty()) {
      ASSIGN_OR_RETURN(EvictionRound round, EvictDue(client, options, env, out, due));
      for (const std::string& name : round.evicted) evicted_seen.insert(name);
      evictions.Add(std::move(round));
      if (!evictions.Clean()) {
        incomplete = true;
        break;
      }
      ASSIGN_OR_RETURN(current, ReadNodePods(client, options.node, false, false));
      continue;
    }
    std::vector<std::string> names;
    for (const kube::PodView* pod : remaining) names.push_back(kube::NamespacedName(*pod));
    if (names != last_remaining || now - last_progress >= options.progress_every) {
      out << ProgressLine(options, remaining, names, now - start, gpu_deadline, other_deadline, now)
          << std::flush;
      last_remaining = names;
      last_progress = now;
    }
    env.SleepFor(std::min(options.poll_interval, next_due - now));
    ASSIGN_OR_RETURN(current, ReadNodePods(client, options.node, false, false));
  }
  if (!incomplete) {
    // Every pod seen is gone: what was not evicted finished on its own.
    const size_t finished = seen.size() - evicted_seen.size();
    outcome.end = DrainOutcome::End::kDrained;
    outcome.summary =
        StrCat("node ", options.node, " drained: ", finished, " pod(s) finished on their own, ",
               evictions.evicted.size(), " evicted, ", skipped,
               " DaemonSet/static pod(s) left in place; run `gpunode cluster "
               "restore ",
               options.node, "` after maintenance");
    return outcome;
  }
  outcome.summary = StrCat("drain of ", options.node,
                           " is incomplete (the node stays labelled "
                           "draining):");
  core::StrAppend(&outcome.summary, " evicted: ",
                  evictions.evicted.empty() ? std::string("none") : Names(evictions.evicted), ";");
  if (!evictions.failed.empty()) {
    core::StrAppend(&outcome.summary,
                    " not evicted, the API server failed: ", Names(evictions.failed), ";");
  }
  if (!evictions.blocked.empty()) {
    core::StrAppend(&outcome.summary, " still blocked after ", Dur(options.eviction_timeout), ": ",
                    Names(evictions.blocked), ";");
  }
  if (!evictions.still_terminating.empty()) {
    core::StrAppend(&outcome.summary,
                    " evicted but still terminating: ", Names(evictions.still_terminating), ";");
  }
  if (!evictions.refused.empty()) {
    core::StrAppend(&outcome.summary,
                    " not evicted (emptyDir or no controller; see "
                    "--delete-emptydir-data and --force): ",
                    Names(evictions.refused), ";");
  }
  core::StrAppend(&outcome.summary, " run the drain again to continue");
  return outcome;
}

}  // namespace gpunode::cluster
