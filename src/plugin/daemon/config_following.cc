#include "plugin/daemon/config_following.h"

#include "core/log.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {

std::optional<core::DirectoryWatch> WatchConfigDir(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  absl::StatusOr<core::DirectoryWatch> watch = core::DirectoryWatch::Open(dir);
  if (!watch.ok()) {
    spdlog::warn("config changes are applied on SIGHUP only: {}; mount the config's directory",
                 watch.status().message());
    return std::nullopt;
  }
  spdlog::info("watching {} for config changes", dir);
  return std::move(*watch);
}

}  // namespace gpunode::plugin
