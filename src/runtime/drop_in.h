// The drop-in file gpunode writes beside the main config (conf.d/99-nvidia.toml by default). It
// holds a copy of the whole CRI plugin table plus the nvidia handler, because containerd before 2.1
// replaces a plugin's table with each imported file that sets it instead of merging the two.
#pragma once

#include <string>

#include "toml++/toml.h"

namespace gpunode::runtime {

// <directory of config>/conf.d/99-nvidia.toml, absolute.
std::string DefaultDropInPath(const std::string& config_path);

// The drop-in's text: a header comment naming `main_path`, `version` (2 and later; a v1 file has
// none, like the main file it belongs to) and plugins.<plugin_id> = `cri`.
std::string RenderDropIn(int version, const std::string& plugin_id, const toml::table& cri,
                         const std::string& main_path);

}  // namespace gpunode::runtime
