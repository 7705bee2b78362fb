// A gRPC server on a unix socket, over libnghttp2: one thread polls the listener and every
// connection and runs the unary handlers; each server-streaming call gets a thread of its own.
// It serves what the kubelet calls on a device plugin, with a fraction of the memory and threads
// of gRPC's C++ server.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "core/unique_fd.h"
#include "h2grpc/service.h"

namespace gpunode::h2grpc {

class Server {
 public:
  explicit Server(Service service);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and listens on `socket_path` (which must not exist) and starts serving; clients may
  // connect as soon as it returns.
  absl::Status Start(const std::string& socket_path);
  // Cancels the streaming calls, waits for their handlers to return, sends their final statuses
  // and a GOAWAY, and closes every connection and the listener. Idempotent. The socket file is
  // left for the owner to remove.
  void Stop();

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void Loop();
  void Wake();
  void RunOnWorker(std::function<void()> call);
  void JoinFinishedWorkers(bool all);

  Service service_;
  core::UniqueFd listen_fd_;
  core::UniqueFd wake_fd_;
  std::thread loop_;
  std::atomic<bool> stopping_{false};
  std::mutex workers_mutex_;
  std::list<Worker> workers_;
};

}  // namespace gpunode::h2grpc
