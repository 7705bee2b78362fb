// `gpunode cluster verify NODE... | --selector SEL`: prove a GPU node works end to end before it
// takes work, step by step: Ready; the labels (GPU feature discovery's and the operator's own
// count label, which must agree, and any --require-label); a Running, Ready device plugin pod
// (or why its DaemonSet does not cover the node); capacity = allocatable = physical GPUs (x
// replicas); and a smoke pod that requests min(2, GPUs) and reports what it saw.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/gpu_count.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cluster {

// gpunode's own image: the smoke pod's default, running `gpunode doctor --in-container -o json`.
inline constexpr std::string_view kGpunodeImage = "ghcr.io/gpunode/gpunode:0.1.0";

struct VerifyOptions {
  std::vector<std::string> nodes;
  std::string selector;  // a label selector, instead of nodes
  std::string ns;        // the smoke pod's namespace
  std::string image = std::string(kGpunodeImage);
  // Empty: `gpunode doctor --in-container -o json` for gpunode's image, the image's own
  // entrypoint for any other.
  std::vector<std::string> command;
  // A GPU workload run after a smoke pod that passed, in a pod of its own with the same GPUs
  // (NVIDIA's CUDA vectorAdd sample, say): its exit code and log are part of the verdict. Empty:
  // none.
  std::string workload_image;
  std::vector<std::string> workload_command;  // empty: the image's entrypoint
  std::string runtime_class;                  // the smoke pod's runtimeClassName, if set
  std::vector<std::string> require_labels;    // KEY or KEY=VALUE the node must carry
  std::string device_plugin;                  // NAMESPACE/NAME of its DaemonSet; empty: found
  CountLabel count_label;
  absl::Duration timeout = absl::Minutes(5);  // per smoke pod, from creation to its end
  absl::Duration poll_interval = absl::Seconds(2);
  // False for a dry run (restore --verify --dry-run): the other steps only, no smoke pod and no
  // smoke-pod step in the report.
  bool run_smoke_pod = true;
};

enum class StepResult { kPass, kFail, kSkip };

// What verify checks on each node, in the order it checks and prints them.
// kWorkload is reported only when a workload image is given.
enum class VerifyCheck { kReady, kLabels, kDevicePlugin, kCapacity, kSmokePod, kWorkload };
inline constexpr VerifyCheck kVerifyChecks[] = {VerifyCheck::kReady, VerifyCheck::kLabels,
                                                VerifyCheck::kDevicePlugin, VerifyCheck::kCapacity,
                                                VerifyCheck::kSmokePod};
// ready, labels, device-plugin, capacity, smoke-pod, workload: the report's and the JSON's names.
std::string_view VerifyCheckName(VerifyCheck check);

struct VerifyStep {
  VerifyCheck step = VerifyCheck::kReady;
  StepResult result = StepResult::kSkip;
  std::string evidence;  // what was seen
  std::string fix;       // empty on pass
};

struct NodeVerdict {
  std::string node;
  std::vector<VerifyStep> steps;
  // The GPUs gpu.missing names by PCI address, and how many more it counts without one.
  std::vector<std::string> missing_gpus;
  int64_t missing_gpus_unnamed = 0;
  bool Passed() const;
};

struct VerifyReport {
  std::vector<NodeVerdict> nodes;
  bool interrupted = false;  // stopped on request (a signal); the smoke pod was deleted
  bool dry_run = false;      // no smoke pod was run, on purpose (run_smoke_pod false)
  bool Passed() const;       // every node passed, and there was at least one
};

// Verifies each node in turn, printing a progress line per step to `progress`. An error Status
// means verify could not run (API errors, unknown node, a selector matching nothing).
absl::StatusOr<VerifyReport> RunVerify(kube::Client& client, const VerifyOptions& options,
                                       core::Env& env, std::ostream& progress);

// `verify --dry-run -f SNAPSHOT`: the same steps as a live dry run (all but the smoke pod and
// the workload), from a `kubectl get nodes,pods -A -o json` snapshot read with
// VerifySnapshotReadOptions. A snapshot holds no DaemonSets, so the device-plugin step looks for
// the plugin's pod on the node, and for a node without one cannot say whether a DaemonSet covers
// it (the evidence says so). NotFound for an unknown node or a selector that matches none,
// InvalidArgument for a selector that does not parse.
absl::StatusOr<VerifyReport> VerifySnapshot(const kube::ClusterSnapshot& snapshot,
                                            const VerifyOptions& options, std::ostream& progress);
// What VerifySnapshot needs of the pods: the details of DaemonSet pods (controller, readiness).
kube::ReadOptions VerifySnapshotReadOptions();

void PrintVerifyTable(const VerifyReport& report, std::ostream& out);
std::string VerifyJson(const VerifyReport& report);

}  // namespace gpunode::cluster
