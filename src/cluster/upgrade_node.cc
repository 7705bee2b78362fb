#include "cluster/upgrade_node.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_join.h"
#include "cluster/drain.h"
#include "cluster/maintenance_job.h"
#include "cluster/restore.h"
#include "cluster/verify.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_loader.h"
#include "kube/job_status.h"

namespace gpunode::cluster {
namespace {

using json = nlohmann::json;
using core::StrCat;

// Merges the JSON merge patch `extra` into `patch`.
void Merge(json& patch, const json& extra) {
  for (const auto& [key, value] : extra.items()) {
    if (value.is_object() && patch.contains(key) && patch[key].is_object()) {
      Merge(patch[key], value);
    } else {
      patch[key] = value;
    }
  }
}

// Whether the state's time ran out, counted from when the node entered it.
bool TimedOut(const StepContext& ctx, const FleetNode& node, absl::Duration limit) {
  return node.since != absl::InfinitePast() && ctx.env.Now() - node.since >= limit;
}

// The pods the node waits for before evictions begin: those --wait-for-jobs selects, else the
// GPU pods a drain would evict. Points into `pods`, read with the pods' details.
absl::StatusOr<std::vector<const kube::PodView*>> PodsToWaitFor(StepContext& ctx,
                                                                const FleetNode& node,
                                                                kube::ClusterSnapshot& pods) {
  kube::ApiQuery query;
  query.all_nodes = false;
  query.node_name = node.name;
  query.pod_field_selector = StrCat("spec.nodeName=", node.name);
  query.pod_label_selector = ctx.options.wait_for_jobs;
  kube::ReadOptions read;
  read.keep_pod_details = [](const kube::PodView&) { return true; };
  ASSIGN_OR_RETURN(pods, kube::LoadFromApi(ctx.client, query, read));
  const kube::NodeView* view = pods.FindNode(node.name);
  if (view == nullptr) return absl::NotFoundError(StrCat("node ", node.name, " not found"));
  std::vector<const kube::PodView*> waited_for;
  if (!ctx.options.wait_for_jobs.empty()) {
    for (const kube::PodView& pod : pods.pods) {
      if (pod.node_name == node.name && pod.Active()) waited_for.push_back(&pod);
    }
    return waited_for;
  }
  DrainOptions drain;
  drain.node = node.name;
  for (const PlannedPod& p : PlanDrain(pods, *view, drain).pods) {
    if (p.action == PodAction::kSkipDaemonSet || p.action == PodAction::kSkipMirror ||
        p.action == PodAction::kStays) {
      continue;
    }
    waited_for.push_back(p.pod);
  }
  return waited_for;
}

// One round of `cluster drain` with no waiting: evictions are sent once, and the next step looks
// again. Returns whether the node is drained; refusals and the drain timeout fail the node.
absl::StatusOr<bool> DrainRound(StepContext& ctx, const FleetNode& node, bool all_pods) {
  DrainOptions drain;
  drain.node = node.name;
  drain.cordon = true;
  drain.all_pods = all_pods;
  drain.delete_emptydir_data = ctx.options.delete_emptydir_data;
  drain.force = ctx.options.force;
  drain.evict_after = absl::ZeroDuration();
  drain.eviction_timeout = absl::ZeroDuration();
  // wait-for-jobs-required told the owners, and this state evicts at once.
  drain.tell_owners = false;
  ASSIGN_OR_RETURN(DrainOutcome outcome, RunDrain(ctx.client, drain, ctx.env, ctx.out));
  if (outcome.complete()) return true;
  if (outcome.end == DrainOutcome::End::kRefused) {
    RETURN_IF_ERROR(FailNode(ctx, node, outcome.summary));
  } else if (TimedOut(ctx, node, ctx.options.drain_timeout)) {
    RETURN_IF_ERROR(FailNode(ctx, node,
                             StrCat("not drained within --drain-timeout ",
                                    Seconds(ctx.options.drain_timeout), ": ", outcome.summary)));
  }
  return false;
}

absl::StatusOr<bool> WaitForJobs(StepContext& ctx, const FleetNode& node) {
  kube::ClusterSnapshot snapshot;
  ASSIGN_OR_RETURN(std::vector<const kube::PodView*> pods, PodsToWaitFor(ctx, node, snapshot));
  const std::optional<absl::Duration>& limit = ctx.options.wait_for_jobs_timeout;
  const absl::Time now = ctx.env.Now();
  DrainNotice notice{.node = node.name,
                     .why = StrCat("for its driver upgrade to ", ctx.options.driver_version),
                     .component = "gpunode-cluster-upgrade",
                     .deadline = std::nullopt};
  if (limit && node.since != absl::InfinitePast()) notice.deadline = node.since + *limit;
  for (const std::string& problem : ctx.notifier.Tell(ctx.client, pods, notice, now)) {
    ctx.out << "node " << node.name << ": cannot tell every owner that it is draining: " << problem
            << "\n";
  }
  std::vector<std::string> names;
  for (const kube::PodView* pod : pods) names.push_back(kube::NamespacedName(*pod));
  if (!pods.empty() && !(limit && TimedOut(ctx, node, *limit))) {
    // One line a minute: how long, how many, the oldest, and whether eviction ever comes.
    absl::Duration waited =
        node.since == absl::InfinitePast() ? absl::ZeroDuration() : now - node.since;
    int64_t minutes = absl::ToInt64Minutes(waited);
    int64_t& said = ctx.jobs_minutes_said[node.name];
    if (minutes >= 1 && minutes != said) {
      said = minutes;
      const kube::PodView* oldest = nullptr;
      for (const kube::PodView* pod : pods) {
        if (pod->created_unix > 0 &&
            (oldest == nullptr || pod->created_unix < oldest->created_unix)) {
          oldest = pod;
        }
      }
      ctx.out << "node " << node.name << ": waiting " << Seconds(waited) << " for " << pods.size()
              << " pod(s) to finish";
      if (oldest != nullptr) {
        ctx.out << ", oldest " << kube::NamespacedName(*oldest) << " (running "
                << Seconds(now - absl::FromUnixSeconds(oldest->created_unix)) << ")";
      }
      ctx.out << (limit
                      ? StrCat(", evicting in ", Seconds(node.since + *limit - now))
                      : std::string(", none is evicted (--wait-for-jobs-timeout sets a deadline)"))
              << ": " << absl::StrJoin(names, ", ") << "\n";
    }
    return false;
  }
  if (!pods.empty()) {
    ctx.out << "node " << node.name << ": " << pods.size()
            << " pod(s) still running after --wait-for-jobs-timeout " << Seconds(*limit)
            << ", evicting: " << absl::StrJoin(names, ", ") << "\n";
  }
  RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kPodDeletionRequired));
  return true;
}

