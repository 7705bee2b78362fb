// The soak of an upgraded pool: before the next pool is touched, the pool's nodes are watched for
// regressions the new driver may bring: GPUs going unhealthy or missing (allocatable below
// capacity or the physical count, the node not Ready), XID errors, and `cluster verify` failing.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/upgrade.h"
#include "cluster/upgrade_fleet.h"
#include "core/env.h"
#include "kube/client.h"

namespace gpunode::cluster {

struct Regression {
  std::string node;
  std::string why;
};

// XID errors in gpunode_xid_errors_total since `since`, per node (the exporter's Hostname label)
// and XID; the second arm counts a series born during the window, which increase() misses.
std::string XidQuery(absl::Duration window);

// Looks at `pool` once for what options.regress_on_* count: `cluster verify` without its smoke
// pod on every node, and XIDs since the soak began (but options.ignore_xids) from Prometheus
// (options.prometheus) or, without it, from the nodes' events whose reason or message names an
// Xid. It prints nothing: a soak checks every few minutes for a day, and the caller says one line
// per check (the regressions found name their node and cause).
absl::StatusOr<std::vector<Regression>> CheckSoak(kube::Client& client, const FleetPool& pool,
                                                  absl::Time since, const UpgradeOptions& options,
                                                  core::Env& env);

}  // namespace gpunode::cluster
