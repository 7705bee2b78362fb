#include "http/plain_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/io_deadline.h"
#include "core/unique_fd.h"
#include "http/request_head.h"

namespace gpunode::http {
namespace {

// cpp-httplib's defaults, which the module's servers have, so that both kinds behave alike.
constexpr size_t kDefaultWorkers = 8;
constexpr size_t kDefaultKeepAliveMaxCount = 5;
constexpr int kDefaultKeepAliveTimeoutS = 5;
constexpr int kDefaultReadTimeoutS = 5;
constexpr size_t kMaxHeadBytes = 8192;
// Accepted connections waiting for a worker; more are closed at once (each would otherwise hold a
// descriptor until a worker is free).
constexpr size_t kMaxPending = 128;
constexpr size_t kReadChunk = 16384;

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "";  // the reason phrase may be empty (RFC 9112, 4)
  }
}

enum class Ready { kReadable, kTimedOut, kStopped };

// Waits for `events` on `fd` until `deadline`, or until the server's stop event.
Ready WaitFor(int fd, short events, int stop_fd, const core::IoDeadline& deadline) {
  while (true) {
    pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(fds, 2, deadline.PollTimeoutMs());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) return Ready::kStopped;
    if (n == 0) return Ready::kTimedOut;
    return Ready::kReadable;  // the event, or an error or hang-up the next call reports
  }
}

class Connection {
 public:
  Connection(core::UniqueFd fd, int stop_fd, absl::Duration io_timeout)
      : fd_(std::move(fd)), stop_fd_(stop_fd), io_timeout_(io_timeout) {}

  std::string& buffer() { return buffer_; }

  // Waits up to `idle` for the next request's first byte (true when one came or is buffered).
  bool AwaitRequest(absl::Duration idle) {
    if (!buffer_.empty()) return true;
    return WaitFor(fd_.get(), POLLIN, stop_fd_, core::IoDeadline::After(idle)) == Ready::kReadable;
  }

  // Appends what the client sent next; false on end of stream, error, the deadline or a stop.
  bool ReadMore(const core::IoDeadline& deadline) {
    char chunk[kReadChunk];
    while (true) {
      ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
      if (n > 0) {
        buffer_.append(chunk, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (WaitFor(fd_.get(), POLLIN, stop_fd_, deadline) != Ready::kReadable) return false;
    }
  }

  // Sends all of `data`; each wait for room is bounded by the I/O timeout, so a client that
  // stops reading is dropped. `more`: a body follows (the kernel holds a short head for it).
  bool Send(std::string_view data, bool more = false) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL | (more ? MSG_MORE : 0));
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (WaitFor(fd_.get(), POLLOUT, stop_fd_, core::IoDeadline::After(io_timeout_)) !=
          Ready::kReadable) {
        return false;
      }
    }
    return true;
  }

 private:
  core::UniqueFd fd_;
  const int stop_fd_;
  const absl::Duration io_timeout_;
  std::string buffer_;
};

class PlainServer final : public HttpServer {
 public:
  PlainServer(const ServerOptions& options, core::UniqueFd stop_event)
      : options_(options),
        max_workers_(options.worker_threads > 0 ? options.worker_threads : kDefaultWorkers),
        keep_alive_max_(options.keep_alive_max_count > 0 ? options.keep_alive_max_count
                                                         : kDefaultKeepAliveMaxCount),
        keep_alive_timeout_s_(options.keep_alive_timeout_s > 0 ? options.keep_alive_timeout_s
                                                               : kDefaultKeepAliveTimeoutS),
        io_timeout_(absl::Seconds(options.read_timeout_s > 0 ? options.read_timeout_s
                                                             : kDefaultReadTimeoutS)),
        stop_event_(std::move(stop_event)) {}

  ~PlainServer() override {
    Stop();
    Wait();
  }

  void Get(const std::string& path, Handler handler) override {
    get_routes_[path] = std::move(handler);
  }
  void Post(const std::string& path, Handler handler) override {
    post_routes_[path] = std::move(handler);
  }

