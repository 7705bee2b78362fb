// One node's way through a driver upgrade: what each in-progress state waits for and does, and
// the label and annotation changes that move the node on. Every step reads the node afresh and
// is safe to repeat, so a rollout killed anywhere resumes from the labels.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cluster/drain_notice.h"
#include "cluster/upgrade.h"
#include "cluster/upgrade_fleet.h"
#include "cluster/upgrade_state.h"
#include "core/env.h"
#include "kube/client.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

struct StepContext {
  kube::Client& client;
  const UpgradeOptions& options;
  // The steps' Env: its sleeps renew the rollout's Lease, and a lost Lease stops them.
  core::Env& env;
  std::ostream& out;
  // Per node in maintenance, the whole minutes of waiting its last progress line said: one line
  // a minute, however many passes (other nodes' changes bring passes between the polls).
  std::map<std::string, int64_t> maintenance_minutes_said = {};
  // The same for nodes waiting for their jobs.
  std::map<std::string, int64_t> jobs_minutes_said = {};
  // Tells the owners of the pods a node waits for, once per pod.
  DrainNotifier notifier = {};
};

// Times in annotations, RFC 3339 to the second; durations in messages, to the second.
std::string Rfc3339(absl::Time t);
std::string Seconds(absl::Duration d);

// The merge patch that puts a node in `next`, stamped `now`.
nlohmann::json StatePatch(UpgradeState next, absl::Time now);

// Moves `node` to `next`, merging `patch` (more labels, annotations, spec) into the change.
absl::Status MoveNode(StepContext& ctx, const FleetNode& node, UpgradeState next,
                      nlohmann::json patch = nlohmann::json::object());

// upgrade-failed, with the reason in kUpgradeFailureAnnotation and on `ctx.out`.
absl::Status FailNode(StepContext& ctx, const FleetNode& node, std::string_view why);

// Does the work of the node's state, from cordon-required to uncordon-required. Returns whether
// the node changed state; false means it waits (for its jobs, its maintenance, its GPUs).
absl::StatusOr<bool> StepNode(StepContext& ctx, const FleetNode& node);

}  // namespace gpunode::cluster
