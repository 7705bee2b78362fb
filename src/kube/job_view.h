// What gpunode keeps of a Job or a CronJob (for a CronJob, of its jobTemplate): whether its GPU
// pods can run forever, pile up once finished, or spend retries on node drains.
#pragma once

#include <cstdint>
#include <string_view>

#include "kube/resource_list.h"

namespace gpunode::kube {

// The Job API's default for spec.backoffLimit.
inline constexpr int64_t kDefaultBackoffLimit = 6;

struct JobView {
  std::string_view kind;  // "Job" or "CronJob"
  std::string_view ns;
  std::string_view name;
  // A Job a CronJob created (its controller ownerReference): the CronJob's name.
  std::string_view cronjob;
  bool job_active_deadline = false;       // spec.activeDeadlineSeconds
  bool template_active_deadline = false;  // spec.template.spec.activeDeadlineSeconds
  bool ttl_after_finished = false;        // spec.ttlSecondsAfterFinished
  int64_t backoff_limit = kDefaultBackoffLimit;
  // spec.podFailurePolicy has a rule {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}
  // (status True, the default): pods evicted by a drain or preempted do not count as failures.
  bool ignores_disruptions = false;
  // What one of its pods requests (the pod template's effective NVIDIA request).
  ResourceList gpu_requests;

  bool RequestsGpus() const {
    for (const ResourceAmount& r : gpu_requests) {
      if (r.milli > 0) return true;
    }
    return false;
  }
};

}  // namespace gpunode::kube
