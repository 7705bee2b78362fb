// One resource's gRPC server on its unix socket in the kubelet's device-plugins directory.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "h2grpc/server.h"
#include "plugin/server/plugin_service.h"

namespace gpunode::plugin {

class PluginServer {
 public:
  PluginServer(std::shared_ptr<const RequestHandler> handler, health::HealthBoard& board,
               std::string socket_path);
  ~PluginServer();
  PluginServer(const PluginServer&) = delete;
  PluginServer& operator=(const PluginServer&) = delete;

  // Binds the socket (replacing a stale file) and serves; the kubelet may dial it from then on.
  absl::Status Start();
  // Ends the streams, shuts the server down and removes the socket. Idempotent.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }
  const RequestHandler& handler() const { return *handler_; }
  bool SocketExists() const;

 private:
  std::shared_ptr<const RequestHandler> handler_;
  health::HealthBoard& board_;
  std::string socket_path_;
  std::unique_ptr<PluginService> service_;
  std::unique_ptr<h2grpc::Server> server_;
};

}  // namespace gpunode::plugin
