#include "cluster/restore.h"

#include "cluster/audit.h"
#include "core/status_macros.h"
#include "kube/api_loader.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"
#include "kube/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

using kube::StrCat;

RestoreCheck CheckRestore(const kube::NodeView& node) {
  RestoreCheck check;
  ExpectedGpus expected = ExpectedGpusOf(node);
  int64_t capacity = kube::MilliOf(node.capacity, kube::kGpuResource);
  std::string have = kube::FormatMilli(capacity);
  if (!expected.count) {
    check.message = StrCat("node ", node.name, " has no ", kube::kGpuCountLabel,
                           " label (GPU feature discovery sets it from the hardware), so gpunode "
                           "cannot confirm all GPUs are back; it advertises ",
                           have, " ", kube::kGpuResource,
                           ". Check that gpu-feature-discovery runs on the node");
    return check;
  }
  int64_t want = *expected.count * expected.replicas;
  std::string want_text = expected.replicas > 1 ? StrCat(want, " (", *expected.count, " GPUs x ",
                                                         expected.replicas, " replicas)")
                                                : StrCat(want);
  if (expected.mig) {
    // MIG devices replace whole GPUs in the resource count, so only presence can be checked.
    check.ok = capacity > 0;
    check.message = StrCat("node ", node.name, " runs MIG; it advertises ", have, " ",
                           kube::kGpuResource, " for ", *expected.count, " physical GPUs");
    return check;
  }
  check.ok = capacity == want * 1000;
  check.message = StrCat("node ", node.name, " advertises ", have, " ", kube::kGpuResource,
                         check.ok ? " and has " : " but has ", want_text, " (",
                         kube::kGpuCountLabel, "=", *expected.count, ")");
  if (!check.ok) {
    kube::StrAppend(&check.message,
                    "; a GPU is still missing or the device plugin has not re-registered: check "
                    "`nvidia-smi` on the node and the nvidia-device-plugin pod");
  }
  return check;
}

absl::StatusOr<RestoreOutcome> RunRestore(kube::Client& client, const RestoreOptions& options,
                                          std::ostream& out) {
  kube::ApiQuery query;
  query.all_nodes = false;
  query.node_name = options.node;
  query.pods = false;
  ASSIGN_OR_RETURN(kube::ClusterSnapshot snapshot, kube::LoadFromApi(client, query));
  const kube::NodeView* node = snapshot.FindNode(options.node);
  if (node == nullptr) return absl::NotFoundError(StrCat("node ", options.node, " not found"));
  RestoreCheck check = CheckRestore(*node);
  RestoreOutcome outcome;
  if (!check.ok) {
    outcome.message = StrCat("refusing to restore: ", check.message);
    return outcome;
  }
  out << check.message << "\n";
  int64_t capacity = kube::MilliOf(node->capacity, kube::kGpuResource);
  int64_t allocatable = kube::MilliOf(node->allocatable, kube::kGpuResource);
  if (allocatable < capacity) {
    out << "warning: only " << kube::FormatMilli(allocatable) << " of "
        << kube::FormatMilli(capacity) << " are allocatable (the rest are unhealthy)\n";
  }
  // null deletes the keys (JSON merge patch); unschedulable back to its default, false.
  nlohmann::json patch = {
      {"metadata",
       {{"labels", {{std::string(kube::kGpuStateLabel), nullptr}}},
        {"annotations", {{std::string(kube::kDrainStartedAnnotation), nullptr}}}}},
      {"spec", {{"unschedulable", nullptr}}}};
  if (options.dry_run) {
    out << "would uncordon " << options.node << " and remove " << kube::kGpuStateLabel
        << " (dry run: PATCH " << patch.dump() << ")\n";
    outcome.restored = true;
    outcome.message = "dry run: nothing was changed";
    return outcome;
  }
  RETURN_IF_ERROR(client.Patch(StrCat("/api/v1/nodes/", kube::UrlEncode(options.node)),
                               "application/merge-patch+json", patch.dump()));
  outcome.restored = true;
  outcome.message =
      StrCat("node ", options.node, " restored: uncordoned, ", kube::kGpuStateLabel, " removed");
  return outcome;
}

}  // namespace gpunode::cluster
