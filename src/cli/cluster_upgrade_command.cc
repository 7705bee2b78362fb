// `gpunode cluster upgrade`: a staged driver rollout, pool by pool, with a soak between pools.
// Progress goes to stderr as it happens; the nodes' states and the outcome to stdout at the end.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "cli/cluster_flags.h"
#include "cli/report_error.h"
#include "cluster/maintenance_job.h"
#include "cluster/upgrade.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/system_env.h"
#include "core/text.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cli {
namespace {

struct UpgradeFlags {
  cluster::UpgradeOptions upgrade;
  std::string pools;  // comma-separated
  std::string max_unavailable = "1";
  std::string wait_for_jobs_timeout;  // empty: jobs are waited for until they end
  std::string drain_timeout = "10m";
  std::string maintenance_job;
  std::string maintenance_timeout = "30m";
  std::string soak = "24h";
  std::string soak_check_interval = "5m";
  std::string poll_interval = "10s";
  std::string lease_duration = "60s";
  std::string regression = "unhealthy-gpus,xid,verify";
  std::vector<int> ignore_xids;
  VerifyFlags smoke;
};

std::string DefaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return core::StrCat(host[0] != '\0' ? host : "gpunode", "-", static_cast<long long>(getpid()));
}

// Everything that can be checked before connecting, so a bad flag changes nothing.
absl::Status OptionsFromFlags(UpgradeFlags& f) {
  cluster::UpgradeOptions& u = f.upgrade;
  if (u.driver_version.empty()) {
    return absl::InvalidArgumentError(
        "--driver-version is required: the driver the nodes should run, as their "
        "nvidia.com/cuda.driver-version.full label says it (e.g. 550.90.07)");
  }
  for (absl::string_view pool : absl::StrSplit(f.pools, ',', absl::SkipWhitespace())) {
    u.pools.emplace_back(pool);
  }
  ASSIGN_OR_RETURN(u.max_unavailable, cluster::ParseMaxUnavailable(f.max_unavailable));
  RETURN_IF_ERROR(cluster::ParseRegressions(f.regression, u));
  u.ignore_xids = f.ignore_xids;
  const core::DurationRange positive{.min = absl::Milliseconds(1)};
  for (auto [flag, text, out, range] :
       {std::tuple{"--drain-timeout", &f.drain_timeout, &u.drain_timeout, core::DurationRange{}},
        std::tuple{"--maintenance-timeout", &f.maintenance_timeout, &u.maintenance_timeout,
                   positive},
        std::tuple{"--soak", &f.soak, &u.soak, core::DurationRange{}},
        std::tuple{"--soak-check-interval", &f.soak_check_interval, &u.soak_check_interval,
                   positive},
        std::tuple{"--poll-interval", &f.poll_interval, &u.poll_interval, positive},
        std::tuple{"--lease-duration", &f.lease_duration, &u.lease.duration,
                   core::DurationRange{.min = absl::Seconds(3)}}}) {
    ASSIGN_OR_RETURN(*out, core::ParseDuration(flag, *text, range));
  }
  if (!f.wait_for_jobs_timeout.empty()) {
    ASSIGN_OR_RETURN(u.wait_for_jobs_timeout,
                     core::ParseDuration("--wait-for-jobs-timeout", f.wait_for_jobs_timeout));
  }
  if (!f.maintenance_job.empty()) {
    ASSIGN_OR_RETURN(u.maintenance_job, cluster::ReadMaintenanceJob(f.maintenance_job));
  }
  RETURN_IF_ERROR(VerifyOptionsFromFlags(f.smoke));
  u.verify = f.smoke.verify;
  if (u.lease.identity.empty()) u.lease.identity = DefaultIdentity();
  return absl::OkStatus();
}

void PrintResult(const ConnectionOptions& o, const cluster::UpgradeResult& result) {
  if (o.output == "json") {
    std::cout << cluster::UpgradeJson(result);
  } else {
    cluster::PrintUpgradeTable(result, std::cout);
  }
}

