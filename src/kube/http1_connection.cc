#include "kube/http1_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/sigpipe_block.h"
#include "core/text.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

int PollTimeoutMs(absl::Time until) {
  if (until == absl::InfiniteFuture()) return -1;
  double ms = std::ceil(absl::ToDoubleMilliseconds(until - absl::Now()));
  return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : static_cast<int>(ms);
}

bool IsIpAddress(const std::string& host) {
  in6_addr any;
  return inet_pton(AF_INET, host.c_str(), &any) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &any) == 1;
}

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(StrCat(what, ": ", std::strerror(errno)));
}

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

}  // namespace

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Make(const TlsSettings& settings) {
  absl::StatusOr<const OpensslApi*> loaded = LoadOpenssl();
  if (!loaded.ok()) return loaded.status();
  const OpensslApi& ssl = **loaded;
  SSL_CTX* ctx = ssl.ctx_new(ssl.tls_client_method());
  if (ctx == nullptr) return absl::ResourceExhaustedError("OpenSSL: " + ssl.LastError());
  bool verifies = !settings.insecure_skip_verify;
  std::shared_ptr<TlsContext> context(new TlsContext(ssl, ctx, verifies));
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
  return context;
}

TlsContext::~TlsContext() { api_.ctx_free(ctx_); }

absl::StatusOr<std::unique_ptr<Http1Connection>> Http1Connection::Open(
    const std::string& host, const std::string& port, std::shared_ptr<TlsContext> tls,
    const std::string& server_name, absl::Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  absl::Status last = absl::UnavailableError(StrCat("no address for ", host));
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    int s = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) {
      last = Errno("socket");
      continue;
    }
    if (connect(s, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = Errno(StrCat("connect to ", host, " port ", port));
      close(s);
      continue;
    }
    pollfd p{s, POLLOUT, 0};
    int ready;
    while ((ready = poll(&p, 1, PollTimeoutMs(deadline))) < 0 && errno == EINTR) {
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (ready == 0) {
      last =
          absl::DeadlineExceededError(StrCat("connection to ", host, " port ", port, " timed out"));
    } else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      errno = error;
      last = Errno(StrCat("connect to ", host, " port ", port));
    } else {
      fd = s;
      continue;
    }
    close(s);
  }
  freeaddrinfo(found);
  if (fd < 0) return last;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (tls == nullptr)
    return std::unique_ptr<Http1Connection>(new Http1Connection(fd, nullptr, nullptr));

  const OpensslApi& api = tls->api();
  SSL* ssl = api.ssl_new(tls->ctx());
  if (ssl == nullptr) {
    close(fd);
    return absl::ResourceExhaustedError("OpenSSL: " + api.LastError());
  }
  std::unique_ptr<Http1Connection> connection(new Http1Connection(fd, tls, ssl));
  api.set_fd(ssl, fd);
  bool ip = IsIpAddress(server_name);
  if (!ip) {
    api.ssl_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(server_name.c_str()));
  }
  if (tls->verifies()) {
    int set = ip ? api.param_set1_ip_asc(api.get0_param(ssl), server_name.c_str())
                 : api.set1_host(ssl, server_name.c_str());
    if (set != 1) return absl::InvalidArgumentError(StrCat("bad server name ", server_name));
  }
  core::SigpipeBlock quiet;
  while (true) {
    api.err_clear_error();  // SSL_get_error reads the thread's queue: start it empty
    int rc = api.connect(ssl);
    if (rc == 1) break;
    long verify = api.get_verify_result(ssl);
    if (tls->verifies() && verify != X509_V_OK) {
      api.err_clear_error();
      return absl::PermissionDeniedError(StrCat("TLS handshake with ", server_name,
                                                ": certificate verify failed (",
                                                api.verify_error_string(verify), ")"));
    }
    bool for_write = false;
    absl::Status retry = connection->TlsRetry(rc, for_write, "TLS handshake");
    if (retry.ok()) retry = connection->Wait(for_write, deadline);
    if (absl::IsDeadlineExceeded(retry)) {
      return absl::DeadlineExceededError(
          StrCat("TLS handshake with ", host, " port ", port, " timed out"));
    }
    if (!retry.ok()) return retry;
  }
  return connection;
}

Http1Connection::~Http1Connection() {
  if (ssl_ != nullptr) {
    core::SigpipeBlock quiet;
    tls_->api().shutdown(ssl_);  // one try: the socket is non-blocking and about to close
    tls_->api().ssl_free(ssl_);
    tls_->api().err_clear_error();
  }
  close(fd_);
}

absl::Status Http1Connection::Wait(bool for_write, absl::Time until) {
  pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  while (true) {
    int ready = poll(&p, 1, PollTimeoutMs(until));
    if (ready > 0) return absl::OkStatus();  // errors and hang-ups surface in the next call
    if (ready == 0) return absl::DeadlineExceededError("timed out");
    if (errno != EINTR) return Errno("poll");
  }
}

absl::Status Http1Connection::TlsRetry(int rc, bool& for_write, std::string_view what) {
  const OpensslApi& api = tls_->api();
  int error = api.get_error(ssl_, rc);
  switch (error) {
    case SSL_ERROR_WANT_READ:
      for_write = false;
      return absl::OkStatus();
    case SSL_ERROR_WANT_WRITE:
      for_write = true;
      return absl::OkStatus();
    case SSL_ERROR_SYSCALL:
      if (errno != 0) return Errno(what);
      api.err_clear_error();
      return absl::UnavailableError(StrCat(what, ": the server closed the connection"));
    case SSL_ERROR_ZERO_RETURN:
      return absl::UnavailableError(StrCat(what, ": the server closed the connection"));
    default: {
      std::string detail = api.LastError();
      return absl::UnavailableError(StrCat(what, ": ", detail.empty() ? "TLS error" : detail));
    }
  }
}

absl::Status Http1Connection::WriteAll(std::string_view data, absl::Time deadline) {
  core::SigpipeBlock quiet;
  while (!data.empty()) {
    if (ssl_ == nullptr) {
      ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("send");
      if (absl::Status st = Wait(true, deadline); !st.ok()) return st;
      continue;
    }
    errno = 0;
    tls_->api().err_clear_error();
    int n = tls_->api().write(ssl_, data.data(),
                              static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    bool for_write = true;
    if (absl::Status st = TlsRetry(n, for_write, "TLS write"); !st.ok()) return st;
    if (absl::Status st = Wait(for_write, deadline); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> Http1Connection::Read(char* buffer, size_t size, absl::Time until) {
  core::SigpipeBlock quiet;
  while (true) {
    if (ssl_ == nullptr) {
      ssize_t n = recv(fd_, buffer, size, 0);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("recv");
      if (absl::Status st = Wait(false, until); !st.ok()) return st;
      continue;
    }
    errno = 0;
    tls_->api().err_clear_error();
    int n = tls_->api().read(ssl_, buffer, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return static_cast<size_t>(n);
    if (tls_->api().get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) return 0;
    bool for_write = false;
    if (absl::Status st = TlsRetry(n, for_write, "TLS read"); !st.ok()) return st;
    if (absl::Status st = Wait(for_write, until); !st.ok()) return st;
  }
}

}  // namespace gpunode::kube
