// One client connection to the API server: TCP, optionally TLS (http_client/tls_client.h),
// non-blocking underneath so that every read and write honours a deadline. The TLS context (trust,
// client certificate) is built once per transport and shared by its connections.
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
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/unique_fd.h"
#include "http_client/tls_client.h"

namespace gpunode::http_client {

class Http1Connection {
 public:
  // Connects to host:port (an IPv6 literal without brackets) by `deadline`; with `tls`, also
  // completes the handshake, sending `server_name` as SNI (unless it is an IP address) and
  // verifying the certificate for it when the context verifies. A server that refuses the
  // context's protocol versions is dialled again once the context has switched library.
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
  explicit Http1Connection(core::UniqueFd fd) : fd_(std::move(fd)) {}
  static absl::StatusOr<std::unique_ptr<Http1Connection>> OpenOnce(const std::string& host,
                                                                   const std::string& port,
                                                                   const TlsLibrary* tls,
                                                                   const std::string& server_name,
                                                                   absl::Time deadline);
  // Waits for the socket to be readable (or writable) until `until`.
  absl::Status Wait(bool for_write, absl::Time until);
  // Waits as a TLS call that could not finish asked.
  absl::Status Wait(TlsWait wait, absl::Time until) {
    return Wait(wait == TlsWait::kWritable, until);
  }

  core::UniqueFd fd_;
  std::unique_ptr<TlsSession> tls_;  // null for plain HTTP; declared after fd_, so it goes first
};

}  // namespace gpunode::http_client