  Result Bind() override;
  int port() const override { return port_; }
  void Start() override {
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  void Stop() override {
    stopping_ = true;
    uint64_t one = 1;
    // The event stays readable, waking every poll of every thread, now and later.
    (void)!::write(stop_event_.get(), &one, sizeof one);
    std::lock_guard<std::mutex> lock(mutex_);
    work_.notify_all();
  }
  bool Wait() override;

 private:
  void AcceptLoop();
  void Enqueue(core::UniqueFd connection);
  void WorkerLoop();
  void Serve(Connection& connection);
  // `allow`: the methods a 405 names.
  bool Respond(Connection& connection, const Response& response, bool head_only, bool keep_alive,
               const std::string& allow = {});

  const ServerOptions options_;
  const size_t max_workers_;
  const size_t keep_alive_max_;
  const int keep_alive_timeout_s_;
  const absl::Duration io_timeout_;
  std::map<std::string, Handler> get_routes_;  // set before Start, read-only after
  std::map<std::string, Handler> post_routes_;
  core::UniqueFd listener_;
  core::UniqueFd stop_event_;  // an eventfd, written once by Stop
  std::atomic<bool> stopping_{false};
  int port_ = 0;
  std::thread acceptor_;
  bool listener_failed_ = false;  // written by the acceptor, read after joining it

  // Accepted connections and the workers serving them.
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<core::UniqueFd> pending_;  // guarded by mutex_
  std::vector<std::thread> workers_;    // guarded by mutex_; only the acceptor adds
  size_t idle_workers_ = 0;             // guarded by mutex_
};

Result PlainServer::Bind() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(options_.port);
  const char* node = options_.host.empty() ? nullptr : options_.host.c_str();
  if (int err = ::getaddrinfo(node, service.c_str(), &hints, &found); err != 0) {
    return {ErrorKind::kBadInput, ::gai_strerror(err)};
  }
  int last_errno = 0;
  for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
    core::UniqueFd socket(::socket(address->ai_family,
                                   address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                                   address->ai_protocol));
    if (!socket.valid()) {
      last_errno = errno;
      continue;
    }
    // SO_REUSEADDR for a restart while old connections linger; never SO_REUSEPORT, which would
    // share a port another process holds instead of failing.
    int yes = 1;
    ::setsockopt(socket.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(socket.get(), address->ai_addr, address->ai_addrlen) != 0 ||
        ::listen(socket.get(), SOMAXCONN) != 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&bound), &length);
    port_ = bound.ss_family == AF_INET6
                ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    listener_ = std::move(socket);
    break;
  }
  ::freeaddrinfo(found);
  if (listener_.valid()) return {};
  return {ErrorKind::kUnavailable, last_errno != 0 ? std::strerror(last_errno) : ""};
}

bool PlainServer::Wait() {
  if (acceptor_.joinable()) acceptor_.join();
  // The acceptor has ended, so no worker is added any more.
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    workers.swap(workers_);
  }
  for (std::thread& worker : workers) worker.join();
  return !listener_failed_;
}

void PlainServer::AcceptLoop() {
  while (!stopping_) {
    Ready ready = WaitFor(listener_.get(), POLLIN, stop_event_.get(), core::IoDeadline::Never());
    if (ready != Ready::kReadable) break;
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED ||
          errno == EPROTO) {
        continue;
      }
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory for now: the pending connection stays queued in the
        // kernel; try again after a pause rather than spinning on it.
        pollfd stop = {stop_event_.get(), POLLIN, 0};
        ::poll(&stop, 1, 100);
        continue;
      }
      listener_failed_ = true;
      break;
    }
    core::UniqueFd connection(fd);
    if (options_.tcp_nodelay) {
      int yes = 1;
      ::setsockopt(connection.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    }
    Enqueue(std::move(connection));
  }
  // A failed listener ends the workers too, as a stop does.
  if (!stopping_) Stop();
}

void PlainServer::Enqueue(core::UniqueFd connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pending_.size() >= kMaxPending) return;  // closed as `connection` goes
  pending_.push_back(std::move(connection));
  if (pending_.size() > idle_workers_ && workers_.size() < max_workers_) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  work_.notify_one();
}

void PlainServer::WorkerLoop() {
  while (true) {
    core::UniqueFd fd;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++idle_workers_;
      work_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      --idle_workers_;
      if (stopping_) return;  // pending connections close with the deque
      fd = std::move(pending_.front());
      pending_.pop_front();
    }
    Connection connection(std::move(fd), stop_event_.get(), io_timeout_);
    Serve(connection);
  }
}

