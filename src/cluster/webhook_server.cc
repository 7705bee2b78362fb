#include "cluster/webhook_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "core/log.h"
#include "core/status_macros.h"
#include "httplib.h"
#include "kube/api_loader.h"
#include "kube/gpu_resources.h"
#include "kube/quantity.h"
#include "kube/text.h"
#include "spdlog/spdlog.h"

namespace gpunode::cluster {
namespace {

using kube::StrCat;

constexpr absl::Duration kCertCheckEvery = absl::Seconds(10);
constexpr size_t kMaxBody = 4 << 20;  // pods are far smaller; etcd stores at most 1.5 MiB

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// One certificate chain and key, read together so a rotation is never seen half-done.
class TlsMaterial {
 public:
  ~TlsMaterial() {
    X509_free(cert_);
    EVP_PKEY_free(key_);
    sk_X509_pop_free(chain_, X509_free);
  }

  static absl::StatusOr<std::shared_ptr<TlsMaterial>> Load(const std::string& cert_path,
                                                           const std::string& key_path) {
    auto m = std::shared_ptr<TlsMaterial>(new TlsMaterial());
    BIO* bio = BIO_new_file(cert_path.c_str(), "r");
    if (bio == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("--tls-cert ", cert_path, ": cannot open: ", OpenSslError()));
    }
    m->cert_ = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    m->chain_ = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      sk_X509_push(m->chain_, extra);
    }
    BIO_free(bio);
    ERR_clear_error();  // the loop ends on an expected "no start line"
    if (m->cert_ == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("--tls-cert ", cert_path, ": no PEM certificate in it"));
    }
    bio = BIO_new_file(key_path.c_str(), "r");
    if (bio == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("--tls-key ", key_path, ": cannot open: ", OpenSslError()));
    }
    m->key_ = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (m->key_ == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("--tls-key ", key_path, ": no PEM private key in it: ", OpenSslError()));
    }
    if (X509_check_private_key(m->cert_, m->key_) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          StrCat("--tls-key ", key_path, " does not belong to the certificate in ", cert_path));
    }
    return m;
  }

  bool Apply(SSL* ssl) const {
    return SSL_use_cert_and_key(ssl, cert_, key_, chain_, /*override=*/1) == 1;
  }
  bool Apply(SSL_CTX* ctx) const {
    return SSL_CTX_use_cert_and_key(ctx, cert_, key_, chain_, /*override=*/1) == 1;
  }

 private:
  TlsMaterial() = default;
  X509* cert_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
};

// Serves the newest certificate: checked at most every 10 s during handshakes, reloaded when the
// files change (cert-manager rewrites the Secret's files in place through a symlink swap).
class CertStore {
 public:
  CertStore(std::string cert_path, std::string key_path)
      : cert_path_(std::move(cert_path)), key_path_(std::move(key_path)) {}

  absl::Status LoadNow() {
    ASSIGN_OR_RETURN(std::shared_ptr<TlsMaterial> m, TlsMaterial::Load(cert_path_, key_path_));
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(m);
    stamp_ = Stamp();
    checked_ = absl::Now();
    return absl::OkStatus();
  }

  std::shared_ptr<const TlsMaterial> Current() {
    std::lock_guard<std::mutex> lock(mu_);
    absl::Time now = absl::Now();
    if (now - checked_ >= kCertCheckEvery) {
      checked_ = now;
      std::string stamp = Stamp();
      if (stamp != stamp_) {
        absl::StatusOr<std::shared_ptr<TlsMaterial>> m = TlsMaterial::Load(cert_path_, key_path_);
        if (m.ok()) {
          current_ = std::move(*m);
          stamp_ = stamp;
          spdlog::info("webhook: loaded the rotated certificate from {}", cert_path_);
        } else {
          // Half-written files during a rotation: keep serving the old pair, retry later.
          spdlog::warn("webhook: keeping the current certificate: {}", m.status().message());
        }
      }
    }
    return current_;
  }

