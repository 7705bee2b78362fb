#include "kube/job_reader.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/text.h"
#include "kube/owner_reader.h"
#include "kube/pod_spec_reader.h"
#include "kube/view_copy.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

// onPodConditions of one failure policy rule (`field` names it): whether it matches pods that
// a disruption (a drain's eviction, a preemption) ended.
absl::Status ReadOnDisruption(od::value& conditions, const std::string& field, const JsonWalk& walk,
                              bool& on_disruption) {
  return walk.ForEachElement(conditions, field, [&](od::value& condition) {
    std::string_view type, status;
    RETURN_IF_ERROR(walk.ForEachField(condition, field, [&](const FieldKey& key, od::value& val) {
      if (key == "type") return walk.ReadString(val, FieldPath(field, "[].type"), type);
      if (key == "status") return walk.ReadString(val, FieldPath(field, "[].status"), status);
      return absl::OkStatus();
    }));
    // status defaults to True.
    if (type == "DisruptionTarget" && (status.empty() || status == "True")) on_disruption = true;
    return absl::OkStatus();
  });
}

// One rule of podFailurePolicy.rules (`field` names the array): whether it is {action: Ignore,
// onPodConditions: [{type: DisruptionTarget}]}.
absl::Status ReadIgnoresDisruption(od::value& rule, const std::string& field, const JsonWalk& walk,
                                   bool& ignores) {
  std::string_view action;
  bool on_disruption = false;
  RETURN_IF_ERROR(
      walk.ForEachField(rule, FieldPath(field, "[]"), [&](const FieldKey& key, od::value& val) {
        if (key == "action") return walk.ReadString(val, FieldPath(field, "[].action"), action);
        if (key != "onPodConditions") return absl::OkStatus();
        return ReadOnDisruption(val, StrCat(field, "[].onPodConditions"), walk, on_disruption);
      }));
  if (action == "Ignore" && on_disruption) ignores = true;
  return absl::OkStatus();
}

}  // namespace

absl::Status JobReader::Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap) {
  const bool cron = walk.where().kind == "CronJob";
  // Made anew in place rather than moved from a temporary: GCC 12 warns, falsely, that the
  // temporary's InlinedVector is read uninitialized (-Wuninitialized).
  std::destroy_at(&job_);
  std::construct_at(&job_);
  job_.kind = cron ? "CronJob" : "Job";
  containers_.clear();
  RETURN_IF_ERROR(walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") return ReadMetadata(val, cron, walk);
    if (key != "spec") return absl::OkStatus();
    return cron ? ReadCronJobSpec(val, walk) : ReadJobSpec(val, "spec", walk);
  }));
  if (job_.name.empty()) {
    return walk.Fail("metadata.name",
                     StrCat("missing; every ", job_.kind, " has a name; ", kFixInput));
  }
  std::stable_partition(containers_.begin(), containers_.end(),
                        [](const ContainerResources& c) { return c.init; });
  StringArena& a = *snap.strings;
  JobView& out = snap.jobs.emplace_back(job_);
  out.ns = a.Intern(job_.ns);
  out.name = a.Copy(job_.name);
  out.cronjob = a.Copy(job_.cronjob);
  out.gpu_requests = CopyResources(a, EffectiveRequests(containers_));
  return absl::OkStatus();
}

absl::Status JobReader::ReadMetadata(od::value& metadata, bool cron, const JsonWalk& walk) {
  return walk.ForEachField(metadata, "metadata", [&](const FieldKey& key, od::value& val) {
    if (key == "name") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", job_.name));
      walk.where().name = job_.name;
    } else if (key == "namespace") {
      RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", job_.ns));
      walk.where().ns = job_.ns;
    } else if (key == "ownerReferences" && !cron) {
      ControllerRef controller;
      RETURN_IF_ERROR(ReadControllerRef(val, walk, controller));
      if (controller.found && controller.kind == "CronJob") job_.cronjob = controller.name;
    }
    return absl::OkStatus();
  });
}

absl::Status JobReader::ReadCronJobSpec(od::value& spec, const JsonWalk& walk) {
  return walk.ForEachField(spec, "spec", [&](const FieldKey& key, od::value& val) {
    if (key != "jobTemplate") return absl::OkStatus();
    return walk.ForEachField(val, "spec.jobTemplate", [&](const FieldKey& key, od::value& val) {
      if (key != "spec") return absl::OkStatus();
      return ReadJobSpec(val, "spec.jobTemplate.spec", walk);
    });
  });
}

absl::Status JobReader::ReadJobSpec(od::value& spec, std::string_view path, const JsonWalk& walk) {
  return walk.ForEachField(spec, path, [&](const FieldKey& key, od::value& val) {
    if (key == "activeDeadlineSeconds") {
      return walk.IsSet(val, FieldPath(path, ".activeDeadlineSeconds"), "an integer",
                        job_.job_active_deadline);
    }
    if (key == "ttlSecondsAfterFinished") {
      return walk.IsSet(val, FieldPath(path, ".ttlSecondsAfterFinished"), "an integer",
                        job_.ttl_after_finished);
    }
    if (key == "backoffLimit") {
      return walk.ReadInt(val, FieldPath(path, ".backoffLimit"), job_.backoff_limit);
    }
    if (key == "podFailurePolicy") return ReadPodFailurePolicy(val, path, walk);
    if (key == "template") return ReadPodTemplate(val, path, walk);
    return absl::OkStatus();
  });
}

absl::Status JobReader::ReadPodFailurePolicy(od::value& policy, std::string_view path,
                                             const JsonWalk& walk) {
  return walk.ForEachField(
      policy, FieldPath(path, ".podFailurePolicy"), [&](const FieldKey& key, od::value& val) {
        if (key != "rules") return absl::OkStatus();
        std::string field = StrCat(path, ".podFailurePolicy.rules");
        return walk.ForEachElement(val, field, [&](od::value& rule) {
          return ReadIgnoresDisruption(rule, field, walk, job_.ignores_disruptions);
        });
      });
}

absl::Status JobReader::ReadPodTemplate(od::value& pod_template, std::string_view path,
                                        const JsonWalk& walk) {
  return walk.ForEachField(
      pod_template, FieldPath(path, ".template"), [&](const FieldKey& key, od::value& val) {
        if (key != "spec") return absl::OkStatus();
        std::string pod_spec = StrCat(path, ".template.spec");
        return walk.ForEachField(val, pod_spec, [&](const FieldKey& key, od::value& val) {
          if (key == "activeDeadlineSeconds") {
            return walk.IsSet(val, FieldPath(pod_spec, ".activeDeadlineSeconds"), "an integer",
                              job_.template_active_deadline);
          }
          if (key == "containers") return ReadContainers(val, false, pod_spec, walk, containers_);
          if (key == "initContainers") {
            return ReadContainers(val, true, pod_spec, walk, containers_);
          }
          return absl::OkStatus();
        });
      });
}

}  // namespace gpunode::kube
