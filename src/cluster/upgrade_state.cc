#include "cluster/upgrade_state.h"

#include <array>
#include <utility>

namespace gpunode::cluster {
namespace {

constexpr std::array<std::pair<UpgradeState, std::string_view>, 11> kNames = {{
    {UpgradeState::kUpgradeRequired, "upgrade-required"},
    {UpgradeState::kCordonRequired, "cordon-required"},
    {UpgradeState::kWaitForJobsRequired, "wait-for-jobs-required"},
    {UpgradeState::kPodDeletionRequired, "pod-deletion-required"},
    {UpgradeState::kDrainRequired, "drain-required"},
    {UpgradeState::kNodeMaintenanceRequired, "node-maintenance-required"},
    {UpgradeState::kPostMaintenanceRequired, "post-maintenance-required"},
    {UpgradeState::kValidationRequired, "validation-required"},
    {UpgradeState::kUncordonRequired, "uncordon-required"},
    {UpgradeState::kUpgradeDone, "upgrade-done"},
    {UpgradeState::kUpgradeFailed, "upgrade-failed"},
}};

}  // namespace

std::string_view UpgradeStateName(UpgradeState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

std::optional<UpgradeState> ParseUpgradeState(std::string_view value) {
  for (const auto& [s, name] : kNames) {
    if (name == value) return s;
  }
  return std::nullopt;
}

bool InProgress(UpgradeState state) {
  return state != UpgradeState::kUpgradeRequired && state != UpgradeState::kUpgradeDone &&
         state != UpgradeState::kUpgradeFailed;
}

}  // namespace gpunode::cluster
