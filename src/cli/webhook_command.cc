// `gpunode webhook`: the admission webhook that gives GPU pods the GPU toleration and refuses
// GPU requests that can never be satisfied.

#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"
#include "cli/command.h"
#include "cli/report_error.h"
#include "cluster/webhook_server.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/system_env.h"
#include "core/text.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"

namespace gpunode::cli {
namespace {

struct WebhookFlags {
  std::string listen = ":8443";
  std::string tls_cert;
  std::string tls_key;
  int64_t max_gpus_per_node = 0;
  bool nodes_from_api = false;
  std::string kubeconfig;
  std::string context;
  std::string refresh_interval = "60s";
  std::string default_active_deadline;  // empty: no default
  std::string default_ttl;
};

// A duration flag in whole seconds, at least one.
absl::StatusOr<int64_t> SecondsFlag(const std::string& flag, const std::string& text) {
  ASSIGN_OR_RETURN(absl::Duration d, core::ParseDuration(flag, text, {.min = absl::Seconds(1)}));
  return absl::ToInt64Seconds(d);
}

int RunWebhook(const WebhookFlags& flags) {
  core::SystemEnv env;
  cluster::WebhookServerOptions options;
  options.listen = flags.listen;
  options.tls_cert = flags.tls_cert;
  options.tls_key = flags.tls_key;
  if (flags.max_gpus_per_node > 0) options.max_gpus_per_node = flags.max_gpus_per_node;
  for (auto [flag, text, out] :
       {std::tuple{"--default-active-deadline", &flags.default_active_deadline,
                   &options.defaults.active_deadline_seconds},
        std::tuple{"--default-ttl", &flags.default_ttl, &options.defaults.ttl_seconds}}) {
    if (text->empty()) continue;
    absl::StatusOr<int64_t> seconds = SecondsFlag(flag, *text);
    if (!seconds.ok()) return ReportError(AsInputError(seconds.status()));
    *out = *seconds;
  }
  // One client per user: the node refresher and the request threads never share a connection.
  auto new_client = [&]() -> absl::StatusOr<std::unique_ptr<kube::Client>> {
    kube::AccessSources sources = kube::SourcesFromEnvironment();
    sources.kubeconfig_flag = flags.kubeconfig;
    sources.context = flags.context;
    absl::StatusOr<kube::ClusterAccess> access = kube::ResolveAccess(sources);
    if (absl::IsNotFound(access.status())) {
      return AppendHint(access.status(), "give --kubeconfig FILE");
    }
    if (!access.ok()) return access.status();
    return kube::NewClient(*access, kube::TransportOptions{}, env);
  };
  if (flags.nodes_from_api) {
    absl::StatusOr<absl::Duration> refresh = core::ParseDuration(
        "--refresh-interval", flags.refresh_interval, {.min = absl::Seconds(1)});
    if (!refresh.ok()) return ReportError(AsInputError(refresh.status()));
    options.refresh_interval = *refresh;
    absl::StatusOr<std::unique_ptr<kube::Client>> client = new_client();
    if (!client.ok()) return ReportError(AsInputError(client.status()));
    options.client = std::move(*client);
  }
  if (options.defaults.active_deadline_seconds || options.defaults.ttl_seconds) {
    absl::StatusOr<std::unique_ptr<kube::Client>> client = new_client();
    if (!client.ok()) return ReportError(AsInputError(client.status()));
    options.namespace_client = std::move(*client);
  }

  // Before any server thread starts.
  if (absl::Status st = env.StopOnSignals(); !st.ok()) return ReportError(st);
  absl::Status st = cluster::RunWebhook(std::move(options), env, std::cout);
  if (!st.ok()) return ReportError(AsInputError(st));
  return kExitOk;
}

}  // namespace

void AddWebhookCommand(CLI::App& app, const GlobalOptions& /*global*/, CommandRunner& run) {
  auto flags = std::make_shared<WebhookFlags>();
  CLI::App* cmd = app.add_subcommand(
      "webhook",
      "admission webhook (AdmissionReview v1): /mutate adds the nvidia.com/gpu toleration to GPU "
      "pods, /validate refuses GPU requests that can never be scheduled, /defaults gives GPU pods "
      "and Jobs deadlines and TTLs in opted-in namespaces");
  cmd->add_option("--tls-cert", flags->tls_cert, "PEM certificate (chain) to serve")->required();
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key of the certificate")->required();
  cmd->add_option("--listen", flags->listen, "[HOST]:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--max-gpus-per-node", flags->max_gpus_per_node,
                  "refuse pods requesting more nvidia.com/gpu than this (the largest node)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_flag("--nodes-from-api", flags->nodes_from_api,
                "read node capacities and GPU taints from the API server (in-cluster service "
                "account or --kubeconfig), refreshed every --refresh-interval");
  cmd->add_option("--default-active-deadline", flags->default_active_deadline,
                  "/defaults: give GPU pods (bare, or of a Job) without activeDeadlineSeconds "
                  "this deadline, e.g. 24h, in namespaces labelled "
                  "gpunode.io/gpu-job-defaults=enabled");
  cmd->add_option("--default-ttl", flags->default_ttl,
                  "/defaults: give GPU Jobs without ttlSecondsAfterFinished this TTL, e.g. 1h, in "
                  "those namespaces");
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig for --nodes-from-api and the defaults' namespace lookups (default: "
                  "in-cluster service account)");
  cmd->add_option("--context", flags->context, "kubeconfig context");
  cmd->add_option("--refresh-interval", flags->refresh_interval,
                  "how often --nodes-from-api re-reads the nodes")
      ->capture_default_str();
  cmd->callback([&run, flags] { run = [flags] { return RunWebhook(*flags); }; });
}

}  // namespace gpunode::cli
