#include "metrics/metrics_server.h"

#include "absl/strings/str_cat.h"
#include "http/http_module.h"

namespace gpunode::metrics {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";
// Two workers: Prometheus scrapes one at a time, a second covers a probe or a debugging curl.
constexpr size_t kWorkers = 2;

}  // namespace

MetricsServer::MetricsServer(const Sampler& sampler) : sampler_(sampler) {}

MetricsServer::~MetricsServer() { Stop(); }

absl::Status MetricsServer::Start(const ListenAddress& address) {
  http::ServerOptions options;
  options.host = address.host;
  options.port = address.port;
  options.worker_threads = kWorkers;
  // Without it the last segment of a response waits for the client's delayed ACK (40 ms per
  // scrape).
  options.tcp_nodelay = true;
  // Stopping waits for idle kept-alive connections to time out, and Prometheus scrapes only every
  // 15-60 s anyway: keep connections for back-to-back requests only, so SIGTERM exits promptly.
  options.keep_alive_max_count = 1000;
  options.keep_alive_timeout_s = 2;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> server = http::CreateServer(options);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);

  server_->Get("/metrics", [this](const http::Request&, http::Response& res) {
    std::shared_ptr<const std::string> body = sampler_.Latest();
    if (body == nullptr) body = std::make_shared<const std::string>();
    res.content_type = kContentType;
    // The provider keeps the sample alive until it is sent; a newer sample does not disturb it.
    res.content_length = body->size();
    res.provider = [body](size_t offset, size_t length, const http::BodyWriter& write) {
      return write(body->data() + offset, length);
    };
  });
  server_->Get("/healthz", [this](const http::Request&, http::Response& res) {
    // Healthy while samples keep coming: a sampler stuck in the driver fails the liveness probe.
    absl::Duration age = sampler_.LatestAge();
    absl::Duration limit = 3 * sampler_.interval() + absl::Seconds(10);
    if (age > limit) {
      res.status = 503;
      res.body = absl::StrCat("stale: last sample ", absl::FormatDuration(age), " ago\n");
      return;
    }
    res.body = "ok\n";
  });
  server_->Get("/", [](const http::Request&, http::Response& res) {
    res.body = "gpunode exporter: /metrics, /healthz\n";
  });

  if (http::Result bound = server_->Bind(); !bound.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", address.host, ":", address.port, ": cannot listen",
                     bound.message.empty() ? std::string() : absl::StrCat(": ", bound.message),
                     "; stop what holds the port or choose another with --listen"));
  }
  port_ = server_->port();
  server_->Start();
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  if (server_ == nullptr) return;
  server_->Stop();
  server_->Wait();
}

}  // namespace gpunode::metrics