// `upgrade --dry-run -f SNAPSHOT`: the live dry run's plan, from the file.
int PlanFromSnapshot(const ConnectionOptions& o, UpgradeFlags& flags) {
  cluster::UpgradeOptions& u = flags.upgrade;
  if (!u.dry_run) {
    return ReportError(AsInputError(absl::InvalidArgumentError(
        "upgrade changes the cluster and keeps its state there, so -f (a snapshot) works only "
        "with --dry-run")));
  }
  absl::StatusOr<kube::ClusterSnapshot> snapshot = kube::ReadSnapshotFile(o.snapshot);
  if (!snapshot.ok()) return ReportError(AsInputError(snapshot.status()));
  // No kubeconfig context to take a namespace from: -n, else default, as kubectl has it.
  if (flags.smoke.verify.ns.empty()) flags.smoke.verify.ns = "default";
  u.verify.ns = u.job_namespace = flags.smoke.verify.ns;
  absl::StatusOr<cluster::UpgradeResult> result =
      cluster::PlanUpgrade(*std::move(snapshot), u, std::cerr);
  if (!result.ok()) return ReportError(AsInputError(result.status()));
  PrintResult(o, *result);
  return kExitOk;
}

int RunUpgrade(const ConnectionOptions& o, UpgradeFlags flags) {
  if (absl::Status st = OptionsFromFlags(flags); !st.ok()) return ReportError(AsInputError(st));
  if (!o.snapshot.empty()) return PlanFromSnapshot(o, flags);
  cluster::UpgradeOptions& u = flags.upgrade;
  core::SystemEnv env;
  if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);
  absl::StatusOr<Connection> c = Connect(o, env);
  if (!c.ok()) return ReportError(AsInputError(c.status()));
  UseContextNamespace(flags.smoke, *c);
  u.verify.ns = flags.smoke.verify.ns;
  u.job_namespace = u.verify.ns;
  if (u.lease.ns.empty()) u.lease.ns = u.verify.ns;
  absl::StatusOr<cluster::UpgradeResult> result =
      cluster::RunUpgrade(*c->client, u, env, std::cerr);
  if (!result.ok()) {
    const absl::Status& st = result.status();
    return ReportError(absl::IsInvalidArgument(st) ? st : FromCluster(st));
  }
  PrintResult(o, *result);
  switch (result->outcome) {
    case cluster::UpgradeResult::kDone:
    case cluster::UpgradeResult::kPlanned:
      return kExitOk;
    case cluster::UpgradeResult::kInterrupted:
      return env.stop_signal() != 0 ? 128 + env.stop_signal() : kExitFailures;
    case cluster::UpgradeResult::kHalted:
    case cluster::UpgradeResult::kLeaseHeld:
      return kExitFailures;
  }
  return kExitFailures;
}

}  // namespace

