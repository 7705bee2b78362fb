// The mbedTLS library of tls_client.h (mbedTLS 2.28, TLS 1.2).
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "core/text.h"
#include "http_client/tls_client.h"
#include "mbedtls/asn1.h"
#include "mbedtls/ctr_drbg.h"
#include "mbedtls/entropy.h"
#include "mbedtls/error.h"
#include "mbedtls/net_sockets.h"
#include "mbedtls/pk.h"
#include "mbedtls/ssl.h"
#include "mbedtls/x509_crt.h"

namespace gpunode::http_client {

using core::StrCat;

namespace {

std::string ErrorText(int code) {
  char text[160];
  mbedtls_strerror(code, text, sizeof text);
  return text;
}

// mbedTLS parses PEM only with its terminating NUL counted in the length.
const unsigned char* PemBytes(const std::string& pem) {
  return reinterpret_cast<const unsigned char*>(pem.c_str());
}

// Reads a PEM certificate chain; every certificate in it must parse, or OpenSSL is asked instead
// (tls_client.cc), so that trust never depends on which library read the file.
absl::Status ReadCertificates(mbedtls_x509_crt& chain, const std::string& pem,
                              std::string_view what) {
  int rc = mbedtls_x509_crt_parse(&chain, PemBytes(pem), pem.size() + 1);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        StrCat(what, ": ", rc > 0 ? "a certificate mbedTLS cannot read" : ErrorText(rc)));
  }
  return absl::OkStatus();
}

class MbedtlsLibrary;

class MbedtlsSession : public TlsSession {
 public:
  MbedtlsSession(std::shared_ptr<const MbedtlsLibrary> library, int fd, std::string server_name)
      : library_(std::move(library)), fd_(fd), server_name_(std::move(server_name)) {
    mbedtls_ssl_init(&ssl_);
  }
  ~MbedtlsSession() override { mbedtls_ssl_free(&ssl_); }
  MbedtlsSession(const MbedtlsSession&) = delete;
  MbedtlsSession& operator=(const MbedtlsSession&) = delete;

  // Binds the session to the library's configuration and the socket; `this` is the socket
  // callbacks' and the verify callback's context, so the session must not move afterwards.
  absl::Status Setup(const mbedtls_ssl_config& config, bool verifies);

