// The OpenSSL library of tls_client.h, through the table libssl.so.3 is loaded into
// (http_client/openssl_api.h).
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/text.h"
#include "http_client/openssl_api.h"
#include "http_client/tls_client.h"

namespace gpunode::http_client {

using core::StrCat;

namespace {

// Reads every certificate of a PEM text; the first error names `what`.
absl::StatusOr<std::vector<X509*>> ReadCertificates(const OpensslApi& ssl, const std::string& pem,
                                                    std::string_view what) {
  BIO* bio = ssl.bio_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return absl::ResourceExhaustedError("OpenSSL: out of memory");
  std::vector<X509*> certificates;
  while (X509* certificate = ssl.pem_read_x509(bio, nullptr, nullptr, nullptr)) {
    certificates.push_back(certificate);
  }
  ssl.err_clear_error();  // the end of the text reads as an error
  ssl.bio_free(bio);
  if (certificates.empty()) {
    return absl::InvalidArgumentError(StrCat(what, " holds no PEM certificate"));
  }
  return certificates;
}

class OpensslSession : public TlsSession {
 public:
  OpensslSession(std::shared_ptr<const TlsLibrary> library, const OpensslApi& api, SSL* ssl,
                 bool verifies, std::string server_name)
      : library_(std::move(library)),
        api_(api),
        ssl_(ssl),
        verifies_(verifies),
        server_name_(std::move(server_name)) {}
  ~OpensslSession() override {
    api_.ssl_free(ssl_);
    api_.err_clear_error();
  }

  absl::StatusOr<TlsWait> Handshake() override {
    errno = 0;
    api_.err_clear_error();  // SSL_get_error reads the thread's queue: start it empty
    int rc = api_.connect(ssl_);
    if (rc == 1) return TlsWait::kNone;
    long verify = api_.get_verify_result(ssl_);
    if (verifies_ && verify != X509_V_OK) {
      api_.err_clear_error();
      return absl::PermissionDeniedError(StrCat("TLS handshake with ", server_name_,
                                                ": certificate verify failed (",
                                                api_.verify_error_string(verify), ")"));
    }
    return Retry(rc, "TLS handshake");
  }

  absl::StatusOr<TlsWait> Write(std::string_view data, size_t& written) override {
    errno = 0;
    api_.err_clear_error();
    int n = api_.write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
    if (n > 0) {
      written = static_cast<size_t>(n);
      return TlsWait::kNone;
    }
    return Retry(n, "TLS write");
  }

  absl::StatusOr<TlsWait> Read(char* buffer, size_t size, size_t& read) override {
    errno = 0;
    api_.err_clear_error();
    int n = api_.read(ssl_, buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0 || api_.get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) {
      read = n > 0 ? static_cast<size_t>(n) : 0;
      return TlsWait::kNone;
    }
    return Retry(n, "TLS read");
  }

  void Close() override {
    api_.shutdown(ssl_);
    api_.err_clear_error();
  }

 private:
  // After a call returned `rc`: which way to wait, or the error that ended the session.
  absl::StatusOr<TlsWait> Retry(int rc, std::string_view what) {
    switch (api_.get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        return TlsWait::kReadable;
      case SSL_ERROR_WANT_WRITE:
        return TlsWait::kWritable;
      case SSL_ERROR_SYSCALL:
        api_.err_clear_error();
        if (errno != 0) return absl::UnavailableError(StrCat(what, ": ", std::strerror(errno)));
        return absl::UnavailableError(StrCat(what, ": the server closed the connection"));
      case SSL_ERROR_ZERO_RETURN:
        return absl::UnavailableError(StrCat(what, ": the server closed the connection"));
      default: {
        std::string detail = api_.LastError();
        return absl::UnavailableError(StrCat(what, ": ", detail.empty() ? "TLS error" : detail));
      }
    }
  }

  const std::shared_ptr<const TlsLibrary> library_;  // keeps api_ and its context alive
  const OpensslApi& api_;
  SSL* const ssl_;
  const bool verifies_;
  const std::string server_name_;
};

class OpensslLibrary : public TlsLibrary, public std::enable_shared_from_this<OpensslLibrary> {
 public:
  OpensslLibrary(std::unique_ptr<const OpensslApi> api, SSL_CTX* ctx, bool verifies)
      : api_(std::move(api)), ctx_(ctx), verifies_(verifies) {}
  ~OpensslLibrary() override { api_->ctx_free(ctx_); }