void PlainServer::Serve(Connection& connection) {
  std::string& buffer = connection.buffer();
  for (size_t served = 0; !stopping_; ++served) {
    if (!connection.AwaitRequest(absl::Seconds(keep_alive_timeout_s_))) return;
    // The whole request, from its first byte, within the I/O timeout: a client trickling bytes
    // cannot hold a worker.
    const core::IoDeadline deadline = core::IoDeadline::After(io_timeout_);
    HeadResult parsed;
    while ((parsed = ParseRequestHead(buffer, kMaxHeadBytes)).outcome == HeadOutcome::kIncomplete) {
      if (!connection.ReadMore(deadline)) return;
    }
    auto refuse = [&](int status, std::string_view why) {
      Response response;
      response.status = status;
      response.body = absl::StrCat(Reason(status), ": ", std::string(why), "\n");
      Respond(connection, response, false, false);
    };
    if (parsed.outcome == HeadOutcome::kTooLarge) {
      return refuse(431, absl::StrCat("the request's head is over ", kMaxHeadBytes, " bytes"));
    }
    if (parsed.outcome == HeadOutcome::kBad) return refuse(400, std::string(parsed.problem));

    // Copies: reading the body below may move the buffer the head's views point into.
    const RequestHead head = parsed.head;
    const std::string method(head.method);
    const std::string path(head.path);
    const bool head_only = method == "HEAD";
    const std::map<std::string, Handler>* routes = nullptr;
    if (method == "GET" || head_only) routes = &get_routes_;
    if (method == "POST") routes = &post_routes_;
    auto route = routes != nullptr ? routes->find(path) : get_routes_.cend();
    if (routes == nullptr || route == routes->end()) {
      // The body, if any, is not read: the connection closes after the answer.
      std::vector<std::string> allowed;
      if (get_routes_.contains(path)) allowed = {"GET", "HEAD"};
      if (post_routes_.contains(path)) allowed.push_back("POST");
      if (allowed.empty()) return refuse(404, absl::StrCat("no ", path, " here"));
      Response response;
      response.status = 405;
      response.body =
          absl::StrCat("Method Not Allowed: ", path, " takes ", absl::StrJoin(allowed, ", "), "\n");
      Respond(connection, response, head_only, false, absl::StrJoin(allowed, ", "));
      return;
    }
    if (head.chunked)
      return refuse(501, "chunked request bodies are not taken; send Content-Length");
    const size_t body_length = head.content_length.value_or(0);
    if (options_.max_payload_length > 0 && body_length > options_.max_payload_length) {
      return refuse(413, absl::StrCat("the body is over ", options_.max_payload_length, " bytes"));
    }
    if (body_length > 0 && head.expect_continue && head.minor_version >= 1 &&
        buffer.size() == head.head_bytes && !connection.Send("HTTP/1.1 100 Continue\r\n\r\n")) {
      return;
    }
    while (buffer.size() < head.head_bytes + body_length) {
      if (!connection.ReadMore(deadline)) return;
    }

    Request request{method, path, std::string_view(buffer).substr(head.head_bytes, body_length)};
    Response response;
    try {
      route->second(request, response);
    } catch (const std::exception& e) {
      response = Response{};
      response.status = 500;
      response.body = absl::StrCat("Internal Server Error: ", e.what(), "\n");
    }
    const bool keep_alive =
        !stopping_ && served + 1 < keep_alive_max_ &&
        (head.minor_version >= 1 ? !head.connection_close : head.connection_keep_alive);
    if (!Respond(connection, response, head_only, keep_alive) || !keep_alive) {
      return;
    }
    buffer.erase(0, head.head_bytes + body_length);
  }
}

bool PlainServer::Respond(Connection& connection, const Response& response, bool head_only,
                          bool keep_alive, const std::string& allow) {
  const bool provided = static_cast<bool>(response.provider);
  const size_t length = provided ? response.content_length : response.body.size();
  // HTTP/1.1 to a 1.0 client too: a server names the highest version it speaks (RFC 9110, 6.2).
  std::string head = absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status),
                                  "\r\nContent-Type: ", response.content_type,
                                  "\r\nContent-Length: ", length, "\r\n");
  if (!allow.empty()) absl::StrAppend(&head, "Allow: ", allow, "\r\n");
  if (keep_alive) {
    absl::StrAppend(&head, "Connection: keep-alive\r\nKeep-Alive: timeout=", keep_alive_timeout_s_,
                    "\r\n\r\n");
  } else {
    absl::StrAppend(&head, "Connection: close\r\n\r\n");
  }
  if (head_only || length == 0) return connection.Send(head);
  if (!provided) {
    // One write for a short answer; a long one goes as its own write after the head.
    if (length <= kReadChunk) return connection.Send(absl::StrCat(head, response.body));
    return connection.Send(head, true) && connection.Send(response.body);
  }
  if (!connection.Send(head, true)) return false;
  size_t offset = 0;
  BodyWriter write = [&](const char* data, size_t size) {
    size = std::min(size, length - offset);
    if (!connection.Send(std::string_view(data, size))) return false;
    offset += size;
    return true;
  };
  while (offset < length) {
    const size_t before = offset;
    // A provider that sends nothing would be called forever.
    if (!response.provider(offset, length - offset, write) || offset == before) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<HttpServer> NewPlainServer(const ServerOptions& options, Result& result) {
  if (options.tls) {
    result = {ErrorKind::kInternal, "the plain HTTP server does not serve TLS"};
    return nullptr;
  }
  core::UniqueFd stop_event(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_event.valid()) {
    result = {ErrorKind::kInternal, absl::StrCat("eventfd: ", std::strerror(errno))};
    return nullptr;
  }
  result = {};
  return std::make_unique<PlainServer>(options, std::move(stop_event));
}

}  // namespace gpunode::http
