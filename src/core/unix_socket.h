// Unix sockets by path: the sockaddr for a bind or connect, and whether anything accepts on one.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <string>

#include "absl/status/statusor.h"

namespace gpunode::core {

// The address of `path`; InvalidArgument naming it when it is too long for a sockaddr_un.
absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path);

// Whether a program accepts connections on the socket at `path`, for a socket of `type`
// (SOCK_STREAM for gRPC, SOCK_SEQPACKET for NVIDIA's MPS control daemon). A socket file left by a
// program that exited refuses them; a path that cannot be a socket address is false. A connect
// costs the listener nothing it has to answer.
bool UnixSocketAccepts(const std::string& path, int type = SOCK_STREAM);

}  // namespace gpunode::core
