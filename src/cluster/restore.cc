#include "cluster/restore.h"

#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_loader.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"

namespace gpunode::cluster {

using core::StrCat;

RestoreCheck CheckRestore(const kube::NodeView& node, const CountLabel& label) {
  RestoreCheck check;
  ExpectedGpus expected = ExpectedGpusOf(node, label);
  int64_t capacity = kube::MilliOf(node.capacity, kube::kGpuResource);
  int64_t allocatable = kube::MilliOf(node.allocatable, kube::kGpuResource);
  std::string have = kube::FormatMilli(capacity);
  std::string healthy = kube::FormatMilli(allocatable);
  if (expected.LabelsDisagree()) {
    check.message = StrCat("node ", node.name, ": ", expected.Disagreement(),
                           ", so gpunode cannot tell how many GPUs must be back; compare with "
                           "`nvidia-smi -L` on the node and fix the wrong label");
    return check;
  }
  if (!expected.count) {
    check.message = StrCat(
        "node ", node.name, " has no GPU count label (", kube::kGpuCountLabel,
        ", which GPU feature discovery sets from the hardware, or your own ", label.Keys().front(),
        "), so gpunode cannot confirm all GPUs are back; it advertises ", have, " ",
        kube::kGpuResource, ". Check that gpu-feature-discovery runs on the node");
    return check;
  }
  // The labeller sees a GPU on the PCI bus that the driver does not: it is not back, whatever
  // the device plugin still advertises.
  std::string missing;
  if (!expected.missing.empty()) {
    missing = StrCat("; ", expected.MissingText(),
                     ": the driver does not see it; check `nvidia-smi` and the kernel log on the "
                     "node (XID 79: fallen off the bus), then reseat or replace it");
  }
  if (expected.mig) {
    // MIG devices replace whole GPUs in the resource count, so only presence and health count.
    check.ok = capacity > 0 && allocatable == capacity && missing.empty();
    check.message = StrCat("node ", node.name, " runs MIG; it advertises ", have, " ",
                           kube::kGpuResource, " (", healthy, " healthy) for ", *expected.count,
                           " physical GPUs (", expected.Source(), ")", missing);
    return check;
  }
  int64_t want = *expected.WantedGpus();
  std::string want_text = expected.replicas > 1 ? StrCat(want, " (", *expected.count, " GPUs x ",
                                                         expected.replicas, " replicas)")
                                                : StrCat(want);
  check.ok = capacity == want * 1000 && allocatable == want * 1000 && missing.empty();
  check.message =
      StrCat("node ", node.name, " has ", healthy, " healthy ", kube::kGpuResource,
             " (allocatable; capacity ", have, ") of ", want_text, " (", expected.Source(), ")");
  if (!missing.empty()) {
    core::StrAppend(&check.message, missing);
  } else if (capacity != want * 1000) {
    core::StrAppend(&check.message,
                    "; a GPU is still missing or the device plugin has not re-registered: check "
                    "`nvidia-smi` on the node and the nvidia-device-plugin pod");
  } else if (!check.ok) {
    core::StrAppend(&check.message,
                    "; the device plugin marks GPUs unhealthy after XID errors: run `gpunode "
                    "doctor` on the node, or check `nvidia-smi -q` and the kernel log");
  }
  return check;
}

RestoreUndo PlanUndo(const kube::NodeView& node) {
  RestoreUndo undo;
  auto state = kube::FindLabel(node.labels, kube::kGpuStateLabel);
  bool draining = state && *state == kube::kGpuStateDraining;
  auto cordoned = kube::FindLabel(node.gpunode_annotations, kube::kDrainCordonedAnnotation);
  undo.drained = draining || !node.drain_started_at.empty() || cordoned.has_value();
  undo.uncordon = node.unschedulable && cordoned && *cordoned == "true";
  undo.cordoned_by_other = node.unschedulable && !undo.uncordon;
  if (!undo.drained) return undo;
  // null deletes a key (JSON merge patch); unschedulable back to its default, false.
  nlohmann::json annotations = {{std::string(kube::kDrainStartedAnnotation), nullptr},
                                {std::string(kube::kDrainCordonedAnnotation), nullptr}};
  nlohmann::json metadata = {{"annotations", annotations}};
  if (draining) metadata["labels"] = {{std::string(kube::kGpuStateLabel), nullptr}};
  undo.patch = {{"metadata", metadata}};
  if (undo.uncordon) undo.patch["spec"] = {{"unschedulable", nullptr}};
  return undo;
}

std::string DescribeUndo(const kube::NodeView& node, const RestoreUndo& undo) {
  if (!undo.drained) {
    return StrCat("node ", node.name, " was not drained by `gpunode cluster drain` (no ",
                  kube::kGpuStateLabel, "=", kube::kGpuStateDraining, "): nothing to undo");
  }
  std::string text = StrCat("remove ", kube::kGpuStateLabel, " and the drain's annotations");
  if (undo.uncordon) core::StrAppend(&text, ", and uncordon ", node.name);
  return text;
}

namespace {

// The note for a cordon restore leaves alone.
std::string OtherCordon(const kube::NodeView& node) {
  return StrCat("node ", node.name,
                " stays cordoned: `gpunode cluster drain` did not cordon it (someone else did); "
                "`kubectl uncordon ",
                node.name, "` if it should take pods again");
}

}  // namespace

absl::StatusOr<RestoreOutcome> Restore(kube::Client* client, const kube::NodeView& node,
                                       const RestoreOptions& options, std::ostream& out) {
  RestoreOutcome outcome;
  RestoreCheck check = CheckRestore(node, options.count_label);
  if (!check.ok && !options.force) {
    outcome.message =
        StrCat("refusing to restore: ", check.message, " (--force restores it anyway)");
    return outcome;
  }
  if (check.ok) {
    out << check.message << "\n";
  } else {
    out << "restoring anyway (--force): " << check.message << "\n";
  }
  if (options.verify) {
    ASSIGN_OR_RETURN(bool verified, options.verify(out));
    if (!verified) {
      outcome.message = StrCat("refusing to restore: node ", node.name,
                               " failed verification (see above); nothing was changed");
      return outcome;
    }
  }
  RestoreUndo undo = PlanUndo(node);
  if (undo.cordoned_by_other) out << OtherCordon(node) << "\n";
  outcome.restored = true;
  if (!undo.drained) {
    outcome.message = DescribeUndo(node, undo);
    return outcome;
  }
  if (options.dry_run || client == nullptr) {
    outcome.message =
        StrCat("dry run: would ", DescribeUndo(node, undo), " (PATCH ", undo.patch.dump(), ")");
    return outcome;
  }
  RETURN_IF_ERROR(client->Patch(StrCat("/api/v1/nodes/", kube::UrlEncode(node.name)),
                                "application/merge-patch+json", undo.patch.dump()));
  outcome.message =
      StrCat("node ", node.name, " restored: ", kube::kGpuStateLabel, " removed",
             undo.uncordon ? ", uncordoned" : "", options.force && !check.ok ? " (forced)" : "");
  return outcome;
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
  return Restore(&client, *node, options, out);
}

}  // namespace gpunode::cluster
