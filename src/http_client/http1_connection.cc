#include "http_client/http1_connection.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/io_deadline.h"
#include "core/sigpipe_block.h"
#include "core/status_macros.h"
#include "core/text.h"

namespace gpunode::http_client {

using core::StrCat;

namespace {

int PollTimeoutMs(absl::Time until) { return core::IoDeadline::At(until).PollTimeoutMs(); }

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Http1Connection>> Http1Connection::Open(
    const std::string& host, const std::string& port, std::shared_ptr<TlsContext> tls,
    const std::string& server_name, absl::Time deadline) {
  std::shared_ptr<const TlsLibrary> library = tls ? tls->library() : nullptr;
  absl::StatusOr<std::unique_ptr<Http1Connection>> connection =
      OpenOnce(host, port, library.get(), server_name, deadline);
  if (absl::IsUnimplemented(connection.status())) {
    if (absl::Status st = tls->UseTls13(*library); !st.ok()) {
      return absl::UnavailableError(StrCat(connection.status().message(), "; ", st.message()));
    }
    library = tls->library();
    connection = OpenOnce(host, port, library.get(), server_name, deadline);
  }
  return connection;
}

absl::StatusOr<std::unique_ptr<Http1Connection>> Http1Connection::OpenOnce(
    const std::string& host, const std::string& port, const TlsLibrary* tls,
    const std::string& server_name, absl::Time deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  core::UniqueFd fd;
  absl::Status last = absl::UnavailableError(StrCat("no address for ", host));
  for (addrinfo* a = found; a != nullptr && !fd.valid(); a = a->ai_next) {
    core::UniqueFd s(
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last = Errno("socket");
      continue;
    }
    if (connect(s.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = Errno(StrCat("connect to ", host, " port ", port));
      continue;
    }
    pollfd p{s.get(), POLLOUT, 0};
    int ready;
    while ((ready = poll(&p, 1, PollTimeoutMs(deadline))) < 0 && errno == EINTR) {
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (ready == 0) {
      last =
          absl::DeadlineExceededError(StrCat("connection to ", host, " port ", port, " timed out"));
    } else if (getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      errno = error;
      last = Errno(StrCat("connect to ", host, " port ", port));
    } else {
      fd = std::move(s);
    }
  }
  freeaddrinfo(found);
  if (!fd.valid()) return last;
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::unique_ptr<Http1Connection> connection(new Http1Connection(std::move(fd)));
  if (tls == nullptr) return connection;
  ASSIGN_OR_RETURN(connection->tls_, tls->NewSession(connection->fd_.get(), server_name));
  core::SigpipeBlock quiet;
  while (true) {
    ASSIGN_OR_RETURN(TlsWait wait, connection->tls_->Handshake());
    if (wait == TlsWait::kNone) return connection;
    if (absl::Status st = connection->Wait(wait, deadline); absl::IsDeadlineExceeded(st)) {
      return absl::DeadlineExceededError(
          StrCat("TLS handshake with ", host, " port ", port, " timed out"));
    } else if (!st.ok()) {
      return st;
    }
  }
}

Http1Connection::~Http1Connection() {
  if (tls_ != nullptr) {
    core::SigpipeBlock quiet;
    tls_->Close();  // one try: the socket is non-blocking and about to close
    tls_.reset();
  }
}

absl::Status Http1Connection::Wait(bool for_write, absl::Time until) {
  pollfd p{fd_.get(), static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  while (true) {
    int ready = poll(&p, 1, PollTimeoutMs(until));
    if (ready > 0) return absl::OkStatus();  // errors and hang-ups surface in the next call
    if (ready == 0) return absl::DeadlineExceededError("timed out");
    if (errno != EINTR) return Errno("poll");
  }
}

absl::Status Http1Connection::WriteAll(std::string_view data, absl::Time deadline) {
  core::SigpipeBlock quiet;
  while (!data.empty()) {
    if (tls_ == nullptr) {
      ssize_t n = send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("send");
      if (absl::Status st = Wait(true, deadline); !st.ok()) return st;
      continue;
    }
    size_t written = 0;
    ASSIGN_OR_RETURN(TlsWait wait, tls_->Write(data, written));
    if (wait == TlsWait::kNone) {
      data.remove_prefix(written);
      continue;
    }
    if (absl::Status st = Wait(wait, deadline); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> Http1Connection::Read(char* buffer, size_t size, absl::Time until) {
  core::SigpipeBlock quiet;
  while (true) {
    if (tls_ == nullptr) {
      ssize_t n = recv(fd_.get(), buffer, size, 0);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Errno("recv");
      if (absl::Status st = Wait(false, until); !st.ok()) return st;
      continue;
    }
    size_t read = 0;
    ASSIGN_OR_RETURN(TlsWait wait, tls_->Read(buffer, size, read));
    if (wait == TlsWait::kNone) return read;
    if (absl::Status st = Wait(wait, until); !st.ok()) return st;
  }
}

}  // namespace gpunode::http_client
