#include "core/unix_socket.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/unique_fd.h"

namespace gpunode::core {

absl::StatusOr<sockaddr_un> UnixAddress(const std::string& path) {
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

bool UnixSocketAccepts(const std::string& path, int type) {
  absl::StatusOr<sockaddr_un> address = UnixAddress(path);
  if (!address.ok()) return false;
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) == 0;
}

}  // namespace gpunode::core
