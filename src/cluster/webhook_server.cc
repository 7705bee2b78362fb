#include "cluster/webhook_server.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "cluster/namespace_opt_in.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "http/http_module.h"
#include "kube/api_loader.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"
#include "spdlog/spdlog.h"

namespace gpunode::cluster {
namespace {

using core::StrCat;

constexpr size_t kMaxBody = 4 << 20;  // pods are far smaller; etcd stores at most 1.5 MiB

void Reply(AdmissionReply reply, http::Response& res) {
  res.status = reply.http_status;
  res.content_type = reply.http_status == 200 ? "application/json" : "text/plain";
  res.body = std::move(reply.body);
}

absl::Status ParseListen(const std::string& listen, std::string& host, int& port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        StrCat("--listen ", listen, ": expected [HOST]:PORT, e.g. :8443"));
  }
  host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(StrCat("--listen ", listen, ": bad port"));
  }
  return absl::OkStatus();
}

}  // namespace

ClusterLimits LimitsFromNodes(const kube::ClusterSnapshot& snapshot) {
  ClusterLimits limits;
  for (const kube::NodeView& node : snapshot.nodes) {
    for (const kube::ResourceAmount& r : node.capacity) {
      int64_t units = r.milli / 1000;
      auto [it, inserted] = limits.largest.try_emplace(std::string(r.name), units);
      if (!inserted) it->second = std::max(it->second, units);
    }
    for (const kube::Taint& t : node.taints) {
      if (t.key != kube::kGpuTaintKey || t.effect != "NoSchedule") continue;
      if (std::find(limits.gpu_taint_values.begin(), limits.gpu_taint_values.end(), t.value) ==
          limits.gpu_taint_values.end()) {
        limits.gpu_taint_values.emplace_back(t.value);
      }
    }
  }
  return limits;
}

class WebhookServer::Impl {
 public:
  Impl(WebhookServerOptions options, core::Env& env) : options_(std::move(options)), env_(env) {}

  ~Impl() {
    // Create failed after the refresher started, or Run never ran: end the refresher's waits.
    if (refresher_.joinable()) {
      env_.RequestStop();
      refresher_.join();
    }
  }