  absl::StatusOr<std::unique_ptr<TlsSession>> NewSession(
      int fd, const std::string& server_name) const override {
    SSL* ssl = api_->ssl_new(ctx_);
    if (ssl == nullptr) return absl::ResourceExhaustedError("OpenSSL: " + api_->LastError());
    auto session =
        std::make_unique<OpensslSession>(shared_from_this(), *api_, ssl, verifies_, server_name);
    api_->set_fd(ssl, fd);
    bool ip = !IpAddressBytes(server_name).empty();
    if (!ip) {
      api_->ssl_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                     const_cast<char*>(server_name.c_str()));
    }
    if (verifies_) {
      int set = ip ? api_->param_set1_ip_asc(api_->get0_param(ssl), server_name.c_str())
                   : api_->set1_host(ssl, server_name.c_str());
      if (set != 1) return absl::InvalidArgumentError(StrCat("bad server name ", server_name));
    }
    return session;
  }

  std::string_view name() const override { return "OpenSSL"; }

 private:
  const std::unique_ptr<const OpensslApi> api_;
  SSL_CTX* const ctx_;
  const bool verifies_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsLibrary>> MakeOpensslLibrary(const TlsSettings& settings) {
  absl::StatusOr<std::unique_ptr<const OpensslApi>> loaded = LoadOpenssl();
  if (!loaded.ok()) return loaded.status();
  const OpensslApi& ssl = **loaded;
  SSL_CTX* ctx = ssl.ctx_new(ssl.tls_client_method());
  if (ctx == nullptr) return absl::ResourceExhaustedError("OpenSSL: " + ssl.LastError());
  bool verifies = !settings.insecure_skip_verify;
  auto library = std::make_shared<OpensslLibrary>(*std::move(loaded), ctx, verifies);
  ssl.ctx_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  // A server that closes without close_notify ends the stream; the HTTP framing says whether the
  // response was complete.
  ssl.ctx_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  ssl.ctx_set_verify(ctx, verifies ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  if (verifies && settings.ca_pem.empty()) {
    if (ssl.ctx_set_default_verify_paths(ctx) != 1) {
      return absl::FailedPreconditionError("the system's CA certificates: " + ssl.LastError());
    }
  } else if (verifies) {
    absl::StatusOr<std::vector<X509*>> cas =
        ReadCertificates(ssl, settings.ca_pem, "the cluster's certificate authority");
    if (!cas.ok()) return cas.status();
    X509_STORE* store = ssl.ctx_get_cert_store(ctx);
    for (X509* ca : *cas) {
      ssl.store_add_cert(store, ca);  // takes a reference of its own
      ssl.x509_free(ca);
    }
    ssl.err_clear_error();  // a CA listed twice reads as an error
  }
  if (!settings.client_cert_pem.empty()) {
    absl::StatusOr<std::vector<X509*>> chain =
        ReadCertificates(ssl, settings.client_cert_pem, "the client certificate");
    if (!chain.ok()) return chain.status();
    bool used = ssl.ctx_use_certificate(ctx, chain->front()) == 1;
    ssl.x509_free(chain->front());
    for (size_t i = 1; i < chain->size(); ++i) {
      // add0: the context owns the certificate from here on.
      if (ssl.ctx_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 0, (*chain)[i]) != 1) ssl.x509_free((*chain)[i]);
    }
    if (!used) return absl::InvalidArgumentError("the client certificate: " + ssl.LastError());
    BIO* bio = ssl.bio_new_mem_buf(settings.client_key_pem.data(),
                                   static_cast<int>(settings.client_key_pem.size()));
    EVP_PKEY* key = bio ? ssl.pem_read_private_key(bio, nullptr, nullptr, nullptr) : nullptr;
    if (bio) ssl.bio_free(bio);
    if (key == nullptr) {
      ssl.err_clear_error();
      return absl::InvalidArgumentError("the client key holds no PEM private key");
    }
    bool key_used = ssl.ctx_use_private_key(ctx, key) == 1;
    ssl.pkey_free(key);
    if (!key_used || ssl.ctx_check_private_key(ctx) != 1) {
      return absl::InvalidArgumentError("the client key does not match the client certificate: " +
                                        ssl.LastError());
    }
  }
  return library;
}

}  // namespace gpunode::http_client
