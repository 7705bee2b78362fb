#include "metrics/pod_resources_client.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "gpu/dra_devices.h"
#include "h2grpc/client.h"
#include "podresources/api.pb.h"

namespace gpunode::metrics {
namespace {

constexpr char kListMethod[] = "/v1.PodResourcesLister/List";
// Answers grow with the number of pods; the kubelet's own limit is 16 MiB.
constexpr size_t kMaxListBytes = 16 * 1024 * 1024;

}  // namespace

PodResourcesClient::PodResourcesClient(std::string socket_path)
    : socket_path_(std::move(socket_path)) {}

absl::StatusOr<std::vector<ListedDevices>> PodResourcesClient::List(absl::Duration timeout) const {
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  absl::Status status = h2grpc::CallUnary(
      socket_path_, kListMethod, request, response,
      std::chrono::duration_cast<std::chrono::milliseconds>(absl::ToChronoMilliseconds(timeout)),
      kMaxListBytes);
  if (!status.ok()) {
    // A server's status may come without a message (gRPC C++ answers an unknown method with a
    // bare UNIMPLEMENTED): then the code is the message.
    return absl::UnavailableError(absl::StrCat(
        "PodResources List on ", socket_path_, ": ",
        status.message().empty() ? absl::StatusCodeToString(status.code()) : status.message()));
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