  absl::StatusOr<TlsWait> Handshake() override {
    int rc = mbedtls_ssl_handshake(&ssl_);
    if (rc == 0) return TlsWait::kNone;
    if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
      char reason[512];
      mbedtls_x509_crt_verify_info(reason, sizeof reason, "", mbedtls_ssl_get_verify_result(&ssl_));
      std::string first = reason;
      first = first.substr(0, first.find('\n'));
      return absl::PermissionDeniedError(
          StrCat("TLS handshake with ", server_name_, ": certificate verify failed (", first, ")"));
    }
    // A server that only speaks newer protocols answers TLS 1.2's hello with this alert.
    if (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE && ssl_.in_msg != nullptr &&
        ssl_.in_msg[1] == MBEDTLS_SSL_ALERT_MSG_PROTOCOL_VERSION) {
      return absl::UnimplementedError(
          StrCat("TLS handshake with ", server_name_, ": the server refused TLS 1.2"));
    }
    return Retry(rc, "TLS handshake");
  }

  absl::StatusOr<TlsWait> Write(std::string_view data, size_t& written) override {
    int n = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(data.data()),
                              std::min<size_t>(data.size(), 1 << 30));
    if (n > 0) {
      written = static_cast<size_t>(n);
      return TlsWait::kNone;
    }
    return Retry(n, "TLS write");
  }

  absl::StatusOr<TlsWait> Read(char* buffer, size_t size, size_t& read) override {
    int n = mbedtls_ssl_read(&ssl_, reinterpret_cast<unsigned char*>(buffer),
                             std::min<size_t>(size, 1 << 30));
    // A server that closes without close_notify ends the stream too; the HTTP framing says
    // whether the response was complete.
    if (n >= 0 || n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == MBEDTLS_ERR_SSL_CONN_EOF) {
      read = n > 0 ? static_cast<size_t>(n) : 0;
      return TlsWait::kNone;
    }
    return Retry(n, "TLS read");
  }

  void Close() override { mbedtls_ssl_close_notify(&ssl_); }

 private:
  // The socket callbacks: non-blocking, and never raising SIGPIPE.
  static int Send(void* self, const unsigned char* data, size_t size) {
    auto* session = static_cast<MbedtlsSession*>(self);
    ssize_t n = send(session->fd_, data, size, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return MBEDTLS_ERR_SSL_WANT_WRITE;
    }
    session->socket_errno_ = errno;
    return MBEDTLS_ERR_NET_SEND_FAILED;
  }
  static int Receive(void* self, unsigned char* buffer, size_t size) {
    auto* session = static_cast<MbedtlsSession*>(self);
    ssize_t n = recv(session->fd_, buffer, size, 0);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return MBEDTLS_ERR_SSL_WANT_READ;
    }
    session->socket_errno_ = errno;
    return MBEDTLS_ERR_NET_RECV_FAILED;
  }
  // mbedTLS 2.28 checks DNS names only: an IP address is checked here against the leaf
  // certificate's iPAddress names, as OpenSSL and Go do.
  static int VerifyIp(void* self, mbedtls_x509_crt* certificate, int depth, uint32_t* flags) {
    if (depth != 0) return 0;
    const std::string& ip = static_cast<MbedtlsSession*>(self)->ip_;
    constexpr int kIpAddressTag = MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7;
    for (const mbedtls_x509_sequence* name = &certificate->subject_alt_names; name != nullptr;
         name = name->next) {
      if (name->buf.tag == kIpAddressTag && name->buf.len == ip.size() &&
          std::memcmp(name->buf.p, ip.data(), ip.size()) == 0) {
        return 0;
      }
    }
    *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
    return 0;
  }

  absl::StatusOr<TlsWait> Retry(int rc, std::string_view what) {
    switch (rc) {
      case MBEDTLS_ERR_SSL_WANT_READ:
        return TlsWait::kReadable;
      case MBEDTLS_ERR_SSL_WANT_WRITE:
        return TlsWait::kWritable;
      case MBEDTLS_ERR_NET_SEND_FAILED:
      case MBEDTLS_ERR_NET_RECV_FAILED:
        return absl::UnavailableError(StrCat(what, ": ", std::strerror(socket_errno_)));
      case MBEDTLS_ERR_SSL_CONN_EOF:
      case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
        return absl::UnavailableError(StrCat(what, ": the server closed the connection"));
      default:
        return absl::UnavailableError(StrCat(what, ": ", ErrorText(rc)));
    }
  }

  const std::shared_ptr<const MbedtlsLibrary> library_;  // owns the configuration ssl_ uses
  const int fd_;
  const std::string server_name_;
  std::string ip_;  // the server name's address bytes, when it is an IP address
  int socket_errno_ = 0;
  mbedtls_ssl_context ssl_;
};

class MbedtlsLibrary : public TlsLibrary, public std::enable_shared_from_this<MbedtlsLibrary> {
 public:
  MbedtlsLibrary() {
    mbedtls_entropy_init(&entropy_);
    mbedtls_ctr_drbg_init(&random_);
    mbedtls_x509_crt_init(&cas_);
    mbedtls_x509_crt_init(&client_chain_);
    mbedtls_pk_init(&client_key_);
    mbedtls_ssl_config_init(&config_);
  }
  ~MbedtlsLibrary() override {
    mbedtls_ssl_config_free(&config_);
    mbedtls_pk_free(&client_key_);
    mbedtls_x509_crt_free(&client_chain_);
    mbedtls_x509_crt_free(&cas_);
    mbedtls_ctr_drbg_free(&random_);
    mbedtls_entropy_free(&entropy_);
  }
  MbedtlsLibrary(const MbedtlsLibrary&) = delete;
  MbedtlsLibrary& operator=(const MbedtlsLibrary&) = delete;

