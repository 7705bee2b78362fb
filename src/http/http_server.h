// The HTTP(S) server of the exporter and the webhook, as an interface. HTTPS is implemented on
// cpp-httplib and OpenSSL in the module libgpunode-http.so, which only a server with TLS loads
// (http/http_module.h), so that no other role maps OpenSSL; plain HTTP is served by the binary
// itself (http/plain_server.h). Only standard C++ types cross the module's boundary: the module
// links neither abseil nor any gpunode library, which the dist binary holds as static copies of
// its own.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gpunode::http {

// Views into the server's buffers, valid while the handler runs.
struct Request {
  std::string_view method;
  std::string_view path;
  std::string_view body;
};

// Sends the next bytes of a streamed body; false once the client has gone.
using BodyWriter = std::function<bool(const char* data, size_t size)>;

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  // When set, the body is `content_length` bytes from the provider instead of `body`, so a body
  // kept elsewhere goes out without a copy. It is called with the offset and the length still to
  // send, writes any part of them, and is called again for the rest; false aborts the response.
  size_t content_length = 0;
  std::function<bool(size_t offset, size_t length, const BodyWriter& write)> provider;
};

using Handler = std::function<void(const Request&, Response&)>;

struct TlsOptions {
  std::string cert_file;  // PEM, leaf first, then the chain
  std::string key_file;   // PEM
  // How error messages name the two files (the flags that gave them, say).
  std::string cert_name = "certificate";
  std::string key_name = "key";
};

enum class LogLevel { kInfo, kWarning };

struct ServerOptions {
  std::string host;
  int port = 0;                     // 0 picks a free port; HttpServer::port() tells which
  size_t worker_threads = 0;        // 0: cpp-httplib's default
  size_t max_payload_length = 0;    // largest request body in bytes; 0: no limit
  size_t keep_alive_max_count = 0;  // requests per kept connection; 0: cpp-httplib's default
  int keep_alive_timeout_s = 0;     // 0: cpp-httplib's default
  // How long a request may take to arrive and a response to be taken; 0: cpp-httplib's 5 s.
  int read_timeout_s = 0;
  // Set on the listening socket, so accepted connections inherit it.
  bool tcp_nodelay = false;
  // HTTPS: TLS 1.2 or newer, no compression, and the certificate and key re-read (at most every
  // 10 s, during handshakes) when either file changes, so a rotation needs no restart.
  std::optional<TlsOptions> tls;
  // What happens outside a request (a certificate reload); unset: not reported.
  std::function<void(LogLevel, const std::string&)> log;
};

// What failed, in the terms of the binary's absl::Status codes.
enum class ErrorKind { kNone, kBadInput, kUnavailable, kInternal };

struct Result {
  ErrorKind error = ErrorKind::kNone;
  std::string message;
  bool ok() const { return error == ErrorKind::kNone; }
};

class HttpServer {
 public:
  virtual ~HttpServer() = default;

  // Routes by exact path; add them before Start.
  virtual void Get(const std::string& path, Handler handler) = 0;
  virtual void Post(const std::string& path, Handler handler) = 0;

  // Binds options.host:port. The socket never has SO_REUSEPORT, so a port another process holds
  // is an error here rather than a silently shared port. On failure the message is errno's
  // description, or empty when the system gave none.
  virtual Result Bind() = 0;
  virtual int port() const = 0;

  // Serves on a background thread; returns once connections are accepted.
  virtual void Start() = 0;
  // Thread-safe, and not lost when it comes before or during Start: Wait returns soon after.
  virtual void Stop() = 0;
  // Blocks until the server stops; false if the listener failed rather than being stopped.
  virtual bool Wait() = 0;
};

// The module's factory. The version in the name changes with any change to this header, so a
// module from another build is refused instead of misread.
inline constexpr const char* kCreateServerSymbol = "gpunode_http_create_server_v1";
// Returns a new server, or null with `result` saying why.
using CreateServerFunction = HttpServer* (*)(const ServerOptions& options, Result& result);

// Which interface a module was built against. The loader compares it with its own before it
// calls the factory: the version and the structs' sizes catch a module of another release or
// other compiler settings; the hash of this header (taken when the build is configured, as
// GPUNODE_HTTP_INTERFACE_HASH) catches a change to it that the version was not bumped for. Plain
// C types only, so that any module can be asked.
struct ModuleIdentity {
  unsigned interface_version;
  unsigned server_options_size;
  unsigned result_size;
  unsigned response_size;
  const char* interface_hash;  // hex SHA-256 of http/http_server.h
};
inline constexpr unsigned kInterfaceVersion = 1;
inline constexpr const char* kModuleIdentitySymbol = "gpunode_http_module_identity_v1";
using ModuleIdentityFunction = const ModuleIdentity* (*)();

}  // namespace gpunode::http
