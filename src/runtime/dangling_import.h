// A main config that still imports gpunode's drop-in after the drop-in itself is gone (deleted by
// hand, or by an older revert). containerd reads every plain import and refuses to start when one
// is missing, so revert takes such an import out again.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gpunode::runtime {

struct DanglingImport {
  std::string config_path;
  std::string drop_in;        // the missing file, as the config names it after normalizing
  std::string repaired_text;  // the config without that import, every other byte as it was
};

// Looks at `config_text` (the main config's bytes, `config_path` names it and anchors relative
// imports) for a plain import that resolves to `drop_in`. nullopt when there is none, when
// `drop_in_exists`, or when the text is not a config gpunode can read (revert is not the place to
// judge it; configure reports it). A glob import is never dangling: containerd skips no-matches.
absl::StatusOr<std::optional<DanglingImport>> FindDanglingImport(const std::string& config_path,
                                                                 const std::string& config_text,
                                                                 const std::string& drop_in,
                                                                 bool drop_in_exists);

}  // namespace gpunode::runtime
