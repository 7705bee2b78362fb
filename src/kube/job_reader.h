// Reads a batch/v1 Job or CronJob object of a snapshot (for a CronJob, its jobTemplate) into a
// JobView: deadlines, TTL, backoff limit, the pod failure policy's disruption rule and the pod
// template's GPU request. Part of the snapshot reader.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kube/cluster_snapshot.h"
#include "kube/json_walk.h"

namespace gpunode::kube {

class JobReader {
 public:
  // Reads the Job or CronJob (walk.where().kind says which) `obj`, not yet iterated, and
  // appends it to snap.jobs; errors as in json_walk.h, and one without a name is one.
  absl::Status Read(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap);

 private:
  absl::Status ReadMetadata(od::value& metadata, bool cron, const JsonWalk& walk);
  absl::Status ReadCronJobSpec(od::value& spec, const JsonWalk& walk);
  // A Job's spec, at `path` ("spec", or "spec.jobTemplate.spec" in a CronJob).
  absl::Status ReadJobSpec(od::value& spec, std::string_view path, const JsonWalk& walk);
  absl::Status ReadPodFailurePolicy(od::value& policy, std::string_view path, const JsonWalk& walk);
  absl::Status ReadPodTemplate(od::value& pod_template, std::string_view path,
                               const JsonWalk& walk);

  // Reused across Jobs; points into the input until Read copies it into the snapshot.
  JobView job_;
  std::vector<ContainerResources> containers_;
};

}  // namespace gpunode::kube
