// The exporter's --listen value: "[HOST]:PORT" as dcgm-exporter's --address takes it.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gpunode::metrics {

struct ListenAddress {
  std::string host;  // "0.0.0.0" when the value gives none
  int port = 0;
};

// ":9400", "0.0.0.0:9400", "127.0.0.1:0", "[::1]:9400", "localhost:9400". InvalidArgument naming
// the flag and the fix otherwise.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& text);

}  // namespace gpunode::metrics
