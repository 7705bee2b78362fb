#include "http_client/tls_client.h"

#include <arpa/inet.h>

#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::http_client {

std::string IpAddressBytes(const std::string& name) {
  unsigned char bytes[sizeof(in6_addr)];
  if (inet_pton(AF_INET, name.c_str(), bytes) == 1) return std::string(bytes, bytes + 4);
  if (inet_pton(AF_INET6, name.c_str(), bytes) == 1) return std::string(bytes, bytes + 16);
  return "";
}

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Make(const TlsSettings& settings) {
  bool system_trust = !settings.insecure_skip_verify && settings.ca_pem.empty();
  if (!system_trust) {
    absl::StatusOr<std::shared_ptr<const TlsLibrary>> mbedtls = MakeMbedtlsLibrary(settings);
    if (mbedtls.ok()) {
      return std::shared_ptr<TlsContext>(new TlsContext(settings, *std::move(mbedtls)));
    }
    // OpenSSL reads more kinds of keys and certificates; when it cannot either, its error is the
    // one reported.
    spdlog::debug("mbedTLS cannot use the cluster's TLS settings ({}); trying OpenSSL",
                  mbedtls.status().message());
  }
  absl::StatusOr<std::shared_ptr<const TlsLibrary>> openssl = MakeOpensslLibrary(settings);
  if (!openssl.ok()) return openssl.status();
  return std::shared_ptr<TlsContext>(new TlsContext(settings, *std::move(openssl)));
}

std::shared_ptr<const TlsLibrary> TlsContext::library() const {
  std::lock_guard<std::mutex> lock(mu_);
  return library_;
}

absl::Status TlsContext::UseTls13(const TlsLibrary& refused) {
  std::lock_guard<std::mutex> lock(mu_);
  if (library_.get() != &refused) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const TlsLibrary>> openssl = MakeOpensslLibrary(settings_);
  if (!openssl.ok()) return openssl.status();
  spdlog::info("the API server refused TLS 1.2; its connections use OpenSSL (TLS 1.3) from now on");
  library_ = *std::move(openssl);
  return absl::OkStatus();
}

}  // namespace gpunode::http_client
