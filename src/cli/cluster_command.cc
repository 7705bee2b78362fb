// `gpunode cluster audit | why-pending | drain | restore | verify | prepull` (and `upgrade`, in
// cluster_upgrade_command.cc): the cluster-side GPU tools, live
// against the API server or offline on a `kubectl get nodes,pods -A -o json` snapshot.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/cluster_flags.h"
#include "cli/command.h"
#include "cli/report_error.h"
#include "cluster/audit.h"
#include "cluster/drain.h"
#include "cluster/prepull.h"
#include "cluster/prometheus_idle.h"
#include "cluster/report.h"
#include "cluster/restore.h"
#include "cluster/verify.h"
#include "cluster/why_pending.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/system_env.h"
#include "core/text.h"
#include "kube/api_loader.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/snapshot_reader.h"

namespace gpunode::cli {
namespace {

struct AuditFlags {
  cluster::CountLabel count_label;
  std::string max_gpu_pod_age;  // empty: gpu-pod-long-running off
  std::vector<std::string> age_namespaces;
  std::string slow_pull = "60s";
  std::string prometheus;  // empty: gpu-pod-idle off
  double idle_util = 5;
  std::string idle_for = "30m";
};

absl::StatusOr<cluster::AuditOptions> AuditOptionsFrom(const ConnectionOptions& o,
                                                       const AuditFlags& flags, absl::Time now) {
  cluster::AuditOptions options;
  options.count_label = flags.count_label;
  options.hygiene.now = now;
  if (!flags.max_gpu_pod_age.empty()) {
    ASSIGN_OR_RETURN(absl::Duration age,
                     core::ParseDuration("--max-gpu-pod-age", flags.max_gpu_pod_age));
    options.hygiene.max_gpu_pod_age = age;
  } else if (!flags.age_namespaces.empty()) {
    return absl::InvalidArgumentError(
        "--age-namespace limits --max-gpu-pod-age, which is not set; add e.g. --max-gpu-pod-age "
        "6h");
  }
  options.hygiene.age_namespaces = flags.age_namespaces;
  ASSIGN_OR_RETURN(options.slow_pull, core::ParseDuration("--slow-pull", flags.slow_pull));
  if (!flags.prometheus.empty()) {
    ASSIGN_OR_RETURN(absl::Duration window, core::ParseDuration("--idle-for", flags.idle_for));
    if (window < absl::Minutes(1)) {
      return absl::InvalidArgumentError(
          core::StrCat("--idle-for ", flags.idle_for, ": use 1m or more"));
    }
    absl::Duration timeout;
    ASSIGN_OR_RETURN(timeout, core::ParseDuration("--request-timeout", o.request_timeout));
    absl::StatusOr<cluster::IdleEvidence> idle =
        cluster::QueryIdleGpus(flags.prometheus, window, flags.idle_util, timeout);
    if (absl::IsUnavailable(idle.status())) {
      // As for Jobs the credentials may not list: the other findings do not need Prometheus.
      std::cerr << "gpunode: note: gpu-pod-idle is skipped, Prometheus cannot be asked: "
                << idle.status().message() << "\n";
    } else {
      RETURN_IF_ERROR(idle.status());
      options.hygiene.idle = *std::move(idle);
    }
  }
  return options;
}

int RunAudit(const ConnectionOptions& o, const AuditFlags& flags) {
  core::SystemEnv env;
  absl::StatusOr<kube::ClusterSnapshot> snapshot;
  if (!o.snapshot.empty()) {
    snapshot = kube::ReadSnapshotFile(o.snapshot);
  } else {
    absl::StatusOr<Connection> c = Connect(o, env);
    if (!c.ok()) return ReportError(AsInputError(c.status()));
    kube::ApiQuery query;
    query.jobs = true;
    query.events = true;
    kube::LoadNotes notes;
    snapshot = kube::LoadFromApi(*c->client, query, {}, &notes);
    for (const std::string& skipped : notes.skipped) {
      std::cerr << "gpunode: note: findings that need these are skipped: " << skipped << "\n";
    }
  }
  if (!snapshot.ok()) return ReportError(FromSnapshotOrCluster(o, snapshot.status()));
  // Prometheus is asked after the snapshot is read, so "now" and the window match the pods.
  absl::StatusOr<cluster::AuditOptions> options = AuditOptionsFrom(o, flags, env.Now());
  if (!options.ok()) return ReportError(AsInputError(options.status()));
  cluster::AuditReport report = cluster::Audit(*snapshot, *options);
  if (o.output == "json") {
    std::cout << cluster::AuditJson(report);
  } else {
    cluster::PrintAuditTable(report, std::cout);
  }
  return report.Count(cluster::Severity::kError) > 0 ? kExitFailures : kExitOk;
}

struct WhyPendingOptions {
  std::string pod;
  std::string ns;
};

void PrintPending(const cluster::PendingReport& report, const std::string& output) {
  if (output == "json") {
    std::cout << cluster::PendingJson(report);
  } else {
    cluster::PrintPendingTable(report, std::cout);
  }
}

// For a pod not found where the user did not say -n: the namespaces that hold a pod of that name.
std::string ElsewhereHint(const kube::ClusterSnapshot& snapshot, std::string_view name) {
  std::vector<std::string> namespaces;
  for (const kube::PodView& pod : snapshot.pods) {
    if (pod.name == name) namespaces.emplace_back(pod.ns);
  }
  if (namespaces.empty()) return "";
  return core::StrCat("; a pod of that name is in namespace ", absl::StrJoin(namespaces, ", "),
                      ": give -n ", namespaces.front());
}

// The pods named `name` in every namespace, from the API server.
absl::StatusOr<kube::ClusterSnapshot> PodsNamed(kube::Client& client, const std::string& name) {
  std::string path =
      core::StrCat("/api/v1/pods?fieldSelector=", kube::UrlEncode("metadata.name=" + name));
  ASSIGN_OR_RETURN(std::string body, client.Get(path));
  kube::SnapshotBuilder builder(kube::ReadOptions{});
  RETURN_IF_ERROR(builder.Add(kube::PadInPlace(body), core::StrCat("GET ", path)));
  return builder.Take();
}

int RunWhyPending(const ConnectionOptions& o, const WhyPendingOptions& w) {
  core::SystemEnv env;
  std::string ns = w.ns;
  const std::string& name = w.pod;
  kube::ReadOptions read;
  read.keep_pod_details = [&](const kube::PodView& p) { return p.name == name && p.ns == ns; };
  absl::StatusOr<kube::ClusterSnapshot> snapshot;
  std::string where;
  if (!o.snapshot.empty()) {
    if (ns.empty()) ns = "default";
    where = core::StrCat(" in ", o.snapshot == "-" ? "stdin" : o.snapshot);
    snapshot = kube::ReadSnapshotFile(o.snapshot, read);
  } else {
    absl::StatusOr<Connection> c = Connect(o, env);
    if (!c.ok()) return ReportError(AsInputError(c.status()));
    if (ns.empty()) ns = c->access.default_namespace;
    // The pod first: a missing or finished pod needs no listing of the whole cluster.
    std::string path =
        core::StrCat("/api/v1/namespaces/", kube::UrlEncode(ns), "/pods/", kube::UrlEncode(name));
    absl::StatusOr<std::string> body = c->client->Get(path);
    if (absl::IsNotFound(body.status()) && w.ns.empty()) {
      absl::StatusOr<kube::ClusterSnapshot> named = PodsNamed(*c->client, name);
      return ReportError(AsInputError(absl::NotFoundError(
          core::StrCat("pod ", ns, "/", name, " not found",
                       named.ok() ? ElsewhereHint(*named, name) : std::string()))));
    }
    if (!body.ok()) return ReportError(FromCluster(body.status()));
    kube::SnapshotBuilder one(read);
    if (absl::Status st = one.Add(kube::PadInPlace(*body), core::StrCat("GET ", path)); !st.ok()) {
      return ReportError(st);
    }
    snapshot = one.Take();
    if (!snapshot->pods.empty() && snapshot->pods.front().phase == kube::PodPhase::kPending) {
      // Terminal pods hold nothing, so the server can leave them out of the listing.
      kube::ApiQuery query;
      query.pod_field_selector = "status.phase!=Succeeded,status.phase!=Failed";
      snapshot = kube::LoadFromApi(*c->client, query, read);
    }
  }
  if (!snapshot.ok()) return ReportError(FromSnapshotOrCluster(o, snapshot.status()));
  absl::StatusOr<cluster::PendingReport> report = cluster::WhyPending(*snapshot, ns, name);
  if (!report.ok()) {
    return ReportError(AsInputError(absl::NotFoundError(
        core::StrCat(core::View(report.status().message()), where,
                     w.ns.empty() ? ElsewhereHint(*snapshot, name) : std::string()))));
  }
  PrintPending(*report, o.output);
  return report->Failed() ? kExitFailures : kExitOk;
}

struct DrainFlags {
  cluster::DrainOptions drain;
  std::string evict_after;  // empty: GPU pods are waited for until they end
  std::string eviction_timeout = "5m";
  std::string poll_interval = "5s";
  std::string eviction_retry_interval = "5s";
};

int RunDrain(const ConnectionOptions& o, DrainFlags flags) {
  cluster::DrainOptions& d = flags.drain;
  if (!flags.evict_after.empty()) {
    absl::StatusOr<absl::Duration> parsed = core::ParseDuration("--evict-after", flags.evict_after);
    if (!parsed.ok()) return ReportError(AsInputError(parsed.status()));
    d.evict_after = *parsed;
  }
  for (auto [flag, text, out] :
       {std::tuple{"--eviction-timeout", &flags.eviction_timeout, &d.eviction_timeout},
        std::tuple{"--poll-interval", &flags.poll_interval, &d.poll_interval},
        std::tuple{"--eviction-retry-interval", &flags.eviction_retry_interval,
                   &d.eviction_retry_interval}}) {
    absl::StatusOr<absl::Duration> parsed = core::ParseDuration(flag, *text);
    if (!parsed.ok()) return ReportError(AsInputError(parsed.status()));
    *out = *parsed;
  }
  if (d.poll_interval <= absl::ZeroDuration()) d.poll_interval = absl::Milliseconds(100);
  if (!o.snapshot.empty()) {
    if (!d.dry_run) {
      return ReportError(AsInputError(absl::InvalidArgumentError(
          "drain changes the cluster, so -f (a snapshot) works only with --dry-run")));
    }
    kube::ReadOptions read;
    read.keep_pod_details = [&](const kube::PodView& p) { return p.node_name == d.node; };
    absl::StatusOr<kube::ClusterSnapshot> snapshot = kube::ReadSnapshotFile(o.snapshot, read);
    if (!snapshot.ok()) return ReportError(AsInputError(snapshot.status()));
    const kube::NodeView* node = snapshot->FindNode(d.node);
    if (node == nullptr) {
      return ReportError(AsInputError(absl::NotFoundError(core::StrCat(
          "node ", d.node, " not found in ", o.snapshot == "-" ? "stdin" : o.snapshot))));
    }
    cluster::DrainPlan plan = cluster::PlanDrain(*snapshot, *node, d);
    cluster::PrintPlan(plan, d, std::cout);
    return plan.Refused() ? kExitFailures : kExitOk;
  }
  core::SystemEnv env;
  absl::StatusOr<Connection> c = Connect(o, env);
  if (!c.ok()) return ReportError(AsInputError(c.status()));
  absl::StatusOr<cluster::DrainOutcome> outcome = cluster::RunDrain(*c->client, d, env, std::cout);
  if (!outcome.ok()) return ReportError(FromCluster(outcome.status()));
  if (outcome->complete()) {
    std::cout << outcome->summary << "\n";
    return kExitOk;
  }
  std::cerr << "gpunode: " << outcome->summary << "\n";
  return kExitFailures;
}

// The verdict, as a table or JSON, and the exit code it makes.
int PrintVerifyReport(const ConnectionOptions& o, const cluster::VerifyReport& report) {
  if (o.output == "json") {
    std::cout << cluster::VerifyJson(report);
  } else {
    cluster::PrintVerifyTable(report, std::cout);
  }
  return report.Passed() ? kExitOk : kExitFailures;
}

// `verify --dry-run -f SNAPSHOT`: the steps that only read, from the file.
int VerifySnapshotFile(const ConnectionOptions& o, const cluster::VerifyOptions& v) {
  absl::StatusOr<kube::ClusterSnapshot> snapshot =
      kube::ReadSnapshotFile(o.snapshot, cluster::VerifySnapshotReadOptions());
  if (!snapshot.ok()) return ReportError(AsInputError(snapshot.status()));
  absl::StatusOr<cluster::VerifyReport> report = cluster::VerifySnapshot(*snapshot, v, std::cerr);
  if (absl::IsNotFound(report.status())) {
    return ReportError(AsInputError(absl::NotFoundError(core::StrCat(
        core::View(report.status().message()), " in ", o.snapshot == "-" ? "stdin" : o.snapshot))));
  }
  if (!report.ok()) return ReportError(AsInputError(report.status()));
  return PrintVerifyReport(o, *report);
}

int RunVerify(const ConnectionOptions& o, VerifyFlags flags) {
  cluster::VerifyOptions& v = flags.verify;
  if (v.nodes.empty() == v.selector.empty()) {
    return ReportError(AsInputError(
        absl::InvalidArgumentError("name the nodes to verify, or give --selector, not both")));
  }
  if (absl::Status st = VerifyOptionsFromFlags(flags); !st.ok()) {
    return ReportError(AsInputError(st));
  }
  if (!o.snapshot.empty()) {
    if (!flags.dry_run) {
      return ReportError(AsInputError(absl::InvalidArgumentError(
          "verify runs a smoke pod on the node, so -f (a snapshot) works only with --dry-run")));
    }
    return VerifySnapshotFile(o, v);
  }
  v.run_smoke_pod = !flags.dry_run;
  core::SystemEnv env;
  if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);
  absl::StatusOr<Connection> c = Connect(o, env);
  if (!c.ok()) return ReportError(AsInputError(c.status()));
  UseContextNamespace(flags, *c);
  absl::StatusOr<cluster::VerifyReport> report = cluster::RunVerify(*c->client, v, env, std::cerr);
  if (!report.ok()) return ReportError(FromCluster(report.status()));
  int code = PrintVerifyReport(o, *report);
  return report->interrupted ? 128 + env.stop_signal() : code;
}

struct RestoreFlags {
  cluster::RestoreOptions restore;
  bool verify = false;
  VerifyFlags smoke;
};

int RunRestore(const ConnectionOptions& o, RestoreFlags flags) {
  cluster::RestoreOptions& r = flags.restore;
  absl::StatusOr<cluster::RestoreOutcome> outcome;
  if (!o.snapshot.empty()) {
    if (!r.dry_run || flags.verify) {
      return ReportError(AsInputError(absl::InvalidArgumentError(
          "restore changes the node (and --verify runs a pod), so -f (a snapshot) works only "
          "with --dry-run")));
    }
    absl::StatusOr<kube::ClusterSnapshot> snapshot = kube::ReadSnapshotFile(o.snapshot);
    if (!snapshot.ok()) return ReportError(AsInputError(snapshot.status()));
    const kube::NodeView* node = snapshot->FindNode(r.node);
    if (node == nullptr) {
      return ReportError(
          AsInputError(absl::NotFoundError(core::StrCat("node ", r.node, " not found"))));
    }
    outcome = cluster::Restore(nullptr, *node, r, std::cout);
  } else {
    if (flags.verify) {
      if (absl::Status st = VerifyOptionsFromFlags(flags.smoke); !st.ok()) {
        return ReportError(AsInputError(st));
      }
    }
    // The smoke pod's wait ends early on SIGINT/SIGTERM, so the pod is deleted before exit.
    core::SystemEnv env;
    if (flags.verify) {
      if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);
    }
    absl::StatusOr<Connection> c = Connect(o, env);
    if (!c.ok()) return ReportError(AsInputError(c.status()));
    if (flags.verify) {
      VerifyFlags& smoke = flags.smoke;
      UseContextNamespace(smoke, *c);
      smoke.verify.nodes = {r.node};
      smoke.verify.count_label = r.count_label;
      smoke.verify.run_smoke_pod = !r.dry_run;
      r.verify = [&](std::ostream& out) -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(cluster::VerifyReport report,
                         cluster::RunVerify(*c->client, smoke.verify, env, std::cerr));
        cluster::PrintVerifyTable(report, out);  // says a dry run ran no smoke pod
        return report.Passed();
      };
    }
    outcome = cluster::RunRestore(*c->client, r, std::cout);
    if (env.stop_signal() != 0) return 128 + env.stop_signal();
    if (!outcome.ok()) return ReportError(FromCluster(outcome.status()));
  }
  if (!outcome.ok()) return ReportError(AsInputError(outcome.status()));
  if (!outcome->restored) {
    std::cerr << "gpunode: " << outcome->message << "\n";
    return kExitFailures;
  }
  std::cout << outcome->message << "\n";
  return kExitOk;
}

