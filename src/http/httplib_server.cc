// libgpunode-http.so: the HttpServer on cpp-httplib (with OpenSSL for HTTPS), and the module's one
// exported function.
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "http/cert_store.h"
#include "http/http_server.h"
#include "httplib.h"

namespace gpunode::http {
namespace {

// cpp-httplib matches routes as regular expressions; ours are exact paths.
std::string ExactPattern(const std::string& path) {
  constexpr std::string_view kSpecial = "\\^$.|?*+()[]{}";
  std::string out;
  for (char c : path) {
    if (kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

httplib::Server::Handler Adapt(Handler handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    Request request{req.method, req.path, req.body};
    Response response;
    handler(request, response);
    res.status = response.status;
    if (response.provider) {
      res.set_content_provider(response.content_length, response.content_type,
                               [provider = std::move(response.provider)](
                                   size_t offset, size_t length, httplib::DataSink& sink) {
                                 return provider(offset, length, sink.write);
                               });
      return;
    }
    res.body = std::move(response.body);
    res.set_header("Content-Type", response.content_type);
  };
}

class HttplibServer final : public HttpServer {
 public:
  explicit HttplibServer(const ServerOptions& options) : options_(options) {}

  ~HttplibServer() override {
    if (server_ != nullptr) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  Result Init() {
    if (options_.tls) {
      certs_ = std::make_unique<CertStore>(*options_.tls, options_.log);
      if (Result loaded = certs_->LoadNow(); !loaded.ok()) return loaded;
      server_ = std::make_unique<httplib::SSLServer>(
          [this](SSL_CTX& ctx) { return certs_->Configure(ctx); });
      if (!server_->is_valid()) {
        return {ErrorKind::kInternal, "cannot set up TLS: " + OpenSslError()};
      }
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    // cpp-httplib's default also sets SO_REUSEPORT, which would let a second server bind the same
    // port silently; a port in use must be an error.
    server_->set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_->set_tcp_nodelay(options_.tcp_nodelay);
    if (size_t workers = options_.worker_threads; workers > 0) {
      server_->new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    }
    if (options_.max_payload_length > 0) {
      server_->set_payload_max_length(options_.max_payload_length);
    }
    if (options_.keep_alive_max_count > 0) {
      server_->set_keep_alive_max_count(options_.keep_alive_max_count);
    }
    if (options_.keep_alive_timeout_s > 0) {
      server_->set_keep_alive_timeout(options_.keep_alive_timeout_s);
    }
    if (options_.read_timeout_s > 0) {
      server_->set_read_timeout(options_.read_timeout_s, 0);
      server_->set_write_timeout(options_.read_timeout_s, 0);
    }
    return {};
  }

  void Get(const std::string& path, Handler handler) override {
    server_->Get(ExactPattern(path), Adapt(std::move(handler)));
  }
  void Post(const std::string& path, Handler handler) override {
    server_->Post(ExactPattern(path), Adapt(std::move(handler)));
  }

  Result Bind() override {
    errno = 0;
    if (options_.port == 0) {
      port_ = std::max(server_->bind_to_any_port(options_.host), 0);
    } else if (server_->bind_to_port(options_.host, options_.port)) {
      port_ = options_.port;
    }
    if (port_ > 0) return {};
    int err = errno;
    return {ErrorKind::kUnavailable, err != 0 ? std::strerror(err) : ""};
  }

  int port() const override { return port_; }

  void Start() override {
    thread_ = std::thread([this] {
      listened_ = server_->listen_after_bind();
      done_ = true;
    });
    // cpp-httplib's stop() only takes effect once the accept loop runs: wait for it, and repeat a
    // Stop that came earlier.
    for (int i = 0; i < 2000 && !server_->is_running() && !done_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (stop_requested_) server_->stop();
  }

  void Stop() override {
    stop_requested_ = true;
    server_->stop();
  }

  bool Wait() override {
    if (thread_.joinable()) thread_.join();
    return listened_;
  }

 private:
  const ServerOptions options_;
  std::unique_ptr<CertStore> certs_;  // before server_, whose TLS context calls into it
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  bool listened_ = false;  // read after joining thread_
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_requested_{false};
};

}  // namespace
}  // namespace gpunode::http

// Named as kCreateServerSymbol says. Exceptions stay on this side: the caller expects a Result.
extern "C" __attribute__((visibility("default"))) gpunode::http::HttpServer*
gpunode_http_create_server_v1(const gpunode::http::ServerOptions& options,
                              gpunode::http::Result& result) {
  using gpunode::http::ErrorKind;
  try {
    auto server = std::make_unique<gpunode::http::HttplibServer>(options);
    result = server->Init();
    return result.ok() ? server.release() : nullptr;
  } catch (const std::exception& e) {
    result = {ErrorKind::kInternal, std::string("cannot create the HTTP server: ") + e.what()};
    return nullptr;
  }
}

// Named as kModuleIdentitySymbol says: the interface this module was built against.
extern "C" __attribute__((visibility("default"))) const gpunode::http::ModuleIdentity*
gpunode_http_module_identity_v1() {
  static const gpunode::http::ModuleIdentity identity = {
      gpunode::http::kInterfaceVersion, sizeof(gpunode::http::ServerOptions),
      sizeof(gpunode::http::Result), sizeof(gpunode::http::Response), GPUNODE_HTTP_INTERFACE_HASH};
  return &identity;
}
