// `gpunode cluster upgrade`: a staged driver rollout, pool by pool. Each node goes through the
// GPU Operator's states (upgrade_state.h): cordon, wait for its jobs, evict its GPU pods (and the
// rest, with --all-pods), maintenance (a Job, or waiting until the node reports the target
// driver), the node back with all its GPUs, `cluster verify`, uncordon. At most --max-unavailable
// nodes of the pool are out of service at once. When a pool is done it soaks: for --soak, its
// nodes are watched for GPUs going unhealthy, XID errors and verify failures, and any regression
// halts the rollout before the next pool is touched.
//
// Everything the rollout knows is in node labels and annotations, so it can be killed at any
// point and run again to resume; a Lease keeps two copies from acting at once.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/gpu_count.h"
#include "cluster/upgrade_state.h"
#include "cluster/verify.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"
#include "kube/lease.h"
#include "nlohmann/json.hpp"

namespace gpunode::cluster {

// --max-unavailable: a count, or a percentage of the pool's nodes rounded up (as the GPU Operator
// scales it); never below 1.
struct MaxUnavailable {
  int count = 1;
  bool percent = false;
  int For(int pool_size) const;
};
// "2" or "25%"; an error names the flag and what to give.
absl::StatusOr<MaxUnavailable> ParseMaxUnavailable(std::string_view text);

struct UpgradeOptions {
  std::string driver_version;       // the target, as nvidia.com/cuda.driver-version.full says it
  std::string pool_label = "pool";  // the node label naming each node's pool
  std::vector<std::string> pools;   // in rollout order; empty: every pool, sorted by name
  std::string selector;             // only the GPU nodes this label selector selects
  MaxUnavailable max_unavailable;   // per pool
  std::string wait_for_jobs;        // pod label selector; empty: the node's GPU pods
  // How long they get before their pods are evicted; none (the default): they are waited for
  // until they end.
  std::optional<absl::Duration> wait_for_jobs_timeout;
  absl::Duration drain_timeout = absl::Minutes(10);  // evictions (PodDisruptionBudgets) may take
  bool all_pods = false;  // drain-required evicts every pod, not only GPU pods
  bool delete_emptydir_data = false;
  bool force = false;  // evict pods no controller recreates
  // The maintenance Job template (maintenance_job.h); null: wait for the node to report the
  // target driver on its own.
  nlohmann::json maintenance_job;
  std::string job_namespace;  // where maintenance Jobs and smoke pods run
  absl::Duration maintenance_timeout = absl::Minutes(30);
  absl::Duration soak = absl::Hours(24);
  absl::Duration soak_check_interval = absl::Minutes(5);
  std::string prometheus;  // XID errors from gpunode_xid_errors_total; else node events
  // What the soak counts as a regression: GPUs unhealthy or gone (verify's ready and capacity
  // steps), XID errors (except those in ignore_xids), the rest of verify (labels, device plugin).
  bool regress_on_gpus = true;
  bool regress_on_xids = true;
  bool regress_on_verify = true;
  std::vector<int> ignore_xids;  // e.g. 13, 31, 43: errors applications cause
  absl::Duration poll_interval = absl::Seconds(10);
  VerifyOptions verify;  // validation-required and the soak; nodes are filled in
  CountLabel count_label;
  bool dry_run = false;
  kube::LeaseSettings lease = {  // ignored by a dry run
      .ns = {},
      .name = "gpunode-upgrade",
      .identity = {},
      .duration = absl::Seconds(60)};
  bool wait_for_lease = false;  // wait while another copy holds the lease, instead of exiting
};

// --regression: a comma-separated subset of unhealthy-gpus, xid, verify, set into `options`.
absl::Status ParseRegressions(std::string_view text, UpgradeOptions& options);

struct NodeProgress {
  std::string node;
  std::string pool;
  std::string state;   // the label's value
  std::string driver;  // nvidia.com/cuda.driver-version.full
  std::string note;    // why it failed, or what it waits for
};

struct UpgradeResult {
  enum Outcome {
    kDone,         // every pool upgraded and soaked
    kHalted,       // a node failed or the soak found a regression: nothing more is touched
    kInterrupted,  // stopped on request; run again to resume
    kPlanned,      // --dry-run
    kLeaseHeld,    // another copy holds the lease (without --wait-for-lease)
  } outcome = kDone;
  std::string summary;  // one line: what happened, or which nodes halted it and why
  std::vector<NodeProgress> nodes;
};

// Runs (or resumes) the rollout, printing progress to `out`. An error Status means it could not
// run: bad input found in the cluster (a state label it does not know, a node mid-upgrade to
// another driver: InvalidArgument), API errors, or a lost Lease.
absl::StatusOr<UpgradeResult> RunUpgrade(kube::Client& client, const UpgradeOptions& options,
                                         core::Env& env, std::ostream& out);

// `upgrade --dry-run -f SNAPSHOT`: the plan the live dry run prints (kPlanned), from a `kubectl
// get nodes,pods -A -o json` snapshot instead of the API server; --selector is matched here, as
// the API server would match it. Errors as RunUpgrade's for labels it cannot plan from.
absl::StatusOr<UpgradeResult> PlanUpgrade(kube::ClusterSnapshot snapshot,
                                          const UpgradeOptions& options, std::ostream& out);

void PrintUpgradeTable(const UpgradeResult& result, std::ostream& out);
std::string UpgradeJson(const UpgradeResult& result);

}  // namespace gpunode::cluster
