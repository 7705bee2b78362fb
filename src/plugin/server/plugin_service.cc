#include "plugin/server/plugin_service.h"

#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

// How often an idle stream checks whether the kubelet went away; changes wake it at once.
constexpr std::chrono::milliseconds kStreamPoll{250};

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbers.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace

PluginService::PluginService(std::shared_ptr<const RequestHandler> handler, HealthBoard& board)
    : handler_(std::move(handler)), board_(board) {}

void PluginService::Stop() {
  stopping_ = true;
  board_.Interrupt();
}

grpc::Status PluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* response) {
  *response = handler_->Options();
  return grpc::Status::OK;
}

grpc::Status PluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  const std::string& resource = handler_->resource().name;
  spdlog::info("{}: kubelet opened ListAndWatch", resource);
  uint64_t sent = 0;
  while (!stopping_ && !context->IsCancelled()) {
    // Read the generation first: a change after it only causes one more (identical) send.
    uint64_t generation = board_.generation();
    if (generation == sent) {
      board_.WaitForChange(sent, kStreamPoll);
      continue;
    }
    if (!writer->Write(handler_->Devices())) break;
    sent = generation;
  }
  spdlog::info("{}: ListAndWatch ended", resource);
  return grpc::Status::OK;
}

grpc::Status PluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  absl::StatusOr<v1beta1::PreferredAllocationResponse> answer =
      handler_->PreferredAllocation(*request);
  if (!answer.ok()) {
    spdlog::warn("GetPreferredAllocation: {}", answer.status().message());
    return ToGrpc(answer.status());
  }
  *response = std::move(*answer);
  return grpc::Status::OK;
}

grpc::Status PluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                     v1beta1::AllocateResponse* response) {
  absl::StatusOr<v1beta1::AllocateResponse> answer = handler_->Allocate(*request);
  if (!answer.ok()) {
    spdlog::warn("Allocate: {}", answer.status().message());
    return ToGrpc(answer.status());
  }
  *response = std::move(*answer);
  return grpc::Status::OK;
}

grpc::Status PluginService::PreStartContainer(grpc::ServerContext*,
                                              const v1beta1::PreStartContainerRequest*,
                                              v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace gpunode::plugin
