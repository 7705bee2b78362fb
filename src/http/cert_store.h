// The certificate chain and key an HTTPS server presents, and the TLS settings it serves with:
// the pair is re-read when its files change (cert-manager rewrites a Secret's files in place
// through a symlink swap), so a rotation needs no restart. Part of libgpunode-http.so.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "http/http_server.h"

namespace gpunode::http {

class TlsMaterial;

// The description of the oldest error in OpenSSL's queue, which it then clears.
std::string OpenSslError();

class CertStore {
 public:
  CertStore(TlsOptions files, std::function<void(LogLevel, const std::string&)> log);
  ~CertStore();
  CertStore(const CertStore&) = delete;
  CertStore& operator=(const CertStore&) = delete;

  // Reads both files; kBadInput naming the file when they are unreadable or do not match.
  Result LoadNow();

  // TLS 1.2 or newer, no compression, the pair loaded last, and a callback that gives each
  // handshake the newest pair. The store must outlive the context.
  bool Configure(SSL_CTX& ctx);

 private:
  // Checked at most every 10 s, during handshakes; a half-written rotation keeps the old pair.
  std::shared_ptr<const TlsMaterial> Current();
  std::string Stamp() const;
  static int UseCurrent(SSL* ssl, void* store);

  const TlsOptions files_;
  const std::function<void(LogLevel, const std::string&)> log_;
  std::mutex mu_;
  std::shared_ptr<const TlsMaterial> current_;
  std::string stamp_;
  std::chrono::steady_clock::time_point checked_;
};

}  // namespace gpunode::http
