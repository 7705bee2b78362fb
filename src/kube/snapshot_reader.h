// Streams `kubectl get nodes,pods,jobs,cronjobs,events -A -o json` output (a v1 List), API list
// pages (NodeList, PodList, PodDisruptionBudgetList, JobList, CronJobList, EventList) or single
// objects into a ClusterSnapshot with simdjson's On-Demand API: no DOM is built, and only the
// fields gpunode uses are copied out (of events, only the kubelet's image pulls).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kube/cluster_snapshot.h"
#include "simdjson.h"

namespace gpunode::kube {

struct ReadOptions {
  // Decides, once a pod has been read, whether to keep its PodDetails. Unset: parse and keep no
  // details (what audit needs, and the fastest path).
  std::function<bool(const PodView&)> keep_pod_details;
};

// Accumulates documents into one snapshot. Not thread-safe.
class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(ReadOptions options = {});
  ~SnapshotBuilder();
  SnapshotBuilder(const SnapshotBuilder&) = delete;
  SnapshotBuilder& operator=(const SnapshotBuilder&) = delete;

  // Parses one JSON document. `json` must stay valid only for the call. `source` names the file
  // or request in error messages, which are one line: source, object, field and what to do.
  // For an API list page, `continue_token` receives metadata.continue (empty on the last page).
  absl::Status Add(simdjson::padded_string_view json, std::string_view source,
                   std::string* continue_token = nullptr);

  // Hands over what was read; the builder is empty afterwards.
  ClusterSnapshot Take();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a snapshot file, or stdin when `path` is "-". The file is read into one padded buffer
// (On-Demand needs the whole document), which is freed before this returns.
absl::StatusOr<ClusterSnapshot> ReadSnapshotFile(const std::string& path,
                                                 const ReadOptions& options = {});

// Parses a snapshot held in memory (tests, fuzzing, admission requests).
absl::StatusOr<ClusterSnapshot> ReadSnapshotText(std::string_view json, std::string_view source,
                                                 const ReadOptions& options = {});

}  // namespace gpunode::kube
