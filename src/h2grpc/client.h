// A gRPC client for one unary call on a unix socket, over libnghttp2: connect, call, close. It
// is how the device plugin calls the kubelet's Register, on a connection of its own each time
// (as Go's gRPC dials), with no background threads.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "h2grpc/message_framing.h"

namespace gpunode::h2grpc {

// Calls `method_path` ("/package.Service/Method") with the serialized `request` and returns the
// serialized response, or the call's status: the server's grpc-status, UNAVAILABLE when the
// socket cannot be reached or the connection breaks, DEADLINE_EXCEEDED after `timeout`, and
// RESOURCE_EXHAUSTED for a response over `max_response_bytes` (gRPC's default 4 MiB unless raised).
absl::StatusOr<std::string> CallUnary(const std::string& socket_path, std::string_view method_path,
                                      std::string_view request, std::chrono::milliseconds timeout,
                                      size_t max_response_bytes = kMaxMessageBytes);

// The typed form: a response that does not parse is INTERNAL.
absl::Status CallUnary(const std::string& socket_path, std::string_view method_path,
                       const google::protobuf::MessageLite& request,
                       google::protobuf::MessageLite& response, std::chrono::milliseconds timeout,
                       size_t max_response_bytes = kMaxMessageBytes);

}  // namespace gpunode::h2grpc
