// The exporter's plain-HTTP endpoint: /metrics serves the sampler's latest exposition as it is
// (no copy, no formatting on the request path) and /healthz says whether sampling keeps up.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "metrics/listen_address.h"
#include "metrics/sampler.h"

namespace gpunode::http {
class HttpServer;
}

namespace gpunode::metrics {

class MetricsServer {
 public:
  explicit MetricsServer(const Sampler& sampler);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds (so a port in use is reported here) and serves on a background thread.
  absl::Status Start(const ListenAddress& address);
  int port() const { return port_; }
  void Stop();

 private:
  const Sampler& sampler_;
  std::unique_ptr<http::HttpServer> server_;
  int port_ = 0;
};

}  // namespace gpunode::metrics
