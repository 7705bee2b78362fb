#include "cluster/upgrade_fleet.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "kube/api_loader.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

absl::Time AnnotationTime(const kube::NodeView& node, std::string_view key) {
  auto text = kube::FindLabel(node.gpunode_annotations, key);
  absl::Time t;
  std::string error;
  if (!text || !absl::ParseTime(absl::RFC3339_full, std::string(*text), &t, &error)) {
    return absl::InfinitePast();
  }
  return t;
}

std::string LabelOr(const kube::Labels& labels, std::string_view key) {
  auto value = kube::FindLabel(labels, key);
  return value ? std::string(*value) : std::string();
}

}  // namespace

bool FleetNode::Unavailable() const {
  return view->unschedulable || view->ready != kube::ConditionStatus::kTrue;
}

bool FleetNode::NeedsReset(const std::string& driver_version) const {
  return !state || target != driver_version;
}

bool FleetPool::Done() const {
  return std::all_of(nodes.begin(), nodes.end(), [this](const FleetNode* n) {
    return n->Is(UpgradeState::kUpgradeDone) && n->target == target;
  });
}

bool FleetPool::Soaked() const {
  return Done() && std::all_of(nodes.begin(), nodes.end(), [](const FleetNode* n) {
           return n->soak_passed != absl::InfinitePast();
         });
}

bool FleetPool::Failed() const {
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const FleetNode* n) { return n->Is(UpgradeState::kUpgradeFailed); });
}

absl::StatusOr<Fleet> ReadFleet(kube::Client& client, const UpgradeOptions& options) {
  kube::ApiQuery query;
  query.node_label_selector = options.selector;
  query.pods = false;
  ASSIGN_OR_RETURN(kube::ClusterSnapshot snapshot, kube::LoadFromApi(client, query));
  return FleetFrom(std::move(snapshot), options);
}

absl::StatusOr<Fleet> FleetFrom(kube::ClusterSnapshot snapshot, const UpgradeOptions& options) {
  Fleet fleet;
  fleet.snapshot = std::move(snapshot);
  std::map<std::string, std::vector<size_t>> by_pool;
  for (const kube::NodeView& view : fleet.snapshot.nodes) {
    if (!IsGpuNode(view, options.count_label)) continue;
    FleetNode node;
    node.view = &view;
    node.name = std::string(view.name);
    node.pool = LabelOr(view.labels, options.pool_label);
    std::string state = LabelOr(view.labels, kUpgradeStateLabel);
    if (!state.empty()) {
      node.state = ParseUpgradeState(state);
      if (!node.state) {
        return absl::InvalidArgumentError(StrCat(
            "node ", node.name, ": ", kUpgradeStateLabel, "=", state,
            " is none of the GPU Operator's upgrade states; remove the label (`kubectl label node ",
            node.name, " ", kUpgradeStateLabel, "-`) and the rollout starts the node afresh"));
      }
    }
    node.driver = LabelOr(view.labels, kDriverVersionLabel);
    node.target = LabelOr(view.gpunode_annotations, kUpgradeTargetAnnotation);
    node.since = AnnotationTime(view, kUpgradeStateSinceAnnotation);
    node.maintenance_started = AnnotationTime(view, kUpgradeMaintenanceAnnotation);
    node.soak_started = AnnotationTime(view, kUpgradeSoakStartedAnnotation);
    node.soak_passed = AnnotationTime(view, kUpgradeSoakPassedAnnotation);
    node.failure = LabelOr(view.gpunode_annotations, kUpgradeFailureAnnotation);
    if (node.state && InProgress(*node.state) && node.target != options.driver_version) {
      return absl::InvalidArgumentError(
          StrCat("node ", node.name, " is mid-upgrade (", UpgradeStateName(*node.state),
                 ") to driver ", node.target.empty() ? std::string("(not recorded)") : node.target,
                 ", not --driver-version ", options.driver_version,
                 ": finish that rollout first (run it again with its --driver-version)"));
    }
    if (node.pool.empty()) {
      fleet.outside.push_back(StrCat(node.name, ": no ", options.pool_label, " label"));
      continue;
    }
    by_pool[node.pool].push_back(fleet.nodes.size());
    fleet.nodes.push_back(std::move(node));
  }
  std::vector<std::string> order = options.pools;
  if (order.empty()) {
    for (const auto& [pool, indices] : by_pool) order.push_back(pool);
  }
  std::set<std::string> listed(order.begin(), order.end());
  for (const std::string& pool : order) {
    auto it = by_pool.find(pool);
    if (it == by_pool.end()) {
      std::vector<std::string> found;
      for (const auto& [name, indices] : by_pool) found.push_back(name);
      return absl::InvalidArgumentError(StrCat(
          "--pools: pool ", pool, " has no GPU nodes (no node is labelled ", options.pool_label,
          "=", pool, options.selector.empty() ? "" : StrCat(" among --selector ", options.selector),
          "); pools found: ", found.empty() ? std::string("none") : absl::StrJoin(found, ", ")));
    }
    FleetPool p;
    p.name = pool;
    p.target = options.driver_version;
    for (size_t i : it->second) p.nodes.push_back(&fleet.nodes[i]);
    fleet.pools.push_back(std::move(p));
  }
  for (const auto& [pool, indices] : by_pool) {
    if (listed.count(pool)) continue;
    for (size_t i : indices) {
      fleet.outside.push_back(StrCat(fleet.nodes[i].name, ": pool ", pool, " is not in --pools"));
    }
  }
  return fleet;
}

}  // namespace gpunode::cluster