std::string JobPath(const StepContext& ctx, std::string_view name) {
  return StrCat("/apis/batch/v1/namespaces/", kube::UrlEncode(ctx.options.job_namespace), "/jobs",
                name.empty() ? "" : "/", kube::UrlEncode(name));
}

absl::Status DeleteJob(StepContext& ctx, std::string_view name) {
  kube::HttpRequest request;
  request.method = "DELETE";
  request.path = StrCat(JobPath(ctx, name), "?propagationPolicy=Background");
  ASSIGN_OR_RETURN(kube::HttpResponse response, ctx.client.Send(request));
  if (response.status == 404 || response.status / 100 == 2) return absl::OkStatus();
  return kube::StatusFromResponse(request, response);
}

// The maintenance Job: created once per maintenance (a Job left from an earlier attempt is
// replaced), followed until it succeeds or fails.
absl::StatusOr<bool> RunMaintenanceJob(StepContext& ctx, const FleetNode& node) {
  const std::string name = MaintenanceJobName(node.name);
  const std::string attempt = Rfc3339(node.maintenance_started);
  absl::StatusOr<std::string> body = ctx.client.Get(JobPath(ctx, name));
  if (absl::IsNotFound(body.status())) {
    json job = MaintenanceJobFor(ctx.options.maintenance_job, node.name, ctx.options.job_namespace,
                                 ctx.options.driver_version);
    job["metadata"]["annotations"][std::string(kUpgradeMaintenanceAnnotation)] = attempt;
    kube::HttpRequest request{.method = "POST",
                              .path = JobPath(ctx, ""),
                              .content_type = "application/json",
                              .body = job.dump()};
    ASSIGN_OR_RETURN(kube::HttpResponse response, ctx.client.Send(request));
    if (response.status == 409) return false;  // created meanwhile; looked at next time
    if (response.status / 100 != 2) {
      // The API server refused the template: it will refuse it on every node.
      absl::Status refused = kube::StatusFromResponse(request, response);
      RETURN_IF_ERROR(FailNode(
          ctx, node, StrCat("the maintenance Job was refused: ", core::View(refused.message()))));
      return false;
    }
    ctx.out << "node " << node.name << ": maintenance Job " << ctx.options.job_namespace << "/"
            << name << " created\n";
    return false;
  }
  if (!body.ok()) return body.status();
  ASSIGN_OR_RETURN(kube::JobStatus job,
                   kube::ReadJobStatus(*body, StrCat("GET ", JobPath(ctx, name))));
  if (job.Annotation(kUpgradeMaintenanceAnnotation) != attempt) {
    ctx.out << "node " << node.name << ": deleting maintenance Job " << name
            << " left from an earlier attempt\n";
    RETURN_IF_ERROR(DeleteJob(ctx, name));
    return false;
  }
  if (job.TrueCondition("Complete") != nullptr || job.succeeded > 0) {
    ctx.out << "node " << node.name << ": maintenance Job " << name << " succeeded\n";
    RETURN_IF_ERROR(DeleteJob(ctx, name));
    RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kPostMaintenanceRequired));
    return true;
  }
  if (const kube::JobCondition* failed = job.TrueCondition("Failed"); failed != nullptr) {
    RETURN_IF_ERROR(
        FailNode(ctx, node,
                 StrCat("maintenance Job ", ctx.options.job_namespace, "/", name, " failed (",
                        failed->reason.empty() ? "no reason" : failed->reason, ": ",
                        failed->message.empty() ? "no message" : failed->message,
                        "); it is kept for its logs")));
  }
  return false;
}

