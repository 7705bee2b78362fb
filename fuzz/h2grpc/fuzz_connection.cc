// Fuzzes a server connection with what a client may send. The first byte picks the shape:
// raw bytes; the client preface and raw frames after it; or a well-formed call (preface,
// SETTINGS, HEADERS for one of the device plugin's methods) whose request body is the rest of
// the input, so that the gRPC framing and the protobuf parsing behind it are reached at once.
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "deviceplugin/v1beta1/api.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "h2grpc/nghttp2_header.h"
#include "h2grpc/server_connection.h"

namespace gpunode::h2grpc {
namespace {

constexpr const char* kPaths[] = {
    "/v1beta1.DevicePlugin/Allocate", "/v1beta1.DevicePlugin/ListAndWatch",
    "/v1beta1.DevicePlugin/GetPreferredAllocation", "/v1beta1.DevicePlugin/Unknown"};

Service MakeService() {
  Service service;
  service.AddUnary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>(
      "/v1beta1.DevicePlugin/Allocate", [](const v1beta1::AllocateRequest& request) {
        v1beta1::AllocateResponse response;
        for (const auto& container : request.container_requests()) {
          auto& envs = *response.add_container_responses()->mutable_envs();
          for (const std::string& id : container.devices_ids()) envs[id] = id;
        }
        return response;
      });
  service.AddUnary<v1beta1::PreferredAllocationRequest, v1beta1::PreferredAllocationResponse>(
      "/v1beta1.DevicePlugin/GetPreferredAllocation",
      [](const v1beta1::PreferredAllocationRequest&)
          -> absl::StatusOr<v1beta1::PreferredAllocationResponse> {
        return absl::InvalidArgumentError("refused \xff%");
      });
  service.AddServerStreaming<v1beta1::Empty>("/v1beta1.DevicePlugin/ListAndWatch",
                                             [](const v1beta1::Empty&, ServerStream& stream) {
                                               v1beta1::ListAndWatchResponse response;
                                               response.add_devices()->set_id("GPU-0");
                                               stream.Write(response);
                                               stream.Write(response);
                                               return absl::OkStatus();
                                             });
  return service;
}

void AppendFrame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload,
                 std::string& out) {
  const size_t length = payload.size();
  out.push_back(static_cast<char>(length >> 16));
  out.push_back(static_cast<char>(length >> 8));
  out.push_back(static_cast<char>(length));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(stream >> shift));
  out.append(payload);
}

std::string RequestHeaders(const char* path) {
  nghttp2_nv headers[] = {Header(":method", "POST"),
                          Header(":scheme", "http"),
                          Header(":path", path),
                          Header(":authority", "localhost"),
                          Header("content-type", "application/grpc"),
                          Header("te", "trailers")};
  nghttp2_hd_deflater* deflater = nullptr;
  nghttp2_hd_deflate_new(&deflater, 4096);
  std::string block(nghttp2_hd_deflate_bound(deflater, headers, 6), '\0');
  ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(block.data()),
                                    block.size(), headers, 6);
  nghttp2_hd_deflate_del(deflater);
  block.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return block;
}

}  // namespace
}  // namespace gpunode::h2grpc

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::h2grpc;
  static const Service service = MakeService();
  if (size < 2) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::string input;
  const std::string_view preface = NGHTTP2_CLIENT_MAGIC;
  switch (data[0] % 3) {
    case 0:
      input.append(rest);
      break;
    case 1:
      input.append(preface);
      input.append(rest);
      break;
    default:
      input.append(preface);
      AppendFrame(NGHTTP2_SETTINGS, 0, 0, "", input);
      AppendFrame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, RequestHeaders(kPaths[data[1] % 4]),
                  input);
      AppendFrame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, rest.substr(0, 16384), input);
  }
  // Streaming handlers run at once on this thread: what they write goes out on the next Pump.
  ServerConnection connection(
      service, [](std::function<void()> call) { call(); }, [] {});
  std::string output;
  connection.TakeOutput(output);
  // Feed in two pieces, so that frames split across reads are exercised too.
  const size_t half = input.size() / 2;
  if (connection.Receive(std::string_view(input).substr(0, half)).ok()) {
    connection.Receive(std::string_view(input).substr(half)).IgnoreError();
  }
  connection.Pump();
  connection.TakeOutput(output);
  connection.Shutdown();
  connection.TakeOutput(output);
  return 0;
}