struct PrepullFlags {
  cluster::PrepullOptions prepull;
  std::string command;  // split at spaces
  bool apply = false;
  bool wait = false;
  bool remove = false;
  std::string timeout = "10m";
  std::string poll_interval = "2s";
};

int RunPrepull(const ConnectionOptions& o, PrepullFlags flags) {
  cluster::PrepullOptions& p = flags.prepull;
  if (!flags.command.empty()) {
    p.command.clear();
    for (absl::string_view word : absl::StrSplit(flags.command, ' ', absl::SkipEmpty())) {
      p.command.emplace_back(word);
    }
  }
  if (flags.remove && (flags.apply || flags.wait)) {
    return ReportError(
        AsInputError(absl::InvalidArgumentError("--delete goes alone, without --apply or --wait")));
  }
  const bool live = flags.apply || flags.wait || flags.remove;
  if (!live) {
    // Print only: kubectl's namespace applies unless -n says otherwise.
    absl::StatusOr<nlohmann::json> ds = cluster::PrepullDaemonSet(p);
    if (!ds.ok()) return ReportError(AsInputError(ds.status()));
    std::cout << ds->dump(2) << "\n";
    return kExitOk;
  }
  cluster::PrepullWait wait;
  for (auto [flag, text, out] :
       {std::tuple{"--timeout", &flags.timeout, &wait.timeout},
        std::tuple{"--poll-interval", &flags.poll_interval, &wait.poll_interval}}) {
    absl::StatusOr<absl::Duration> parsed = core::ParseDuration(flag, *text);
    if (!parsed.ok()) return ReportError(AsInputError(parsed.status()));
    *out = *parsed;
  }
  absl::StatusOr<nlohmann::json> ds;
  if (flags.apply) {
    ds = cluster::PrepullDaemonSet(p);  // checked before connecting
    if (!ds.ok()) return ReportError(AsInputError(ds.status()));
  }
  core::SystemEnv env;
  absl::StatusOr<Connection> c = Connect(o, env);
  if (!c.ok()) return ReportError(AsInputError(c.status()));
  if (p.ns.empty()) p.ns = c->access.default_namespace;
  if (flags.remove) {
    absl::Status st = cluster::DeletePrepull(*c->client, p.ns, p.name, std::cout);
    return st.ok() ? kExitOk : ReportError(FromCluster(st));
  }
  if (flags.apply) {
    (*ds)["metadata"]["namespace"] = p.ns;
    if (absl::Status st = cluster::ApplyPrepull(*c->client, p.ns, p.name, *ds, std::cout);
        !st.ok()) {
      return ReportError(FromCluster(st));
    }
  }
  if (!flags.wait) return kExitOk;
  absl::StatusOr<bool> done =
      cluster::WaitForPrepull(*c->client, p.ns, p.name, wait, env, std::cout);
  if (!done.ok()) return ReportError(FromCluster(done.status()));
  return *done ? kExitOk : kExitFailures;
}

}  // namespace