absl::Time MaintenanceStarted(const FleetNode& node) {
  return node.maintenance_started != absl::InfinitePast() ? node.maintenance_started : node.since;
}

bool MaintenanceTimedOut(const StepContext& ctx, const FleetNode& node) {
  absl::Time started = MaintenanceStarted(node);
  return started != absl::InfinitePast() &&
         ctx.env.Now() - started >= ctx.options.maintenance_timeout;
}

// One line a minute while a node is in maintenance (the passes come more often), so that an hour
// of waiting for an installer is not an hour of silence.
void SayMaintenanceProgress(StepContext& ctx, const FleetNode& node) {
  absl::Time started = MaintenanceStarted(node);
  if (started == absl::InfinitePast()) return;
  absl::Duration waited = ctx.env.Now() - started;
  int64_t minutes = absl::ToInt64Minutes(waited);
  int64_t& said = ctx.maintenance_minutes_said[std::string(node.name)];
  if (minutes < 1 || minutes == said) return;
  said = minutes;
  ctx.out << "node " << node.name << ": in maintenance for " << Seconds(waited) << " of "
          << "--maintenance-timeout " << Seconds(ctx.options.maintenance_timeout) << "; "
          << (ctx.options.maintenance_job.is_null()
                  ? StrCat("waiting for ", kDriverVersionLabel, "=", ctx.options.driver_version,
                           " (now ", node.driver.empty() ? std::string("absent") : node.driver, ")")
                  : std::string("waiting for the maintenance Job"))
          << "\n";
}

absl::StatusOr<bool> Maintain(StepContext& ctx, const FleetNode& node) {
  if (!ctx.options.maintenance_job.is_null()) {
    ASSIGN_OR_RETURN(bool moved, RunMaintenanceJob(ctx, node));
    if (moved) return true;
  } else if (node.driver == ctx.options.driver_version) {
    RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kPostMaintenanceRequired));
    return true;
  }
  if (!MaintenanceTimedOut(ctx, node)) {
    SayMaintenanceProgress(ctx, node);
  } else {
    RETURN_IF_ERROR(
        FailNode(ctx, node,
                 StrCat("did not report driver ", ctx.options.driver_version,
                        " within --maintenance-timeout ", Seconds(ctx.options.maintenance_timeout),
                        " (", kDriverVersionLabel, "=",
                        node.driver.empty() ? std::string("absent") : node.driver, ")")));
  }
  return false;
}

// Back from maintenance: Ready, on the target driver, every GPU advertised and healthy.
absl::StatusOr<bool> CheckBack(StepContext& ctx, const FleetNode& node) {
  std::vector<std::string> missing;
  if (node.view->ready != kube::ConditionStatus::kTrue) missing.push_back("the node is not Ready");
  if (node.driver != ctx.options.driver_version) {
    missing.push_back(StrCat(kDriverVersionLabel, "=",
                             node.driver.empty() ? std::string("absent") : node.driver));
  }
  RestoreCheck gpus = CheckRestore(*node.view, ctx.options.count_label);
  if (!gpus.ok) missing.push_back(gpus.message);
  if (missing.empty()) {
    RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kValidationRequired));
    return true;
  }
  if (MaintenanceTimedOut(ctx, node)) {
    RETURN_IF_ERROR(FailNode(
        ctx, node,
        StrCat("not back within --maintenance-timeout ", Seconds(ctx.options.maintenance_timeout),
               ": ", absl::StrJoin(missing, "; "))));
  }
  return false;
}

