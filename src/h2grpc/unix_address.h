// The sockaddr of a unix socket path, for the server's bind and the client's connect.
#pragma once

#include <sys/un.h>

#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace gpunode::h2grpc {

inline absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is longer than ",
                                                   sizeof address.sun_path - 1,
                                                   " bytes; use a shorter directory"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

}  // namespace gpunode::h2grpc
