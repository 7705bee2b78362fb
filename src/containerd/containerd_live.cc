#include "containerd/containerd_live.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/io_deadline.h"
#include "core/json_field.h"
#include "core/status_macros.h"
#include "cri/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace gpunode::containerd {
namespace {

absl::Status FromGrpc(const grpc::Status& status, const std::string& socket,
                      const char* call = "RuntimeService/Status") {
  auto code = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                  ? absl::StatusCode::kUnavailable
                  : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat("unix://", socket, ": CRI ", call, ": ",
                                         status.error_message(), " (is containerd running?)"));
}

// gRPC's unix:PATH takes a relative path too (a relative --host-root gives one); in unix://PATH
// the first component of a relative path would be read as an authority, which unix refuses.
std::shared_ptr<grpc::Channel> Channel(const std::string& socket) {
  return grpc::CreateChannel(absl::StrCat("unix:", socket), grpc::InsecureChannelCredentials());
}

std::unique_ptr<::runtime::v1::RuntimeService::Stub> Connect(const std::string& socket) {
  return ::runtime::v1::RuntimeService::NewStub(Channel(socket));
}

std::unique_ptr<::runtime::v1::ImageService::Stub> ConnectImages(const std::string& socket) {
  return ::runtime::v1::ImageService::NewStub(Channel(socket));
}

}  // namespace

absl::Status ParseCriConfig(const std::string& config_json, CriRuntimeStatus& status) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError("CRI Status info[\"config\"] is not a JSON object");
  }
  // containerd 1.x and 2.x both write the CRI config under "containerd" with these camelCase keys.
  const nlohmann::json& containerd = config.contains("containerd") ? config["containerd"] : config;
  status.default_runtime = core::JsonString(containerd, "defaultRuntimeName");
  auto runtimes = containerd.find("runtimes");
  if (runtimes == containerd.end() || !runtimes->is_object()) return absl::OkStatus();
  for (auto& [name, runtime] : runtimes->items()) {
    CriHandler handler{.name = name, .runtime_type = core::JsonString(runtime, "runtimeType")};
    if (auto options = runtime.find("options"); options != runtime.end() && options->is_object()) {
      handler.options = *options;
    }
    status.handlers.push_back(std::move(handler));
  }
  std::sort(status.handlers.begin(), status.handlers.end(),
            [](const CriHandler& a, const CriHandler& b) { return a.name < b.name; });
  return absl::OkStatus();
}

absl::StatusOr<CriVersion> QueryCriVersion(const std::string& socket,
                                           std::chrono::milliseconds timeout) {
  std::unique_ptr<::runtime::v1::RuntimeService::Stub> stub = Connect(socket);
  grpc::ClientContext context;
  context.set_deadline(core::IoDeadline::After(absl::FromChrono(timeout)).ForGrpc());
  ::runtime::v1::VersionRequest request;
  request.set_version("v1");
  ::runtime::v1::VersionResponse response;
  grpc::Status rpc = stub->Version(&context, request, &response);
  if (!rpc.ok()) return FromGrpc(rpc, socket, "RuntimeService/Version");
  return CriVersion{response.runtime_name(), response.runtime_version()};
}

absl::StatusOr<CriRuntimeStatus> QueryCriStatus(const std::string& socket,
                                                std::chrono::milliseconds timeout) {
  std::unique_ptr<::runtime::v1::RuntimeService::Stub> stub = Connect(socket);
  grpc::ClientContext context;
  context.set_deadline(core::IoDeadline::After(absl::FromChrono(timeout)).ForGrpc());
  ::runtime::v1::StatusRequest request;
  request.set_verbose(true);
  ::runtime::v1::StatusResponse response;
  grpc::Status rpc = stub->Status(&context, request, &response);
  if (!rpc.ok()) return FromGrpc(rpc, socket);

  CriRuntimeStatus status;
  for (const ::runtime::v1::RuntimeCondition& condition : response.status().conditions()) {
    status.conditions.push_back(
        {condition.type(), condition.status(), condition.reason(), condition.message()});
  }
  for (const ::runtime::v1::RuntimeHandler& handler : response.runtime_handlers()) {
    status.reported_handlers.push_back(handler.name());
  }
  if (auto it = response.info().find("config"); it != response.info().end()) {
    RETURN_IF_ERROR(ParseCriConfig(it->second, status));
  }
  // A runtime that lists its handlers but writes its config in a shape we do not read still
  // says which handlers it loaded; the default one is reported with an empty name.
  for (const std::string& name : status.reported_handlers) {
    if (name.empty() || FindHandler(status, name) != nullptr) continue;
    CriHandler handler;
    handler.name = name;
    status.handlers.push_back(std::move(handler));
  }
  return status;
}

absl::StatusOr<std::vector<CriImage>> QueryCriImages(const std::string& socket,
                                                     std::chrono::milliseconds timeout) {
  std::unique_ptr<::runtime::v1::ImageService::Stub> stub = ConnectImages(socket);
  grpc::ClientContext context;
  context.set_deadline(core::IoDeadline::After(absl::FromChrono(timeout)).ForGrpc());
  ::runtime::v1::ListImagesResponse response;
  grpc::Status rpc = stub->ListImages(&context, ::runtime::v1::ListImagesRequest(), &response);
  if (!rpc.ok()) return FromGrpc(rpc, socket, "ImageService/ListImages");
  std::vector<CriImage> images;
  images.reserve(response.images_size());
  for (const ::runtime::v1::Image& image : response.images()) {
    images.push_back({.id = image.id(),
                      .tags = {image.repo_tags().begin(), image.repo_tags().end()},
                      .digests = {image.repo_digests().begin(), image.repo_digests().end()},
                      .size_bytes = image.size(),
                      .pinned = image.pinned()});
  }
  return images;
}

absl::StatusOr<std::vector<CriImageFilesystem>> QueryCriImageFilesystems(
    const std::string& socket, std::chrono::milliseconds timeout) {
  std::unique_ptr<::runtime::v1::ImageService::Stub> stub = ConnectImages(socket);
  grpc::ClientContext context;
  context.set_deadline(core::IoDeadline::After(absl::FromChrono(timeout)).ForGrpc());
  ::runtime::v1::ImageFsInfoResponse response;
  grpc::Status rpc = stub->ImageFsInfo(&context, ::runtime::v1::ImageFsInfoRequest(), &response);
  if (!rpc.ok()) return FromGrpc(rpc, socket, "ImageService/ImageFsInfo");
  std::vector<CriImageFilesystem> filesystems;
  for (const ::runtime::v1::FilesystemUsage& usage : response.image_filesystems()) {
    filesystems.push_back({usage.fs_id().mountpoint(), usage.used_bytes().value()});
  }
  if (filesystems.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "unix://", socket, ": CRI ImageService/ImageFsInfo names no image filesystem"));
  }
  return filesystems;
}

const CriHandler* FindHandler(const CriRuntimeStatus& status, const std::string& name) {
  for (const CriHandler& handler : status.handlers) {
    if (handler.name == name) return &handler;
  }
  return nullptr;
}

}  // namespace gpunode::containerd