absl::StatusOr<bool> Validate(StepContext& ctx, const FleetNode& node) {
  VerifyOptions verify = ctx.options.verify;
  verify.nodes = {node.name};
  verify.selector.clear();
  verify.count_label = ctx.options.count_label;
  ASSIGN_OR_RETURN(VerifyReport report, RunVerify(ctx.client, verify, ctx.env, ctx.out));
  if (report.interrupted) return false;
  if (report.Passed()) {
    RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kUncordonRequired));
    return true;
  }
  std::vector<std::string> failed;
  for (const NodeVerdict& verdict : report.nodes) {
    for (const VerifyStep& step : verdict.steps) {
      if (step.result == StepResult::kFail)
        failed.push_back(StrCat(VerifyCheckName(step.step), ": ", step.evidence));
    }
  }
  RETURN_IF_ERROR(
      FailNode(ctx, node, StrCat("cluster verify failed: ", absl::StrJoin(failed, "; "))));
  return false;
}

absl::StatusOr<bool> Uncordon(StepContext& ctx, const FleetNode& node) {
  RestoreOptions restore;
  restore.node = node.name;
  restore.count_label = ctx.options.count_label;
  ASSIGN_OR_RETURN(RestoreOutcome outcome, Restore(&ctx.client, *node.view, restore, ctx.out));
  if (!outcome.restored) {
    RETURN_IF_ERROR(FailNode(ctx, node, outcome.message));
    return false;
  }
  ctx.out << outcome.message << "\n";
  RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kUpgradeDone));
  return true;
}

}  // namespace

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone());
}

std::string Seconds(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Seconds(1)));
}

json StatePatch(UpgradeState next, absl::Time now) {
  return {{"metadata",
           {{"labels", {{std::string(kUpgradeStateLabel), std::string(UpgradeStateName(next))}}},
            {"annotations", {{std::string(kUpgradeStateSinceAnnotation), Rfc3339(now)}}}}}};
}

absl::Status MoveNode(StepContext& ctx, const FleetNode& node, UpgradeState next, json patch) {
  json change = StatePatch(next, ctx.env.Now());
  Merge(change, patch);
  RETURN_IF_ERROR(ctx.client.Patch(StrCat("/api/v1/nodes/", kube::UrlEncode(node.name)),
                                   "application/merge-patch+json", change.dump()));
  ctx.out << "node " << node.name << ": "
          << (node.state ? UpgradeStateName(*node.state) : std::string_view("(none)")) << " -> "
          << UpgradeStateName(next) << "\n"
          << std::flush;
  return absl::OkStatus();
}

absl::Status FailNode(StepContext& ctx, const FleetNode& node, std::string_view why) {
  ctx.out << "node " << node.name << ": upgrade failed: " << why << "\n";
  return MoveNode(
      ctx, node, UpgradeState::kUpgradeFailed,
      {{"metadata", {{"annotations", {{std::string(kUpgradeFailureAnnotation), why}}}}}});
}

absl::StatusOr<bool> StepNode(StepContext& ctx, const FleetNode& node) {
  switch (node.state.value_or(UpgradeState::kUpgradeRequired)) {
    case UpgradeState::kCordonRequired:
      RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kWaitForJobsRequired,
                               DrainNodePatch(*node.view, /*cordon=*/true, ctx.env.Now())));
      return true;
    case UpgradeState::kWaitForJobsRequired:
      return WaitForJobs(ctx, node);
    case UpgradeState::kPodDeletionRequired: {
      ASSIGN_OR_RETURN(bool drained, DrainRound(ctx, node, /*all_pods=*/false));
      if (!drained) return false;
      RETURN_IF_ERROR(MoveNode(ctx, node, UpgradeState::kDrainRequired));
      return true;
    }
    case UpgradeState::kDrainRequired: {
      if (ctx.options.all_pods) {
        ASSIGN_OR_RETURN(bool drained, DrainRound(ctx, node, /*all_pods=*/true));
        if (!drained) return false;
      }
      RETURN_IF_ERROR(
          MoveNode(ctx, node, UpgradeState::kNodeMaintenanceRequired,
                   {{"metadata",
                     {{"annotations",
                       {{std::string(kUpgradeMaintenanceAnnotation), Rfc3339(ctx.env.Now())}}}}}}));
      return true;
    }
    case UpgradeState::kNodeMaintenanceRequired:
      return Maintain(ctx, node);
    case UpgradeState::kPostMaintenanceRequired:
      return CheckBack(ctx, node);
    case UpgradeState::kValidationRequired:
      return Validate(ctx, node);
    case UpgradeState::kUncordonRequired:
      return Uncordon(ctx, node);
    case UpgradeState::kUpgradeRequired:
    case UpgradeState::kUpgradeDone:
    case UpgradeState::kUpgradeFailed:
      return false;
  }
  return false;
}

}  // namespace gpunode::cluster
