// What the `gpunode cluster` subcommands share: how they reach the API server (or a snapshot),
// how an API error becomes an exit code, the smoke pod's flags of `verify`, `restore --verify`
// and `upgrade`, and a clock that SIGINT and SIGTERM interrupt.
#pragma once

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/command.h"
#include "cluster/gpu_count.h"
#include "cluster/verify.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace gpunode::cli {

struct ConnectionOptions {
  std::string snapshot;  // -f FILE or - (stdin)
  std::string kubeconfig;
  std::string context;
  std::string request_timeout = "30s";
  std::string output = "table";
};

struct ConnectionFlags {
  bool output = true;  // -o table|json
  // -f FILE: only the commands that can work from what a snapshot holds; prepull acts on the
  // cluster and does not list it.
  bool snapshot = true;
  // -f only with --dry-run (drain, restore, verify, upgrade change the cluster): the help says so.
  bool snapshot_needs_dry_run = false;
};

void AddConnectionOptions(CLI::App* cmd, ConnectionOptions& o, ConnectionFlags flags);

// The operator's own GPU count label, named as `gpunode labels --stable-labels` names it.
void AddCountLabelOptions(CLI::App* cmd, cluster::CountLabel& label);

struct Connection {
  kube::ClusterAccess access;
  std::unique_ptr<kube::Client> client;
};

// The client waits between retries on `env`, which outlives the Connection.
absl::StatusOr<Connection> Connect(const ConnectionOptions& o, core::Env& env);

// What an API server's answer means for the exit code: an object the user named that is not
// there, credentials that do not work or a request refused as given is an input error (2, as a
// bad flag); a cluster that cannot be reached or fails the request (5xx, timeout) is a failure
// (1).
absl::Status FromCluster(const absl::Status& status);

// A snapshot file is what the user named: any problem reading it is an input error.
absl::Status FromSnapshotOrCluster(const ConnectionOptions& o, const absl::Status& status);

struct VerifyFlags {
  cluster::VerifyOptions verify;
  bool dry_run = false;          // verify's own --dry-run: no smoke pod
  std::string command;           // split at spaces
  std::string workload_command;  // split at spaces
  std::string timeout = "5m";
  std::string poll_interval = "2s";
  // The flags' names: `upgrade` has timeouts and an interval of its own.
  std::string timeout_flag = "--timeout";
  std::string poll_interval_flag = "--poll-interval";
};

// The smoke pod's options, shared by `verify`, `restore --verify` and `upgrade`.
void AddSmokePodOptions(CLI::App* cmd, VerifyFlags& f);

// Completes the options from the flags, before connecting, so that a bad flag is reported
// first; the namespace comes from the context after (UseContextNamespace).
absl::Status VerifyOptionsFromFlags(VerifyFlags& f);

void UseContextNamespace(VerifyFlags& f, const Connection& c);

// `cluster upgrade`, registered under `cluster`.
void AddClusterUpgradeCommand(CLI::App* cluster, CommandRunner& run);

}  // namespace gpunode::cli
