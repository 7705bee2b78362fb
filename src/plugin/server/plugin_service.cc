#include "plugin/server/plugin_service.h"

#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

// Logs a refused request the way the kubelet will report it, and passes the status on.
template <class Response>
absl::StatusOr<Response> Logged(const char* method, absl::StatusOr<Response> answer) {
  if (!answer.ok()) spdlog::warn("{}: {}", method, answer.status().message());
  return answer;
}

}  // namespace

PluginService::PluginService(std::shared_ptr<const RequestHandler> handler,
                             health::HealthBoard& board)
    : handler_(std::move(handler)), board_(board) {}

void PluginService::Stop() {
  stopping_ = true;
  board_.Interrupt();
}

h2grpc::Service PluginService::Methods() {
  h2grpc::Service methods;
  methods.AddUnary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
      "/v1beta1.DevicePlugin/GetDevicePluginOptions",
      [this](const v1beta1::Empty&) { return handler_->Options(); });
  methods.AddServerStreaming<v1beta1::Empty>(
      "/v1beta1.DevicePlugin/ListAndWatch",
      [this](const v1beta1::Empty&, h2grpc::ServerStream& stream) { return ListAndWatch(stream); });
  methods.AddUnary<v1beta1::PreferredAllocationRequest, v1beta1::PreferredAllocationResponse>(
      "/v1beta1.DevicePlugin/GetPreferredAllocation",
      [this](const v1beta1::PreferredAllocationRequest& request) {
        return Logged("GetPreferredAllocation", handler_->PreferredAllocation(request));
      });
  methods.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      "/v1beta1.DevicePlugin/Allocate", [this](const v1beta1::AllocateRequest& request) {
        return Logged("Allocate", handler_->Allocate(request));
      });
  methods.AddUnary<v1beta1::PreStartContainerRequest, v1beta1::PreStartContainerResponse>(
      "/v1beta1.DevicePlugin/PreStartContainer", [](const v1beta1::PreStartContainerRequest&) {
        return v1beta1::PreStartContainerResponse();
      });
  return methods;
}

absl::Status PluginService::ListAndWatch(h2grpc::ServerStream& stream) {
  const std::string& resource = handler_->resource().name;
  spdlog::info("{}: kubelet opened ListAndWatch", resource);
  // A kubelet that cancels or goes away wakes the wait below at once, as a health change does.
  stream.SetOnCancel([this] { board_.Interrupt(); });
  auto over = [&] { return stopping_.load() || stream.cancelled(); };
  uint64_t sent = 0;
  while (!over()) {
    // Read the generation first: a change after it only causes one more (identical) send.
    uint64_t generation = board_.generation();
    if (generation == sent) {
      board_.WaitForChange(sent, over);
      continue;
    }
    if (!stream.Write(handler_->Devices())) break;
    sent = generation;
  }
  stream.SetOnCancel(nullptr);
  spdlog::info("{}: ListAndWatch ended", resource);
  return absl::OkStatus();
}

}  // namespace gpunode::plugin
