#include "h2grpc/server.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/unique_fd.h"
#include "core/unix_socket.h"
#include "h2grpc/server_connection.h"
#include "spdlog/spdlog.h"

namespace gpunode::h2grpc {
namespace {

// The kubelet holds one connection per plugin socket; doctor and tests add a few.
constexpr size_t kMaxConnections = 32;
// How long Stop waits for a slow client to take the last statuses and the GOAWAY.
constexpr int kFlushTimeoutMs = 200;
// accept failing for want of descriptors or memory leaves the connection queued, so the listener
// stays readable: polling it again at once would spin the loop. It is left out of the poll set
// this long instead, while the connected clients are served as before.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

bool OutOfResources(int error) {
  return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

struct Client {
  core::UniqueFd fd;
  std::unique_ptr<ServerConnection> connection;
  std::string output;
};

// Writes what the socket takes now; false when the client is gone.
bool WriteSome(Client& client) {
  while (!client.output.empty()) {
    ssize_t n = send(client.fd.get(), client.output.data(), client.output.size(), MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    client.output.erase(0, static_cast<size_t>(n));
  }
  return true;
}

// Reads what the socket has; false when the client closed or failed.
bool ReadSome(Client& client) {
  char buffer[16384];
  for (;;) {
    ssize_t n = recv(client.fd.get(), buffer, sizeof buffer, 0);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    absl::Status st = client.connection->Receive(std::string_view(buffer, static_cast<size_t>(n)));
    if (!st.ok()) {
      spdlog::debug("closing a client connection: {}", st.message());
      client.connection->TakeOutput(client.output);
      WriteSome(client);
      return false;
    }
  }
}

}  // namespace

Server::Server(Service service) : service_(std::move(service)) {}

Server::~Server() { Stop(); }

absl::Status Server::Start(const std::string& socket_path) {
  absl::StatusOr<sockaddr_un> address = core::UnixAddress(socket_path);
  if (!address.ok()) return address.status();
  listen_fd_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_.valid() ||
      bind(listen_fd_.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0 ||
      listen(listen_fd_.get(), 16) != 0) {
    int error = errno;
    listen_fd_.Reset();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", socket_path, ": ", std::strerror(error)));
  }
  wake_fd_.Reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_.valid()) {
    // Without it neither streaming writes nor Stop could wake the loop.
    int error = errno;
    listen_fd_.Reset();
    return absl::UnavailableError(
        absl::StrCat("cannot serve ", socket_path, ": eventfd: ", std::strerror(error)));
  }
  stopping_ = false;
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void Server::Stop() {
  if (!loop_.joinable()) return;
  stopping_ = true;
  Wake();
  loop_.join();
  JoinFinishedWorkers(/*all=*/true);
  // Only now: the workers just joined wrote to wake_fd_.
  listen_fd_.Reset();
  wake_fd_.Reset();
}

void Server::Wake() {
  uint64_t one = 1;
  // A full counter already means a wake-up is pending.
  [[maybe_unused]] ssize_t n = write(wake_fd_.get(), &one, sizeof one);
}

void Server::RunOnWorker(std::function<void()> call) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard lock(workers_mutex_);
  workers_.push_back({std::thread([this, call = std::move(call), done] {
                        call();
                        *done = true;
                        Wake();  // so that the loop joins this thread now
                      }),
                      done});
}

void Server::JoinFinishedWorkers(bool all) {
  std::list<Worker> finished;
  {
    std::lock_guard lock(workers_mutex_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (all || *it->done) {
        finished.splice(finished.end(), workers_, it++);
      } else {
        ++it;
      }
    }
  }
  for (Worker& worker : finished) worker.thread.join();
}

void Server::Loop() {
  std::vector<Client> clients;
  auto wake = [this] { Wake(); };
  auto runner = [this](std::function<void()> call) { RunOnWorker(std::move(call)); };
  std::vector<pollfd> fds;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> accept_paused_until;
  bool accept_failing = false;  // warned once per episode, not every backoff
  while (!stopping_) {
    int timeout_ms = -1;
    if (accept_paused_until) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*accept_paused_until - Clock::now());
      if (left.count() > 0) {
        timeout_ms = static_cast<int>(left.count());
      } else {
        accept_paused_until.reset();
      }
    }
    // A negative descriptor is one poll skips.
    fds.assign(
        {{wake_fd_.get(), POLLIN, 0}, {accept_paused_until ? -1 : listen_fd_.get(), POLLIN, 0}});
    for (const Client& client : clients) {
      fds.push_back(
          {client.fd.get(), static_cast<short>(POLLIN | (client.output.empty() ? 0 : POLLOUT)), 0});
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("poll: {}", std::strerror(errno));
      break;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = read(wake_fd_.get(), &count, sizeof count);
    }
    if (stopping_) break;
    for (size_t i = 0; i < clients.size(); ++i) {
      Client& client = clients[i];
      short events = fds[i + 2].revents;
      bool alive = true;
      if (events & (POLLIN | POLLHUP | POLLERR)) alive = ReadSome(client);
      client.connection->Pump();
      client.connection->TakeOutput(client.output);
      alive = WriteSome(client) && alive && !client.connection->Finished();
      if (!alive) client.fd.Reset();
    }
    std::erase_if(clients, [](const Client& c) { return !c.fd.valid(); });
    if (fds[1].revents & POLLIN) {
      for (;;) {
        core::UniqueFd fd(
            accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.valid()) {
          if (OutOfResources(errno)) {
            if (!accept_failing) {
              spdlog::warn("cannot accept a connection: {}; retrying every {} ms",
                           std::strerror(errno), kAcceptBackoff.count());
            }
            accept_failing = true;
            accept_paused_until = Clock::now() + kAcceptBackoff;
          }
          break;
        }
        if (accept_failing) spdlog::info("accepting connections again");
        accept_failing = false;
        if (clients.size() >= kMaxConnections) {
          spdlog::warn("refusing a connection: {} clients are connected already", clients.size());
          // `fd` closes as it goes. Back to poll before the next accept: a client that reconnects
          // as fast as it is refused would otherwise keep this loop from reading the hang-ups
          // that free a slot.
          break;
        }
        Client client;
        client.fd = std::move(fd);
        client.connection = std::make_unique<ServerConnection>(service_, runner, wake);
        client.connection->TakeOutput(client.output);  // our SETTINGS
        WriteSome(client);
        clients.push_back(std::move(client));
      }
    }
    JoinFinishedWorkers(/*all=*/false);
  }
  // Streams end: handlers see cancelled() and return; their statuses go out with the GOAWAY.
  for (Client& client : clients) client.connection->Shutdown();
  JoinFinishedWorkers(/*all=*/true);
  for (Client& client : clients) {
    client.connection->Pump();
    client.connection->TakeOutput(client.output);
    pollfd fd{client.fd.get(), POLLOUT, 0};
    while (!client.output.empty() && WriteSome(client) && !client.output.empty() &&
           poll(&fd, 1, kFlushTimeoutMs) > 0) {
    }
    client.fd.Reset();
  }
}

}  // namespace gpunode::h2grpc
