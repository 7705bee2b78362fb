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
#include "kube/json_walk.h"
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
  // `origin`, when given, places `json` in a larger input for error messages.
  absl::Status Add(simdjson::padded_string_view json, std::string_view source,
                   std::string* continue_token = nullptr, const TextOrigin* origin = nullptr);

  // Reads one element of a list's items on its own, as a streamed file hands them over;
  // `origin` places it in the input. `list_kind` is the list's kind ("PodList") when it came
  // before the items. Returns false, keeping nothing, when the item has no kind and `list_kind`
  // does not give one.
  absl::StatusOr<bool> AddItem(simdjson::padded_string_view item, size_t index,
                               std::string_view list_kind, std::string_view source,
                               const TextOrigin& origin);

  // Hands over what was read; the builder is empty afterwards.
  ClusterSnapshot Take();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a snapshot file, or stdin when `path` is "-", through ReadSnapshotStream.
absl::StatusOr<ClusterSnapshot> ReadSnapshotFile(const std::string& path,
                                                 const ReadOptions& options = {});

// Reads a snapshot from `fd` (left open) item by item, so memory grows with what is kept, not
// with the file: the read buffer holds one item (plus read-ahead, `buffer_bytes` to start
// with). When items without a kind come before the list's kind (keys sorted), a file is read
// again whole; a pipe cannot be, and that is an error naming the fix. `source` names the input
// in errors.
absl::StatusOr<ClusterSnapshot> ReadSnapshotStream(int fd, std::string_view source,
                                                   const ReadOptions& options = {},
                                                   size_t buffer_bytes = size_t{1} << 20);

// Parses a snapshot held in memory (tests, fuzzing, admission requests).
absl::StatusOr<ClusterSnapshot> ReadSnapshotText(std::string_view json, std::string_view source,
                                                 const ReadOptions& options = {});

}  // namespace gpunode::kube
