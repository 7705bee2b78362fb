// Process-wide logging setup: spdlog to stderr, so stdout stays for a command's own output.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "fmt/format.h"

namespace gpunode::core {

// Sets the default logger's level: trace, debug, info, warn, error or off.
absl::Status InitLogging(const std::string& level);

}  // namespace gpunode::core

// Debian's abseil has its own string_view (not std::string_view): let log lines format it, and
// Status messages with it, directly.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  template <typename FormatContext>
  auto format(absl::string_view text, FormatContext& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()),
                                                    ctx);
  }
};
