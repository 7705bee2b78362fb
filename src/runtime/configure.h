// `gpunode runtime configure`: adds the nvidia runtime handler to containerd's config, through a
// drop-in (default) or in place, backing up every file it touches and recording them so that
// `gpunode runtime revert` restores the exact original bytes.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/nvidia_handler.h"

namespace gpunode::runtime {

inline constexpr char kModeDropIn[] = "drop-in";
inline constexpr char kModeInPlace[] = "in-place";

struct ConfigureOptions {
  std::string runtime = "containerd";
  std::string config_path = "/etc/containerd/config.toml";
  std::string drop_in;  // empty: <config dir>/conf.d/99-nvidia.toml
  bool in_place = false;
  HandlerRequest handler;
  bool dry_run = false;
};

struct FileChange {
  std::string path;
  std::string content;   // what gpunode wants the file to hold
  bool exists = false;   // the file exists now
  bool changed = false;  // its bytes differ from `content`
};

struct ConfigureResult {
  std::vector<FileChange> files;  // in write order
  std::vector<std::string> warnings;
  bool wrote = false;
};

// The option checks configure and revert share: only containerd, and not both --drop-in and
// --in-place. InvalidArgument naming the flag and the fix.
absl::Status ValidateOptions(const ConfigureOptions& options, bool drop_in_given);

// Computes the files, and unless dry_run writes those that change. A rerun with the same options
// changes nothing. Refusals (bad input, files changed behind gpunode's back) are InvalidArgument or
// FailedPrecondition and leave every file as it was.
absl::StatusOr<ConfigureResult> Configure(const ConfigureOptions& options);

}  // namespace gpunode::runtime
