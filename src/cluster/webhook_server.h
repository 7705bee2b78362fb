// The HTTPS server behind `gpunode webhook`: /mutate, /validate, /defaults and /healthz over TLS,
// with the certificate re-read when cert-manager (or the script) rotates it, and node capacities
// refreshed from the API in the background.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/gpu_job_defaults.h"
#include "cluster/webhook.h"
#include "core/env.h"
#include "kube/client.h"
#include "kube/cluster_snapshot.h"

namespace gpunode::cluster {

struct WebhookServerOptions {
  std::string listen = ":8443";  // [host]:port; port 0 picks a free one
  std::string tls_cert;          // PEM, leaf first, then the chain
  std::string tls_key;
  std::optional<int64_t> max_gpus_per_node;  // overrides nvidia.com/gpu from the API
  // When set, node capacities and GPU taint values come from the API, refreshed this often.
  std::unique_ptr<kube::Client> client;
  absl::Duration refresh_interval = absl::Seconds(60);
  // /defaults: what GPU pods and Jobs get in opted-in namespaces, whose labels are read with
  // `namespace_client` (required when any default is set) and remembered for `namespace_ttl`.
  JobDefaults defaults;
  std::unique_ptr<kube::Client> namespace_client;
  absl::Duration namespace_ttl = absl::Seconds(30);
};

// The largest capacity per NVIDIA resource and the values of nvidia.com/gpu NoSchedule taints.
ClusterLimits LimitsFromNodes(const kube::ClusterSnapshot& snapshot);

class WebhookServer {
 public:
  // Loads the certificate and key (refusing to start without them) and binds the port. The
  // server lives until `env` is asked to stop, which also ends the capacity refresher's waits.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Create(WebhookServerOptions options,
                                                               core::Env& env);
  ~WebhookServer();

  int port() const;
  // Serves until a stop is requested of the Env; an error if the listener fails before.
  absl::Status Run();

 private:
  class Impl;
  explicit WebhookServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `gpunode webhook`: creates the server, says its port on `announce` ("gpunode webhook listening
// on port N", read by scripts and tests that pass port 0) and serves until `env` stops.
absl::Status RunWebhook(WebhookServerOptions options, core::Env& env, std::ostream& announce);

}  // namespace gpunode::cluster
