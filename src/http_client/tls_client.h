// TLS for the node daemons' connections to the API server (http_client/http1_connection.h),
// behind one small interface with two libraries:
//
// - mbedTLS 2.28, TLS 1.2, linked into the binary. Used whenever the cluster's CA is given or
//   verification is off, which is always the case in a cluster (the service account's ca.crt).
//   The device plugin keeps its watch on the node's labels open for its whole life, so the TLS
//   library's resident size is part of every GPU node's idle cost: mbedTLS's is about 1 MiB,
//   OpenSSL's 5.6 MiB (docs/PERFORMANCE.md).
// - OpenSSL (libssl.so.3, loaded on first use), for what mbedTLS cannot do here: the system's
//   trust store (no CA given), certificates or keys mbedTLS cannot read, and an API server that
//   accepts TLS 1.3 only. The first two are decided when the context is made; the last when a
//   handshake is refused for its protocol version, after which the context uses OpenSSL for good.
//
// Both verify the server's certificate against the CA and for the name dialled: a DNS name
// against the certificate's DNS names, an IP address against its IP addresses only, as Go's
// crypto/tls (and so kubectl) does.
//
// Thread-safety: a TlsContext may be shared by connections on several threads; a TlsSession
// belongs to one thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace gpunode::http_client {

// Trust and identity for TLS connections, from a cluster's access settings.
struct TlsSettings {
  std::string ca_pem = {};  // empty: the system trust store
  bool insecure_skip_verify = false;
  std::string client_cert_pem = {};  // leaf first, then its chain
  std::string client_key_pem = {};
};

// What a session needs before a call that could not finish can be made again.
enum class TlsWait { kNone, kReadable, kWritable };

// One TLS client session over a connected, non-blocking socket it does not own. Each call either
// finishes (kNone) or says which way the socket must be ready before the same call is made again
// with the same arguments. Errors: PermissionDenied when the certificate is not trusted or not for
// the name, Unimplemented when the server accepts none of the protocol versions offered,
// Unavailable for everything else.
class TlsSession {
 public:
  virtual ~TlsSession() = default;
  virtual absl::StatusOr<TlsWait> Handshake() = 0;
  // Sets `written` (> 0) when it returns kNone.
  virtual absl::StatusOr<TlsWait> Write(std::string_view data, size_t& written) = 0;
  // Sets `read` when it returns kNone: 0 means the server closed the connection.
  virtual absl::StatusOr<TlsWait> Read(char* buffer, size_t size, size_t& read) = 0;
  // Sends close_notify if the socket takes it now; never waits.
  virtual void Close() = 0;
};

// The 4 or 16 bytes of an IPv4 or IPv6 address literal; empty when `name` is not one.
std::string IpAddressBytes(const std::string& name);

// One library's client configuration: trust, identity, protocol versions.
class TlsLibrary {
 public:
  virtual ~TlsLibrary() = default;
  // A session on `fd` for `server_name`: sent as SNI unless it is an IP address, and what the
  // certificate is verified for.
  virtual absl::StatusOr<std::unique_ptr<TlsSession>> NewSession(
      int fd, const std::string& server_name) const = 0;
  virtual std::string_view name() const = 0;
};

// Each library on its own (tests run both against the same servers). An error names the PEM that
// could not be used.
absl::StatusOr<std::shared_ptr<const TlsLibrary>> MakeMbedtlsLibrary(const TlsSettings& settings);
absl::StatusOr<std::shared_ptr<const TlsLibrary>> MakeOpensslLibrary(const TlsSettings& settings);

// The context a transport shares between its connections: the library chosen as the top of this
// file says, and the switch to OpenSSL when a server needs TLS 1.3.
class TlsContext {
 public:
  static absl::StatusOr<std::shared_ptr<TlsContext>> Make(const TlsSettings& settings);

  // The library new sessions use; a session keeps its own library alive.
  std::shared_ptr<const TlsLibrary> library() const;
  // After a handshake by `refused` ended with Unimplemented: OpenSSL from now on (its error if it
  // cannot be loaded). Does nothing if another connection switched already.
  absl::Status UseTls13(const TlsLibrary& refused);

 private:
  TlsContext(TlsSettings settings, std::shared_ptr<const TlsLibrary> library)
      : settings_(std::move(settings)), library_(std::move(library)) {}

  const TlsSettings settings_;
  mutable std::mutex mu_;
  std::shared_ptr<const TlsLibrary> library_;  // guarded by mu_
};

}  // namespace gpunode::http_client
