#include "plugin/server/registration.h"

#include "absl/strings/str_cat.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace gpunode::plugin {

absl::Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                                 const std::string& resource_name,
                                 std::chrono::milliseconds timeout) {
  // A connection of its own, as Go's gRPC makes one per dial: C++ gRPC otherwise shares
  // subchannels process-wide, and one left in reconnect backoff by the kubelet that just
  // restarted would hold this registration back by a second or more.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::StrCat("unix:", kubelet_socket), grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<v1beta1::Registration::Stub> stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kDevicePluginApiVersion);
  request.set_endpoint(endpoint);
  request.set_resource_name(resource_name);
  request.mutable_options()->set_pre_start_required(false);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1beta1::Empty response;
  grpc::Status status = stub->Register(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("registering ", resource_name, " with ",
                                               kubelet_socket,
                                               " failed: ", status.error_message()));
  }
  return absl::OkStatus();
}

}  // namespace gpunode::plugin