void AddClusterCommand(CLI::App& app, const GlobalOptions& /*global*/, CommandRunner& run) {
  CLI::App* cluster = app.add_subcommand(
      "cluster", "GPU capacity, pending pods and node maintenance across a Kubernetes cluster");
  cluster->require_subcommand(1);

  auto audit = std::make_shared<std::pair<ConnectionOptions, AuditFlags>>();
  CLI::App* audit_cmd = cluster->add_subcommand(
      "audit", "per GPU node: capacity, allocatable, requested, free; and what is wrong");
  AuditFlags& af = audit->second;
  audit_cmd
      ->add_option("--max-gpu-pod-age", af.max_gpu_pod_age,
                   "report GPU pods older than this (gpu-pod-long-running), e.g. 6h; off by "
                   "default")
      ->capture_default_str();
  audit_cmd->add_option("--age-namespace", af.age_namespaces,
                        "apply --max-gpu-pod-age only in this namespace (repeatable; e.g. the CI "
                        "namespaces)");
  audit_cmd
      ->add_option("--slow-pull", af.slow_pull,
                   "report image pulls on GPU nodes slower than this (slow-image-pull)")
      ->capture_default_str();
  audit_cmd->add_option("--prometheus", af.prometheus,
                        "Prometheus URL (http(s)://host:port): report GPU pods whose GPUs were "
                        "idle (gpu-pod-idle) from DCGM_FI_DEV_GPU_UTIL");
  audit_cmd
      ->add_option("--idle-util", af.idle_util,
                   "with --prometheus: a pod is idle when its GPU utilization stayed below this "
                   "percentage")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  audit_cmd->add_option("--idle-for", af.idle_for, "with --prometheus: for this long")
      ->capture_default_str();
  AddCountLabelOptions(audit_cmd, af.count_label);
  AddConnectionOptions(audit_cmd, audit->first, {});
  audit_cmd->callback(
      [&run, audit] { run = [audit] { return RunAudit(audit->first, audit->second); }; });

  auto pending = std::make_shared<std::pair<ConnectionOptions, WhyPendingOptions>>();
  CLI::App* pending_cmd = cluster->add_subcommand(
      "why-pending",
      "why a Pending GPU pod is not scheduled, node by node, and whether waiting "
      "helps");
  pending_cmd->add_option("POD", pending->second.pod, "the pod's name")->required();
  pending_cmd->add_option("-n,--namespace", pending->second.ns,
                          "the pod's namespace (default: the context's, or default)");
  AddConnectionOptions(pending_cmd, pending->first, {});
  pending_cmd->callback([&run, pending] {
    run = [pending] { return RunWhyPending(pending->first, pending->second); };
  });

  auto drain = std::make_shared<std::pair<ConnectionOptions, DrainFlags>>();
  CLI::App* drain_cmd = cluster->add_subcommand(
      "drain",
      "label a GPU node draining, tell the GPU pods' owners and wait for the pods to finish "
      "(evicting only after --evict-after)");
  DrainFlags& df = drain->second;
  drain_cmd->add_option("NODE", df.drain.node, "the node")->required();
  drain_cmd->add_flag("--cordon", df.drain.cordon, "also mark the node unschedulable");
  drain_cmd->add_flag("--dry-run", df.drain.dry_run, "print what would happen; change nothing");
  drain_cmd->add_flag("--delete-emptydir-data", df.drain.delete_emptydir_data,
                      "evict pods with emptyDir volumes (their data is lost)");
  drain_cmd->add_flag("--force", df.drain.force, "evict pods that no controller will recreate");
  drain_cmd->add_flag("--all-pods", df.drain.all_pods,
                      "evict every pod except DaemonSet and static pods, not just GPU pods");
  drain_cmd->add_option("--evict-after,--timeout", df.evict_after,
                        "evict the GPU pods still running this long after the drain began "
                        "(default: none; they are waited for until they end)");
  drain_cmd
      ->add_option("--eviction-timeout", df.eviction_timeout,
                   "how long to keep retrying evictions a PodDisruptionBudget blocks")
      ->capture_default_str();
  drain_cmd->add_option("--poll-interval", df.poll_interval, "how often to look at the pods")
      ->capture_default_str();
  drain_cmd
      ->add_option("--eviction-retry-interval", df.eviction_retry_interval,
                   "pause between eviction attempts (a Retry-After from the server wins)")
      ->capture_default_str();
  AddConnectionOptions(drain_cmd, drain->first, {.output = false, .snapshot_needs_dry_run = true});
  drain_cmd->callback(
      [&run, drain] { run = [drain] { return RunDrain(drain->first, drain->second); }; });

  auto prepull = std::make_shared<std::pair<ConnectionOptions, PrepullFlags>>();
  CLI::App* prepull_cmd = cluster->add_subcommand(
      "prepull",
      "print (or --apply) a DaemonSet that pulls images onto the selected GPU nodes before pods "
      "need them; --wait until every node has them; --delete it");
  PrepullFlags& pf = prepull->second;
  prepull_cmd->add_option("IMAGE", pf.prepull.images, "the images to pre-pull");
  prepull_cmd
      ->add_option("--selector", pf.prepull.selector,
                   "the nodes, as a label selector: key=value, key!=value, key, !key (comma: and)")
      ->capture_default_str();
  prepull_cmd->add_option("-n,--namespace", pf.prepull.ns,
                          "namespace of the DaemonSet (default: the context's)");
  prepull_cmd->add_option("--name", pf.prepull.name, "name of the DaemonSet")
      ->capture_default_str();
  prepull_cmd->add_option("--command", pf.command,
                          "the no-op each image runs, split at spaces (default: /bin/sh -c true; "
                          "e.g. /bin/true for images without a shell)");
  prepull_cmd
      ->add_option("--pause-image", pf.prepull.pause_image,
                   "the image of the container that keeps the pod running")
      ->capture_default_str();
  prepull_cmd->add_flag("--apply", pf.apply, "create the DaemonSet (or replace it)");
  prepull_cmd->add_flag("--wait", pf.wait,
                        "wait until every selected node has the images (exit 1 at --timeout)");
  prepull_cmd->add_flag("--delete", pf.remove, "delete the DaemonSet");
  prepull_cmd->add_option("--timeout", pf.timeout, "how long --wait waits")->capture_default_str();
  prepull_cmd->add_option("--poll-interval", pf.poll_interval, "how often --wait looks")
      ->capture_default_str();
  AddConnectionOptions(prepull_cmd, prepull->first, {.output = false, .snapshot = false});
  prepull_cmd->callback(
      [&run, prepull] { run = [prepull] { return RunPrepull(prepull->first, prepull->second); }; });

  auto restore = std::make_shared<std::pair<ConnectionOptions, RestoreFlags>>();
  CLI::App* restore_cmd = cluster->add_subcommand(
      "restore",
      "after maintenance: if every GPU is back and healthy, undo what `cluster drain` did "
      "(its label, and its cordon)");
  RestoreFlags& rf = restore->second;
  restore_cmd->add_option("NODE", rf.restore.node, "the node")->required();
  restore_cmd->add_flag("--dry-run", rf.restore.dry_run, "check only; change nothing");
  restore_cmd->add_flag("--force", rf.restore.force,
                        "restore even when GPUs are missing or unhealthy (said in the output)");
  restore_cmd->add_flag(
      "--verify", rf.verify,
      "run `cluster verify` on the node (smoke pod included, except with --dry-run) before undoing "
      "anything; refuse when it fails");
  AddCountLabelOptions(restore_cmd, rf.restore.count_label);
  AddSmokePodOptions(restore_cmd, rf.smoke);
  AddConnectionOptions(restore_cmd, restore->first,
                       {.output = false, .snapshot_needs_dry_run = true});
  restore_cmd->callback(
      [&run, restore] { run = [restore] { return RunRestore(restore->first, restore->second); }; });

  auto verify = std::make_shared<std::pair<ConnectionOptions, VerifyFlags>>();
  CLI::App* verify_cmd = cluster->add_subcommand(
      "verify",
      "prove GPU nodes work end to end: labels, device plugin, capacity, and a smoke pod on "
      "min(2, GPUs) that reports what it saw");
  VerifyFlags& vf = verify->second;
  verify_cmd->add_option("NODE", vf.verify.nodes, "the nodes");
  verify_cmd->add_option("--selector", vf.verify.selector,
                         "the nodes, as a label selector (e.g. nvidia.com/gpu.present=true)");
  verify_cmd->add_flag("--dry-run", vf.dry_run,
                       "every step but the smoke pod (and the workload): change nothing");
  AddSmokePodOptions(verify_cmd, vf);
  AddCountLabelOptions(verify_cmd, vf.verify.count_label);
  AddConnectionOptions(verify_cmd, verify->first, {.snapshot_needs_dry_run = true});
  verify_cmd->callback(
      [&run, verify] { run = [verify] { return RunVerify(verify->first, verify->second); }; });

  AddClusterUpgradeCommand(cluster, run);
}

}  // namespace gpunode::cli
