// The HTTPS server behind `gpunode webhook`: /mutate, /validate, /defaults and /healthz over TLS,
// with the certificate re-read when cert-manager (or the script) rotates it, and node capacities
// refreshed from the API in the background.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/gpu_job_defaults.h"
#include "cluster/webhook.h"
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
  // Loads the certificate and key (refusing to start without them) and binds the port.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Create(WebhookServerOptions options);
  ~WebhookServer();

  int port() const;
  // Serves until Stop(); returns an error if the listener fails.
  absl::Status Run();
  // Thread-safe; Run returns soon after.
  void Stop();

 private:
  class Impl;
  explicit WebhookServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpunode::cluster
