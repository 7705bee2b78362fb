// The DevicePlugin service of one resource: RequestHandler behind the kubelet's wire API, with
// ListAndWatch streams that send the full list again on every health change.
#pragma once

#include <atomic>
#include <memory>

#include "h2grpc/service.h"
#include "health/health_board.h"
#include "plugin/server/request_handler.h"

namespace gpunode::plugin {

class PluginService {
 public:
  PluginService(std::shared_ptr<const RequestHandler> handler, health::HealthBoard& board);

  // The method table, by the paths of v1beta1.DevicePlugin; this object must outlive its use.
  h2grpc::Service Methods();

  // Ends every ListAndWatch stream, so that the server can shut down.
  void Stop();

 private:
  absl::Status ListAndWatch(h2grpc::ServerStream& stream);

  std::shared_ptr<const RequestHandler> handler_;
  health::HealthBoard& board_;
  std::atomic<bool> stopping_{false};
};

}  // namespace gpunode::plugin
