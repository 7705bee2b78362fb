// The per-node states of a staged driver upgrade. They are the GPU Operator's, kept in the same
// node label (nvidia.com/gpu-driver-upgrade-state), so dashboards and tools built for the operator
// read a `gpunode cluster upgrade` rollout as they read the operator's. Everything else the
// rollout must remember to resume after a restart lives in gpunode.io/ annotations on the node.
#pragma once

#include <optional>
#include <string_view>

namespace gpunode::cluster {

inline constexpr std::string_view kUpgradeStateLabel = "nvidia.com/gpu-driver-upgrade-state";
// The driver GPU feature discovery (and `gpunode labels`) reports: how a node says it was upgraded.
inline constexpr std::string_view kDriverVersionLabel = "nvidia.com/cuda.driver-version.full";

// The driver version the node's state refers to: a node whose target differs from the rollout's
// starts over (or, mid-upgrade, is refused).
inline constexpr std::string_view kUpgradeTargetAnnotation = "gpunode.io/upgrade-target";
// When the node entered its current state (RFC 3339): the state's timeout counts from here.
inline constexpr std::string_view kUpgradeStateSinceAnnotation = "gpunode.io/upgrade-state-since";
// When maintenance began: the node must be back within --maintenance-timeout of it.
inline constexpr std::string_view kUpgradeMaintenanceAnnotation =
    "gpunode.io/upgrade-maintenance-started-at";
// Why the node is upgrade-failed, in one line.
inline constexpr std::string_view kUpgradeFailureAnnotation = "gpunode.io/upgrade-failure";
// The soak of the node's pool: when it began, when it passed.
inline constexpr std::string_view kUpgradeSoakStartedAnnotation =
    "gpunode.io/upgrade-soak-started-at";
inline constexpr std::string_view kUpgradeSoakPassedAnnotation =
    "gpunode.io/upgrade-soak-passed-at";

enum class UpgradeState {
  kUpgradeRequired,
  kCordonRequired,
  kWaitForJobsRequired,
  kPodDeletionRequired,
  kDrainRequired,
  kNodeMaintenanceRequired,
  kPostMaintenanceRequired,
  kValidationRequired,
  kUncordonRequired,
  kUpgradeDone,
  kUpgradeFailed,
};

// The label value, e.g. "wait-for-jobs-required".
std::string_view UpgradeStateName(UpgradeState state);
// The state a label value names; nullopt for a value that is none of the eleven.
std::optional<UpgradeState> ParseUpgradeState(std::string_view value);

// Between cordon-required and uncordon-required: the node is, or is about to be, out of service.
bool InProgress(UpgradeState state);

}  // namespace gpunode::cluster
