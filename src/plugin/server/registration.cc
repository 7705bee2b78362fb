#include "plugin/server/registration.h"

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "h2grpc/client.h"

namespace gpunode::plugin {

absl::Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                                 const std::string& resource_name,
                                 std::chrono::milliseconds timeout) {
  v1beta1::RegisterRequest request;
  request.set_version(kDevicePluginApiVersion);
  request.set_endpoint(endpoint);
  request.set_resource_name(resource_name);
  request.mutable_options()->set_pre_start_required(false);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty response;
  // A connection of its own each time, as Go's gRPC dials: nothing is left in reconnect backoff
  // by a kubelet that just restarted.
  absl::Status status = h2grpc::CallUnary(kubelet_socket, "/v1beta1.Registration/Register", request,
                                          response, timeout);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("registering ", resource_name, " with ",
                                               kubelet_socket, " failed: ", status.message()));
  }
  return absl::OkStatus();
}

}  // namespace gpunode::plugin
