#include "metrics/pod_resources_client.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gpu/dra_devices.h"
#include "grpcpp/grpcpp.h"
#include "podresources/api.grpc.pb.h"

namespace gpunode::metrics {

struct PodResourcesClient::Stub {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> lister;
};

PodResourcesClient::PodResourcesClient(std::string socket_path)
    : socket_path_(std::move(socket_path)), stub_(std::make_unique<Stub>()) {
  grpc::ChannelArguments args;
  // The kubelet is local: retry a restarted kubelet quickly instead of gRPC's default backoff
  // of up to two minutes, so attribution comes back within a refresh or two.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // Answers grow with the number of pods; the kubelet's own limit is 16 MiB.
  args.SetMaxReceiveMessageSize(16 * 1024 * 1024);
  stub_->channel = grpc::CreateCustomChannel(absl::StrCat("unix://", socket_path_),
                                             grpc::InsecureChannelCredentials(), args);
  stub_->lister = v1::PodResourcesLister::NewStub(stub_->channel);
}

PodResourcesClient::~PodResourcesClient() = default;

absl::StatusOr<std::vector<ListedDevices>> PodResourcesClient::List(absl::Duration timeout) const {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  grpc::Status status = stub_->lister->List(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("PodResources List on ", socket_path_, ": ", status.error_message()));
  }
  std::vector<ListedDevices> out;
  for (const v1::PodResources& pod : response.pod_resources()) {
    for (const v1::ContainerResources& container : pod.containers()) {
      for (const v1::ContainerDevices& devices : container.devices()) {
        if (devices.device_ids().empty()) continue;
        out.push_back(ListedDevices{
            pod.namespace_(), pod.name(), container.name(),
            std::vector<std::string>(devices.device_ids().begin(), devices.device_ids().end()),
            std::nullopt});
      }
      for (const v1::DynamicResource& claim : container.dynamic_resources()) {
        for (const v1::ClaimResource& device : claim.claim_resources()) {
          if (device.driver_name() != gpu::kDriverName) continue;
          out.push_back(ListedDevices{
              pod.namespace_(),
              pod.name(),
              container.name(),
              {},
              DraClaimDevice{claim.claim_name(), claim.claim_namespace(), device.driver_name(),
                             device.pool_name(), device.device_name()}});
        }
      }
    }
  }
  return out;
}

}  // namespace gpunode::metrics
