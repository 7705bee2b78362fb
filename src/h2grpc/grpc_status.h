// gRPC's status on the wire: the grpc-status and grpc-message trailers, and the status a client
// derives from an HTTP response that carries none.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace gpunode::h2grpc {

// grpc-message is percent-encoded: bytes outside printable ASCII, and '%', become %XX.
std::string PercentEncode(std::string_view message);
// Decodes what PercentEncode wrote; a malformed escape is kept as it is, as gRPC's do.
std::string PercentDecode(std::string_view message);

// The status from grpc-status and grpc-message values; an unparsable code is UNKNOWN.
absl::Status StatusFromTrailers(std::string_view grpc_status, std::string_view grpc_message);

// The status a gRPC client reports for an HTTP status other than 200 without grpc-status
// (gRPC's doc/http-grpc-status-mapping.md).
absl::Status StatusFromHttp(int http_status);

}  // namespace gpunode::h2grpc