  absl::Status Init() {
    if (options_.tls_cert.empty() || options_.tls_key.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert and --tls-key are required: the API server only calls webhooks over "
          "HTTPS (deploy/webhook/ shows cert-manager and a self-signed script)");
    }
    http::ServerOptions server_options;
    RETURN_IF_ERROR(ParseListen(options_.listen, server_options.host, server_options.port));
    // The certificate and key are loaded now (refusing to start without them) and re-read when
    // cert-manager (or the script) rotates them.
    server_options.tls = http::TlsOptions{.cert_file = options_.tls_cert,
                                          .key_file = options_.tls_key,
                                          .cert_name = "--tls-cert",
                                          .key_name = "--tls-key"};
    server_options.log = [](http::LogLevel level, const std::string& message) {
      if (level == http::LogLevel::kWarning) {
        spdlog::warn("webhook: {}", message);
      } else {
        spdlog::info("webhook: {}", message);
      }
    };
    server_options.max_payload_length = kMaxBody;
    // Headers and body go out in separate writes; without this, Nagle's algorithm and the API
    // server's delayed ACKs add 40 ms to every admission.
    server_options.tcp_nodelay = true;
    ASSIGN_OR_RETURN(server_, http::CreateServer(server_options));
    server_->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok"; });
    server_->Post("/mutate", [](const http::Request& req, http::Response& res) {
      Reply(Mutate(req.body), res);
    });
    server_->Post("/validate", [this](const http::Request& req, http::Response& res) {
      Reply(Validate(req.body, Limits()), res);
    });
    const bool defaults =
        options_.defaults.active_deadline_seconds || options_.defaults.ttl_seconds;
    if (defaults) {
      if (!options_.namespace_client) {
        return absl::InvalidArgumentError(
            "--default-active-deadline and --default-ttl need the API server to read namespace "
            "labels: run in the cluster (service account) or give --kubeconfig");
      }
      namespaces_ = std::make_unique<NamespaceOptInCache>(std::move(options_.namespace_client),
                                                          options_.namespace_ttl, env_);
    }
    // Without defaults configured, /defaults answers "allowed, unchanged" to every request.
    server_->Post("/defaults", [this](const http::Request& req, http::Response& res) {
      Reply(ApplyJobDefaults(req.body, options_.defaults,
                             [this](std::string_view ns) -> absl::StatusOr<bool> {
                               if (!namespaces_) return false;
                               return namespaces_->OptedIn(ns);
                             }),
            res);
    });
    if (!server_->Bind().ok()) {
      return absl::UnavailableError(StrCat("--listen ", options_.listen, ": cannot bind ",
                                           server_options.host, ":", server_options.port,
                                           " (in use, or no permission)"));
    }
    port_ = server_->port();
    if (options_.max_gpus_per_node) {
      limits_.largest[std::string(kube::kGpuResource)] = *options_.max_gpus_per_node;
    }
    if (options_.client) {
      RefreshOnce();  // a failure is logged; the webhook still starts and retries
      refresher_ = std::thread([this] { RefreshLoop(); });
    } else if (!options_.max_gpus_per_node) {
      spdlog::warn(
          "webhook: neither --max-gpus-per-node nor --nodes-from-api: requests larger than any "
          "node are not refused");
    }
    return absl::OkStatus();
  }

  absl::Status Run() {
    spdlog::info("webhook: serving /mutate, /validate, /defaults and /healthz on {} (port {})",
                 options_.listen, port_);
    auto seconds = [](const std::optional<int64_t>& s) {
      return s ? std::to_string(*s) + "s" : std::string("none");
    };
    spdlog::info(
        "webhook: GPUs per node at most {}; node capacities {}; defaults for opted-in "
        "namespaces: activeDeadlineSeconds {}, ttlSecondsAfterFinished {}",
        options_.max_gpus_per_node ? std::to_string(*options_.max_gpus_per_node)
        : options_.client          ? std::string("the largest node's, from the API server")
                                   : std::string("not limited"),
        options_.client
            ? "read from the API server every " + absl::FormatDuration(options_.refresh_interval)
            : std::string("not read"),
        seconds(options_.defaults.active_deadline_seconds), seconds(options_.defaults.ttl_seconds));
    server_->Start();
    std::thread stopper([this] {
      env_.SleepUntil(absl::InfiniteFuture());
      server_->Stop();
    });
    const bool stopped_on_request = server_->Wait();
    // A listener that failed ends the stopper's wait too: the command is over either way.
    env_.RequestStop();
    stopper.join();
    if (refresher_.joinable()) refresher_.join();
    if (!stopped_on_request) {
      return absl::UnavailableError("the webhook listener stopped unexpectedly");
    }
    return absl::OkStatus();
  }

  int port() const { return port_; }

 private:
  ClusterLimits Limits() {
    std::lock_guard<std::mutex> lock(mu_);
    return limits_;
  }

  void RefreshOnce() {
    kube::ApiQuery query;
    query.pods = false;
    absl::StatusOr<kube::ClusterSnapshot> nodes = kube::LoadFromApi(*options_.client, query);
    if (!nodes.ok()) {
      spdlog::warn("webhook: cannot refresh node capacities (keeping the last ones): {}",
                   nodes.status().message());
      return;
    }
    ClusterLimits fresh = LimitsFromNodes(*nodes);
    if (options_.max_gpus_per_node) {
      fresh.largest[std::string(kube::kGpuResource)] = *options_.max_gpus_per_node;
    }
    std::lock_guard<std::mutex> lock(mu_);
    limits_ = std::move(fresh);
  }

  void RefreshLoop() {
    while (env_.SleepFor(options_.refresh_interval)) RefreshOnce();
  }

  WebhookServerOptions options_;
  core::Env& env_;
  std::unique_ptr<http::HttpServer> server_;
  int port_ = -1;

  std::mutex mu_;
  ClusterLimits limits_;
  std::unique_ptr<NamespaceOptInCache> namespaces_;

  std::thread refresher_;
};

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Create(WebhookServerOptions options,
                                                                     core::Env& env) {
  auto impl = std::make_unique<Impl>(std::move(options), env);
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

WebhookServer::WebhookServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebhookServer::~WebhookServer() = default;
int WebhookServer::port() const { return impl_->port(); }
absl::Status WebhookServer::Run() { return impl_->Run(); }

absl::Status RunWebhook(WebhookServerOptions options, core::Env& env, std::ostream& announce) {
  ASSIGN_OR_RETURN(std::unique_ptr<WebhookServer> server,
                   WebhookServer::Create(std::move(options), env));
  announce << "gpunode webhook listening on port " << server->port() << std::endl;
  return server->Run();
}

}  // namespace gpunode::cluster