  absl::Status Configure(const TlsSettings& settings) {
    verifies_ = !settings.insecure_skip_verify;
    static constexpr unsigned char kPersonalisation[] = "gpunode";
    if (int rc = mbedtls_ctr_drbg_seed(&random_, mbedtls_entropy_func, &entropy_, kPersonalisation,
                                       sizeof kPersonalisation - 1);
        rc != 0) {
      return absl::UnavailableError("mbedTLS: seeding the random generator: " + ErrorText(rc));
    }
    if (int rc =
            mbedtls_ssl_config_defaults(&config_, MBEDTLS_SSL_IS_CLIENT,
                                        MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
        rc != 0) {
      return absl::UnavailableError("mbedTLS: " + ErrorText(rc));
    }
    mbedtls_ssl_conf_min_version(&config_, MBEDTLS_SSL_MAJOR_VERSION_3,
                                 MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_rng(&config_, mbedtls_ctr_drbg_random, &random_);
    mbedtls_ssl_conf_authmode(&config_,
                              verifies_ ? MBEDTLS_SSL_VERIFY_REQUIRED : MBEDTLS_SSL_VERIFY_NONE);
    if (verifies_) {
      if (settings.ca_pem.empty()) {
        return absl::UnimplementedError("mbedTLS has no access to the system's CA certificates");
      }
      if (absl::Status st =
              ReadCertificates(cas_, settings.ca_pem, "the cluster's certificate authority");
          !st.ok()) {
        return st;
      }
      mbedtls_ssl_conf_ca_chain(&config_, &cas_, nullptr);
    }
    if (!settings.client_cert_pem.empty()) {
      if (absl::Status st =
              ReadCertificates(client_chain_, settings.client_cert_pem, "the client certificate");
          !st.ok()) {
        return st;
      }
      if (int rc = mbedtls_pk_parse_key(&client_key_, PemBytes(settings.client_key_pem),
                                        settings.client_key_pem.size() + 1, nullptr, 0);
          rc != 0) {
        return absl::InvalidArgumentError("the client key: " + ErrorText(rc));
      }
      if (mbedtls_pk_check_pair(&client_chain_.pk, &client_key_) != 0) {
        return absl::InvalidArgumentError("the client key does not match the client certificate");
      }
      if (int rc = mbedtls_ssl_conf_own_cert(&config_, &client_chain_, &client_key_); rc != 0) {
        return absl::InvalidArgumentError("the client certificate: " + ErrorText(rc));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<TlsSession>> NewSession(
      int fd, const std::string& server_name) const override {
    auto session = std::make_unique<MbedtlsSession>(shared_from_this(), fd, server_name);
    if (absl::Status st = session->Setup(config_, verifies_); !st.ok()) return st;
    return session;
  }

  std::string_view name() const override { return "mbedTLS"; }

 private:
  bool verifies_ = true;
  mbedtls_entropy_context entropy_;
  mbedtls_ctr_drbg_context random_;  // locked by mbedTLS itself (MBEDTLS_THREADING_C)
  mbedtls_x509_crt cas_;
  mbedtls_x509_crt client_chain_;
  mbedtls_pk_context client_key_;
  mbedtls_ssl_config config_;
};

absl::Status MbedtlsSession::Setup(const mbedtls_ssl_config& config, bool verifies) {
  if (int rc = mbedtls_ssl_setup(&ssl_, &config); rc != 0) {
    return absl::ResourceExhaustedError("mbedTLS: " + ErrorText(rc));
  }
  ip_ = IpAddressBytes(server_name_);
  // An IP address is not sent as SNI (RFC 6066) and is checked by VerifyIp; a DNS name is both.
  if (ip_.empty()) {
    if (int rc = mbedtls_ssl_set_hostname(&ssl_, server_name_.c_str()); rc != 0) {
      return absl::InvalidArgumentError(StrCat("bad server name ", server_name_));
    }
  } else if (verifies) {
    mbedtls_ssl_set_verify(&ssl_, VerifyIp, this);
  }
  mbedtls_ssl_set_bio(&ssl_, this, Send, Receive, nullptr);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsLibrary>> MakeMbedtlsLibrary(const TlsSettings& settings) {
  auto library = std::make_shared<MbedtlsLibrary>();
  if (absl::Status st = library->Configure(settings); !st.ok()) return st;
  return library;
}

}  // namespace gpunode::http_client
