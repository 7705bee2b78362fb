// The DevicePlugin gRPC service of one resource: RequestHandler behind the kubelet's wire API,
// with ListAndWatch streams that send the full list again on every health change.
#pragma once

#include <atomic>
#include <memory>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plugin/health/health_board.h"
#include "plugin/server/request_handler.h"

namespace gpunode::plugin {

class PluginService final : public v1beta1::DevicePlugin::Service {
 public:
  PluginService(std::shared_ptr<const RequestHandler> handler, HealthBoard& board);

  // Ends every ListAndWatch stream, so that the server can shut down.
  void Stop();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  std::shared_ptr<const RequestHandler> handler_;
  HealthBoard& board_;
  std::atomic<bool> stopping_{false};
};

}  // namespace gpunode::plugin
