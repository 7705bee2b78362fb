#include "metrics/metrics_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace gpunode::metrics {
namespace {

constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";
// Two workers: Prometheus scrapes one at a time, a second covers a probe or a debugging curl.
constexpr size_t kWorkers = 2;

}  // namespace

MetricsServer::MetricsServer(const Sampler& sampler)
    : sampler_(sampler), server_(std::make_unique<httplib::Server>()) {}

MetricsServer::~MetricsServer() { Stop(); }

absl::Status MetricsServer::Start(const ListenAddress& address) {
  server_->new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
  // httplib's default also sets SO_REUSEPORT, which would let a second exporter bind the same
  // port silently; a port in use must be an error.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Inherited by accepted connections: without it the last segment of a response waits for
    // the client's delayed ACK (40 ms per scrape).
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  });
  // Stopping waits for idle kept-alive connections to time out, and Prometheus scrapes only every
  // 15-60 s anyway: keep connections for back-to-back requests only, so SIGTERM exits promptly.
  server_->set_keep_alive_max_count(1000);
  server_->set_keep_alive_timeout(2);

  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<const std::string> body = sampler_.Latest();
    if (body == nullptr) body = std::make_shared<const std::string>();
    // The provider keeps the sample alive until it is sent; a newer sample does not disturb it.
    res.set_content_provider(body->size(), kContentType,
                             [body](size_t offset, size_t length, httplib::DataSink& sink) {
                               return sink.write(body->data() + offset, length);
                             });
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    // Healthy while samples keep coming: a sampler stuck in the driver fails the liveness probe.
    absl::Duration age = absl::Now() - sampler_.LatestAt();
    absl::Duration limit = 3 * sampler_.interval() + absl::Seconds(10);
    if (age > limit) {
      res.status = 503;
      res.set_content(absl::StrCat("stale: last sample ", absl::FormatDuration(age), " ago\n"),
                      "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gpunode exporter: /metrics, /healthz\n", "text/plain");
  });

  errno = 0;
  if (address.port == 0) {
    port_ = server_->bind_to_any_port(address.host);
    if (port_ < 0) port_ = 0;
  } else if (server_->bind_to_port(address.host, address.port)) {
    port_ = address.port;
  }
  if (port_ == 0) {
    int err = errno;
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", address.host, ":", address.port, ": cannot listen",
                     err != 0 ? absl::StrCat(": ", std::strerror(err)) : std::string(),
                     "; stop what holds the port or choose another with --listen"));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() only takes effect once the accept loop runs; wait for it so Stop never hangs.
  for (int i = 0; i < 2000 && !server_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace gpunode::metrics
