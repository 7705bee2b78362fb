#include "cluster/job_hygiene.h"

#include <algorithm>
#include <cstdio>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/text.h"
#include "kube/quantity.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

std::string Held(const kube::ResourceList& requests) {
  std::string out;
  for (const kube::ResourceAmount& r : requests) {
    if (r.milli > 0) {
      core::StrAppend(&out, out.empty() ? "" : " and ", kube::FormatMilli(r.milli), " ", r.name);
    }
  }
  return out;
}

std::string Lower(std::string_view kind) { return kind == "CronJob" ? "cronjob" : "job"; }

// Where a Job's fields sit: in a CronJob, under spec.jobTemplate.
std::string JobSpec(const kube::JobView& job) {
  return job.kind == "CronJob" ? "spec.jobTemplate.spec" : "spec";
}

std::string Describe(const kube::JobView& job) {
  std::string out = StrCat(job.kind, " ", job.ns, "/", job.name);
  if (!job.cronjob.empty()) core::StrAppend(&out, " (created by CronJob ", job.cronjob, ")");
  return out;
}

// Edits go to the CronJob when one made the Job: the next run would bring the problem back.
std::string WhereToFix(const kube::JobView& job) {
  if (!job.cronjob.empty()) {
    return StrCat("the CronJob's spec.jobTemplate.spec (`kubectl edit cronjob -n ", job.ns, " ",
                  job.cronjob, "`)");
  }
  return StrCat("the ", job.kind, "'s manifest");
}

std::string Age(absl::Duration d) {
  int64_t minutes = absl::ToInt64Minutes(d);
  int64_t days = minutes / (24 * 60), hours = minutes / 60 % 24, mins = minutes % 60;
  if (days > 0) return StrCat(days, "d", hours, "h");
  if (hours > 0) return StrCat(hours, "h", mins, "m");
  return StrCat(mins, "m");
}

std::string Percent(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%%", value);
  return buf;
}

void AddJobFindings(const kube::ClusterSnapshot& snapshot, std::vector<Finding>& findings) {
  absl::flat_hash_set<std::pair<std::string_view, std::string_view>> cronjobs;
  for (const kube::JobView& job : snapshot.jobs) {
    if (job.kind == "CronJob") cronjobs.emplace(job.ns, job.name);
  }
  for (const kube::JobView& job : snapshot.jobs) {
    if (!job.RequestsGpus()) continue;
    // A CronJob's Jobs are reported once, under the CronJob.
    if (!job.cronjob.empty() && cronjobs.contains(std::pair(job.ns, job.cronjob))) continue;
    std::string object = StrCat(Lower(job.kind), "/", job.ns, "/", job.name);
    std::string spec = JobSpec(job);
    std::string what = Describe(job);
    std::string held = Held(job.gpu_requests);
    if (!job.job_active_deadline && !job.template_active_deadline) {
      findings.push_back(
          {std::string(kFindingPodNoDeadline), Severity::kWarning, object,
           StrCat(what, " runs pods holding ", held, " with neither ", spec,
                  ".activeDeadlineSeconds nor ", spec,
                  ".template.spec.activeDeadlineSeconds: a pod that hangs holds its GPUs until "
                  "someone deletes it"),
           StrCat("set ", spec, ".activeDeadlineSeconds (a limit on the whole run, e.g. 86400) in ",
                  WhereToFix(job),
                  "; or label the namespace gpunode.io/gpu-job-defaults=enabled and let `gpunode "
                  "webhook` add a default to new pods")});
    }
    if (!job.ttl_after_finished) {
      findings.push_back(
          {std::string(kFindingJobNoTtl), Severity::kWarning, object,
           StrCat(what, " (pods holding ", held, ") has no ", spec,
                  ".ttlSecondsAfterFinished: finished Jobs and their pods stay until someone "
                  "deletes them"),
           StrCat("set ", spec, ".ttlSecondsAfterFinished (e.g. 3600) in ", WhereToFix(job),
                  "; or label the namespace gpunode.io/gpu-job-defaults=enabled and let `gpunode "
                  "webhook` add a default to new Jobs")});
    }
    if (job.backoff_limit > 0 && !job.ignores_disruptions) {
      findings.push_back(
          {std::string(kFindingJobRetriesOnDisruption), Severity::kWarning, object,
           StrCat(what, " retries failed pods up to ", job.backoff_limit, " times (", spec,
                  ".backoffLimit ", job.backoff_limit,
                  job.backoff_limit == kube::kDefaultBackoffLimit ? ", the default" : "",
                  ") and no podFailurePolicy rule ignores DisruptionTarget: every drain, eviction "
                  "or preemption of a GPU node uses up a retry"),
           StrCat("add to ", WhereToFix(job),
                  ": podFailurePolicy: {rules: [{action: Ignore, "
                  "onPodConditions: [{type: DisruptionTarget}]}]} (needs restartPolicy: Never in "
                  "the pod template; the field cannot be changed on an existing Job)")});
    }
  }
  for (const kube::PodView& pod : snapshot.pods) {
    // Pods of Jobs are covered by their Job; Deployments and StatefulSets are meant to run on.
    if (pod.has_controller || !pod.Active() || pod.active_deadline || !pod.RequestsGpus()) {
      continue;
    }
    findings.push_back(
        {std::string(kFindingPodNoDeadline), Severity::kWarning,
         StrCat("pod/", pod.ns, "/", pod.name),
         StrCat("bare pod ", kube::NamespacedName(pod), " holds ", Held(pod.gpu_requests),
                " and has no spec.activeDeadlineSeconds: if it hangs, it holds its GPUs until "
                "someone deletes it"),
         StrCat("run GPU work as a Job with activeDeadlineSeconds and ttlSecondsAfterFinished, or "
                "set spec.activeDeadlineSeconds in the pod's manifest (pods cannot gain it "
                "later); or label namespace ",
                pod.ns, " gpunode.io/gpu-job-defaults=enabled and let `gpunode webhook` add one")});
  }
}

