// How a node daemon follows its configuration after the start: reading it again (the flags and
// environment of its start, the file or the config the node label selects as it is now), the
// directory to watch, the node label to follow, and whom to tell about a change it did not apply.
// The device plugin and the MPS control daemon follow the same sources through it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/directory_watch.h"
#include "plugin_config/sources.h"

namespace gpunode::plugin {

using ConfigLoader = std::function<absl::StatusOr<plugin_config::ResolvedConfig>()>;

struct ConfigFollowing {
  // Where the config file lives (the config directory, or the file's directory): a change there
  // is applied without a restart when the config it selects now differs. Empty: not watched.
  std::string watch_dir;
  // Readable when the node label that selects the config changed (kube::NodeLabelWatch's fd).
  // -1: no label is followed.
  int label_fd = -1;
  std::function<void()> clear_label;  // drains label_fd
  // Told why a change was not applied (the label names no config, the file does not parse), for
  // a node event; may be empty.
  std::function<void(const std::string&)> refused;
};

// The inotify watch on `dir`, logged "watching DIR for config changes" once it is open (tests
// wait for that line: from then on no change is missed). Nothing when `dir` is empty, or, with a
// warning that changes then wait for a SIGHUP, when it cannot be watched.
std::optional<core::DirectoryWatch> WatchConfigDir(const std::string& dir);

}  // namespace gpunode::plugin