 private:
  std::string Stamp() const {
    std::string out;
    for (const std::string& p : {cert_path_, key_path_}) {
      struct stat st {};
      if (::stat(p.c_str(), &st) == 0) {
        kube::StrAppend(&out, static_cast<int64_t>(st.st_mtim.tv_sec), ".",
                        static_cast<int64_t>(st.st_mtim.tv_nsec), "/",
                        static_cast<int64_t>(st.st_ino), ";");
      }
    }
    return out;
  }

  const std::string cert_path_;
  const std::string key_path_;
  std::mutex mu_;
  std::shared_ptr<const TlsMaterial> current_;
  std::string stamp_;
  absl::Time checked_ = absl::InfinitePast();
};

int UseCurrentCertificate(SSL* ssl, void* arg) {
  std::shared_ptr<const TlsMaterial> m = static_cast<CertStore*>(arg)->Current();
  return m && m->Apply(ssl) ? 1 : 0;
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
  explicit Impl(WebhookServerOptions options)
      : options_(std::move(options)), certs_(options_.tls_cert, options_.tls_key) {}

  ~Impl() { StopRefresher(); }

  absl::Status Init() {
    if (options_.tls_cert.empty() || options_.tls_key.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert and --tls-key are required: the API server only calls webhooks over "
          "HTTPS (deploy/webhook/ shows cert-manager and a self-signed script)");
    }
    RETURN_IF_ERROR(certs_.LoadNow());
    std::string host;
    int port = 0;
    RETURN_IF_ERROR(ParseListen(options_.listen, host, port));
    server_ = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION);
      std::shared_ptr<const TlsMaterial> m = certs_.Current();
      if (!m || !m->Apply(&ctx)) return false;
      SSL_CTX_set_cert_cb(&ctx, UseCurrentCertificate, &certs_);
      return true;
    });
    if (!server_->is_valid()) {
      return absl::InternalError(StrCat("cannot set up TLS: ", OpenSslError()));
    }
    server_->set_payload_max_length(kMaxBody);
    // Headers and body go out in separate writes; without this, Nagle's algorithm and the API
    // server's delayed ACKs add 40 ms to every admission.
    server_->set_tcp_nodelay(true);
    server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    server_->Post("/mutate", [](const httplib::Request& req, httplib::Response& res) {
      AdmissionReply reply = Mutate(req.body);
      res.status = reply.http_status;
      res.set_content(reply.body, reply.http_status == 200 ? "application/json" : "text/plain");
    });
    server_->Post("/validate", [this](const httplib::Request& req, httplib::Response& res) {
      AdmissionReply reply = Validate(req.body, Limits());
      res.status = reply.http_status;
      res.set_content(reply.body, reply.http_status == 200 ? "application/json" : "text/plain");
    });
    port_ = port == 0 ? server_->bind_to_any_port(host)
                      : (server_->bind_to_port(host, port) ? port : -1);
    if (port_ <= 0) {
      return absl::UnavailableError(StrCat("--listen ", options_.listen, ": cannot bind ", host,
                                           ":", port, " (in use, or no permission)"));
    }
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
    spdlog::info("webhook: serving /mutate, /validate and /healthz on {} (port {})",
                 options_.listen, port_);
    if (!server_->listen_after_bind()) {
      return absl::UnavailableError("the webhook listener stopped unexpectedly");
    }
    return absl::OkStatus();
  }

  void Stop() {
    server_->stop();
    StopRefresher();
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
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stopping_) {
      if (stop_cv_.wait_for(lock, absl::ToChronoSeconds(options_.refresh_interval),
                            [this] { return stopping_; })) {
        break;
      }
      lock.unlock();
      RefreshOnce();
      lock.lock();
    }
  }

  void StopRefresher() {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    if (refresher_.joinable()) refresher_.join();
  }

  WebhookServerOptions options_;
  CertStore certs_;
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = -1;

  std::mutex mu_;
  ClusterLimits limits_;

  std::thread refresher_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Create(WebhookServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

WebhookServer::WebhookServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebhookServer::~WebhookServer() = default;
int WebhookServer::port() const { return impl_->port(); }
absl::Status WebhookServer::Run() { return impl_->Run(); }
void WebhookServer::Stop() { impl_->Stop(); }

}  // namespace gpunode::cluster
