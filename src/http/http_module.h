// Creates the exporter's and the webhook's HTTP(S) servers: a plain HTTP one in the binary
// (http/plain_server.h), an HTTPS one through libgpunode-http.so, which is loaded then from next to
// the binary: linking cpp-httplib would map it and OpenSSL into every role, including the device
// plugin, which never serves HTTP, and the exporter, which serves plain HTTP.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "http/http_server.h"

namespace gpunode::http {

// The module's file name, and the environment variable that points at it instead (for programs
// that are not installed next to it, such as benchmarks in the build tree).
inline constexpr const char* kModuleFile = "libgpunode-http.so";
inline constexpr const char* kModuleEnvironment = "GPUNODE_HTTP_MODULE";

// Without options.tls, the plain server. With it, the module's: FailedPrecondition naming the file
// looked for when the module is missing or from another build; otherwise the server's own errors
// (bad TLS files, TLS setup) as ToStatus gives them.
absl::StatusOr<std::unique_ptr<HttpServer>> CreateServer(const ServerOptions& options);

// The absl::Status of a module's Result: kBadInput is InvalidArgument, kUnavailable Unavailable,
// kInternal Internal.
absl::Status ToStatus(const Result& result);

}  // namespace gpunode::http