void AddClusterUpgradeCommand(CLI::App* cluster, CommandRunner& run) {
  auto upgrade = std::make_shared<std::pair<ConnectionOptions, UpgradeFlags>>();
  CLI::App* cmd = cluster->add_subcommand(
      "upgrade",
      "roll a driver out pool by pool: per node cordon, wait for jobs, drain, maintenance, "
      "verify, uncordon (the GPU Operator's states); then soak the pool before the next");
  UpgradeFlags& f = upgrade->second;
  cluster::UpgradeOptions& u = f.upgrade;
  cmd->add_option("--driver-version", u.driver_version,
                  "the target driver, as nvidia.com/cuda.driver-version.full reports it");
  cmd->add_option("--pool-label", u.pool_label, "the node label that names each node's pool")
      ->capture_default_str();
  cmd->add_option("--pools", f.pools,
                  "the pools in rollout order, comma-separated (default: every pool, by name)");
  cmd->add_option("--selector", u.selector, "only the GPU nodes this label selector selects");
  cmd->add_option("--max-unavailable", f.max_unavailable,
                  "nodes of a pool out of service at once: a count, or a percentage rounded up")
      ->capture_default_str();
  cmd->add_option("--wait-for-jobs", u.wait_for_jobs,
                  "a pod label selector: the node waits for these pods to finish before "
                  "evictions (default: its GPU pods)");
  cmd->add_option("--wait-for-jobs-timeout", f.wait_for_jobs_timeout,
                  "evict the pods still running this long after the node began waiting for "
                  "them (default: none; they are waited for until they end)");
  cmd->add_option("--drain-timeout", f.drain_timeout,
                  "how long evictions may take (PodDisruptionBudgets) before the node fails")
      ->capture_default_str();
  cmd->add_flag("--all-pods", u.all_pods,
                "drain-required evicts every pod except DaemonSet and static pods, not only GPU "
                "pods");
  cmd->add_flag("--delete-emptydir-data", u.delete_emptydir_data,
                "evict pods with emptyDir volumes (their data is lost)");
  cmd->add_flag("--force", u.force, "evict pods that no controller will recreate");
  cmd->add_option("--maintenance-job", f.maintenance_job,
                  "a batch/v1 Job manifest run on each node as its maintenance (pinned to the "
                  "node; privileged only if the manifest says so); default: wait until the node "
                  "reports --driver-version");
  cmd->add_option("--maintenance-timeout", f.maintenance_timeout,
                  "how long a node has from maintenance to being back with all its GPUs")
      ->capture_default_str();
  cmd->add_option("--soak", f.soak, "how long an upgraded pool is watched before the next")
      ->capture_default_str();
  cmd->add_option("--soak-check-interval", f.soak_check_interval,
                  "how often the soaking pool is looked at")
      ->capture_default_str();
  cmd->add_option("--prometheus", u.prometheus,
                  "Prometheus URL: XID errors from gpunode_xid_errors_total (default: the nodes' "
                  "events)");
  cmd->add_option("--regression", f.regression,
                  "what halts the rollout during the soak: unhealthy-gpus (allocatable below "
                  "capacity, NotReady), xid, verify (labels, device plugin), comma-separated")
      ->capture_default_str();
  cmd->add_option("--ignore-xid", f.ignore_xids,
                  "an XID the soak does not count (repeatable; e.g. 13, 31, 43, which "
                  "applications usually cause)")
      ->delimiter(',')
      ->check(CLI::Range(0, 9999));
  cmd->add_option("--poll-interval", f.poll_interval, "how often the nodes are looked at")
      ->capture_default_str();
  cmd->add_flag("--dry-run", u.dry_run, "print the plan; change nothing");
  cmd->add_option("--lease-name", u.lease.name, "the Lease that keeps two copies from acting")
      ->capture_default_str();
  cmd->add_option("--lease-namespace", u.lease.ns,
                  "namespace of the Lease (default: the context's, as -n)");
  cmd->add_option("--lease-duration", f.lease_duration,
                  "how long the Lease outlives a copy that stops renewing it")
      ->capture_default_str();
  cmd->add_option("--identity", u.lease.identity,
                  "this copy's name in the Lease (default: HOSTNAME-PID; a Deployment passes its "
                  "pod name)");
  cmd->add_flag("--wait-for-lease", u.wait_for_lease,
                "wait while another copy holds the Lease, instead of exiting 1");
  f.smoke.timeout_flag = "--smoke-timeout";
  f.smoke.poll_interval_flag = "--smoke-poll-interval";
  AddSmokePodOptions(cmd, f.smoke);
  AddCountLabelOptions(cmd, u.count_label);
  AddConnectionOptions(cmd, upgrade->first, {.snapshot_needs_dry_run = true});
  cmd->callback(
      [&run, upgrade] { run = [upgrade] { return RunUpgrade(upgrade->first, upgrade->second); }; });
}

}  // namespace gpunode::cli