void AddLongRunningFindings(const kube::ClusterSnapshot& snapshot, const HygieneOptions& options,
                            std::vector<Finding>& findings) {
  if (!options.max_gpu_pod_age) return;
  const int64_t now = absl::ToUnixSeconds(options.now);
  const int64_t limit = absl::ToInt64Seconds(*options.max_gpu_pod_age);
  for (const kube::PodView& pod : snapshot.pods) {
    if (!pod.Active() || !pod.RequestsGpus() || pod.daemonset || pod.created_unix == 0) continue;
    if (!options.age_namespaces.empty() &&
        std::find(options.age_namespaces.begin(), options.age_namespaces.end(), pod.ns) ==
            options.age_namespaces.end()) {
      continue;
    }
    int64_t age = now - pod.created_unix;
    if (age <= limit) continue;
    std::string owner = !pod.job.empty() ? StrCat(" (Job ", pod.job, ")") : "";
    findings.push_back(
        {std::string(kFindingPodLongRunning), Severity::kWarning,
         StrCat("pod/", pod.ns, "/", pod.name),
         StrCat("pod ", kube::NamespacedName(pod), owner, " has held ", Held(pod.gpu_requests),
                pod.node_name.empty() ? "" : StrCat(" on node ", pod.node_name), " for ",
                Age(absl::Seconds(age)), ", longer than --max-gpu-pod-age ",
                Age(*options.max_gpu_pod_age)),
         StrCat("check whether it is stuck (`kubectl logs -n ", pod.ns, " ", pod.name,
                "`); if so delete it (`kubectl delete pod -n ", pod.ns, " ", pod.name,
                "`), and give its Job an activeDeadlineSeconds")});
  }
}

void AddIdleFindings(const kube::ClusterSnapshot& snapshot, const HygieneOptions& options,
                     std::vector<Finding>& findings) {
  if (!options.idle) return;
  const IdleEvidence& idle = *options.idle;
  using PodKey = std::pair<std::string_view, std::string_view>;
  absl::flat_hash_map<PodKey, double> utilization;
  for (const PodUtilization& u : idle.pods) utilization[PodKey(u.ns, u.pod)] = u.max_percent;
  const int64_t now = absl::ToUnixSeconds(options.now);
  const int64_t window = absl::ToInt64Seconds(idle.window);
  for (const kube::PodView& pod : snapshot.pods) {
    if (!pod.Active() || !pod.RequestsGpus()) continue;
    // A pod younger than the window may be loading data before it computes.
    if (pod.created_unix == 0 || now - pod.created_unix < window) continue;
    auto it = utilization.find(PodKey(pod.ns, pod.name));
    if (it == utilization.end() || it->second >= idle.below_percent) continue;
    findings.push_back(
        {std::string(kFindingPodIdle), Severity::kWarning, StrCat("pod/", pod.ns, "/", pod.name),
         StrCat("pod ", kube::NamespacedName(pod), " holds ", Held(pod.gpu_requests),
                pod.node_name.empty() ? "" : StrCat(" on node ", pod.node_name),
                " but its GPUs were at most ", Percent(it->second), " busy over the last ",
                Age(idle.window), " (below --idle-util ", Percent(idle.below_percent), "; ",
                idle.query, ")"),
         StrCat("ask its owner whether it still works (`kubectl logs -n ", pod.ns, " ", pod.name,
                "`); delete it to free the GPUs, and give such workloads an "
                "activeDeadlineSeconds")});
  }
}

}  // namespace

void AddJobHygieneFindings(const kube::ClusterSnapshot& snapshot, const HygieneOptions& options,
                           std::vector<Finding>& findings) {
  AddJobFindings(snapshot, findings);
  AddLongRunningFindings(snapshot, options, findings);
  AddIdleFindings(snapshot, options, findings);
}

}  // namespace gpunode::cluster
