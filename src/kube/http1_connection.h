// One client connection to the API server: TCP, optionally TLS through OpenSSL, non-blocking
// underneath so that every read and write honours a deadline. The TLS context (trust, client
// certificate) is built once per transport and shared by its connections.
//
// Errors are absl::Status with codes the transport reads: DeadlineExceeded when a deadline
// passed, PermissionDenied when the server's certificate was not trusted or not for the name,
// Unavailable for everything else (resolution, refused connection, reset, TLS failure).
//
// Thread-safety: none; one connection per thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kube/openssl_api.h"

namespace gpunode::kube {

// Trust and identity for TLS connections, from a cluster's access settings.
struct TlsSettings {
  std::string ca_pem;  // empty: the system trust store
  bool insecure_skip_verify = false;
  std::string client_cert_pem;  // leaf first, then its chain
  std::string client_key_pem;
};

class TlsContext {
 public:
  // Loads OpenSSL and builds the context; an error names the PEM that could not be used.
  static absl::StatusOr<std::shared_ptr<TlsContext>> Make(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  const OpensslApi& api() const { return api_; }
  SSL_CTX* ctx() const { return ctx_; }
  bool verifies() const { return verifies_; }

 private:
  TlsContext(const OpensslApi& api, SSL_CTX* ctx, bool verifies)
      : api_(api), ctx_(ctx), verifies_(verifies) {}
  const OpensslApi& api_;
  SSL_CTX* ctx_;
  bool verifies_;
};

class Http1Connection {
 public:
  // Connects to host:port (an IPv6 literal without brackets) by `deadline`; with `tls`, also
  // completes the handshake, sending `server_name` as SNI (unless it is an IP address) and
  // verifying the certificate for it when the context verifies.
  static absl::StatusOr<std::unique_ptr<Http1Connection>> Open(const std::string& host,
                                                               const std::string& port,
                                                               std::shared_ptr<TlsContext> tls,
                                                               const std::string& server_name,
                                                               absl::Time deadline);
  ~Http1Connection();
  Http1Connection(const Http1Connection&) = delete;
  Http1Connection& operator=(const Http1Connection&) = delete;

  absl::Status WriteAll(std::string_view data, absl::Time deadline);
  // Reads up to `size` bytes into `buffer`, waiting until `until` at most: the count read, 0 when
  // the peer closed the connection, DeadlineExceeded when `until` passed with nothing to read.
  absl::StatusOr<size_t> Read(char* buffer, size_t size, absl::Time until);

 private:
  Http1Connection(int fd, std::shared_ptr<TlsContext> tls, SSL* ssl)
      : fd_(fd), tls_(std::move(tls)), ssl_(ssl) {}
  // Waits for the socket to be readable (or writable) until `until`.
  absl::Status Wait(bool for_write, absl::Time until);
  // After a TLS call returned `rc`: OK to retry once the socket is ready (`for_write` tells which
  // way), or the error that ended it.
  absl::Status TlsRetry(int rc, bool& for_write, std::string_view what);

  int fd_;
  std::shared_ptr<TlsContext> tls_;
  SSL* ssl_;  // null for plain HTTP
};

}  // namespace gpunode::kube
